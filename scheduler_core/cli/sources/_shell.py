"""Shell commands that are HTTP requests: ``curl`` and ``wget`` to an http(s) URL, as crontab lines and
container commands run them, read into the request they send.

A command is split into words as a POSIX shell does (quotes, backslashes, comments, operators); a command
the service cannot stand in for is refused with the reason (:class:`NotCarried`): another program, more
than one command (``;``, ``&&``, ``|``, ``&``), input redirection, shell expansion (``$VAR``, ``$(...)``,
backquotes: their values are not known here), an option this reader does not know, a body read from a file,
no or several URLs, a URL curl would expand into several (``[1-3]``, ``{a,b}``). Output redirection is
dropped (the service keeps each response in the job's history), with a note unless it went to /dev/null.

curl: ``-X``, ``-H``, ``-d``/``--data``/``--data-ascii``/``--data-binary``/``--data-raw``/``--data-urlencode``
(joined with ``&``, sent with ``Content-Type: application/x-www-form-urlencoded`` unless a header says
otherwise, POST unless ``-X`` says otherwise), ``--json``, ``-G``, ``-I``, ``-u user:password`` (Basic
authentication), ``-A``, ``-e``, ``-b name=value``, ``--oauth2-bearer``, ``--url``, ``--retry N``; output
and progress options are dropped; ``-k``, ``-m``, ``--connect-timeout``, ``--retry-delay``,
``--retry-max-time`` and ``-x`` are noted as not carried. wget: ``--method``, ``--header``,
``--post-data``, ``--body-data``, ``--user``/``--password`` (Basic), ``-U``, ``--referer``, ``-t``/``--tries``;
``-O``, ``-o``, ``-q`` and the like are dropped; ``--no-check-certificate`` and the timeouts are noted.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote

from scheduler_core.cli.sources._model import http_action


class NotCarried(Exception):
    """Why a command cannot be carried as an HTTP request (the message says it)."""


@dataclass
class HttpCall:
    """The request a command sends, and what of the command the request does not carry (``notes``:
    (what, why) pairs)."""

    uri: str
    method: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    username: str | None = None
    password: str | None = None
    #: The tool's own retries (curl ``--retry N``, wget ``--tries N``: N - 1); None: the tool never retries.
    retries: int | None = None
    notes: list[tuple[str, str]] = field(default_factory=list)

    def action(self, retry_policy: dict[str, Any] | None) -> dict[str, Any]:
        """The job's action: this request, with ``retry_policy``, and Basic authentication when it had a user."""
        action = http_action(self.uri, self.method, self.headers, self.body, retry_policy)
        if self.username is not None:
            action["request"]["authentication"] = {
                "type": "Basic",
                "username": self.username,
                "password": self.password or "",
            }
        return action


# ------------------------------------------------------------------------------------------- words

_OPERATORS = ("&>>", ">>", "&&", "||", ">&", "&>", "<<", ">|", ";;", ">", "<", "&", "|", ";", "(", ")")
_REDIRECTIONS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_EXPANSION = "uses shell expansion ($VAR, $(...) or backquotes): its value is not known here"


@dataclass(frozen=True)
class Word:
    text: str
    operator: bool = False


def _double_quoted(command: str, start: int, out: list[str]) -> int:
    """Read a double-quoted string from ``start`` (after the quote) into ``out``; the index after it."""
    i = start
    while i < len(command):
        c = command[i]
        if c == '"':
            return i + 1
        if c == "\\" and i + 1 < len(command) and command[i + 1] in '$`"\\\n':
            if command[i + 1] != "\n":
                out.append(command[i + 1])
            i += 2
            continue
        if c in "$`":
            raise NotCarried(_EXPANSION)
        out.append(c)
        i += 1
    raise NotCarried("has an unterminated double quote")


def shell_words(command: str) -> list[Word]:
    """The words and operators of ``command`` as a POSIX shell splits them (a comment dropped); an operator
    written right after a number (``2>``) carries it."""
    words: list[Word] = []
    current: list[str] = []
    in_word = False
    i = 0
    while i < len(command):
        c = command[i]
        if c in " \t\n" or (c == "#" and not in_word):
            if in_word:
                words.append(Word("".join(current)))
                current, in_word = [], False
            if c == "#":
                break
            i += 1
        elif c in ";&|<>()":
            operator = next(op for op in _OPERATORS if command.startswith(op, i))
            fd = "".join(current) if in_word and "".join(current).isdigit() else ""
            if in_word and not fd:
                words.append(Word("".join(current)))
            current, in_word = [], False
            words.append(Word(fd + operator, operator=True))
            i += len(operator)
        elif c == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise NotCarried("has an unterminated single quote")
            current.append(command[i + 1 : end])
            in_word, i = True, end + 1
        elif c == '"':
            in_word, i = True, _double_quoted(command, i + 1, current)
        elif c == "\\":
            if command[i + 1 : i + 2] != "\n":
                current.append(command[i + 1 : i + 2])
                in_word = True
            i += 2
        elif c in "$`":
            raise NotCarried(_EXPANSION)
        else:
            current.append(c)
            in_word, i = True, i + 1
    if in_word:
        words.append(Word("".join(current)))
    return words


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def command_argv(command: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The arguments of the one simple command ``command`` is, and notes of its output redirections (one
    to /dev/null is not noted); :class:`NotCarried` for anything else a shell would do."""
    words = shell_words(command)
    argv: list[str] = []
    notes: list[tuple[str, str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.operator:
            argv.append(word.text)
            continue
        operator = word.text.lstrip("0123456789")
        if operator not in _REDIRECTIONS:
            if operator in ("<", "<<"):
                raise NotCarried(f"reads its input from a redirection ({word.text})")
            raise NotCarried(
                f"is more than one command (shell operator {word.text!r}); only one curl or wget is carried"
            )
        if index >= len(words) or words[index].operator:
            raise NotCarried(f"has a redirection ({word.text}) without a target")
        target = words[index].text
        index += 1
        if target != "/dev/null" and not (operator == ">&" and target.isdigit()):
            notes.append(
                (f"{word.text} {target}", "the output is not written to a file; the job's history has each response")
            )
    if argv and _ASSIGNMENT.match(argv[0]):
        raise NotCarried(f"sets the environment variable {argv[0].split('=', 1)[0]} for the command")
    if not argv:
        raise NotCarried("is no command")
    return argv, notes


def http_call(command: str | list[str]) -> HttpCall:
    """The request ``command`` (a shell command line, or the argument list of an exec) sends, when it is a
    curl or wget of an http(s) URL; :class:`NotCarried` otherwise."""
    argv, notes = command_argv(command) if isinstance(command, str) else (list(command), [])
    if not argv:
        raise NotCarried("is no command")
    program = posixpath.basename(argv[0])
    if program == "curl":
        call = _Curl(argv[1:]).parse()
    elif program == "wget":
        call = _Wget(argv[1:]).parse()
    else:
        raise NotCarried(f"runs {program!r}, not curl or wget: this service makes HTTP requests, it runs no program")
    call.notes[:0] = notes
    return call


# --------------------------------------------------------------------------------------------- curl


def _header(text: str, headers: dict[str, str]) -> None:
    """curl's ``-H``/wget's ``--header``: ``Name: value`` sets, ``Name:`` removes (sends none), ``Name;`` is
    an empty value."""
    if text.endswith(";") and ":" not in text:
        headers[text[:-1].strip()] = ""
        return
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise NotCarried(f"has a header without a name and a colon: {text!r}")
    if value.strip():
        headers[name.strip()] = value.strip()
    else:
        headers.pop(name.strip(), None)


def _has(headers: dict[str, str], name: str) -> bool:
    return any(key.lower() == name.lower() for key in headers)


def _count(option: str, value: str) -> int:
    if not value.isascii() or not value.isdigit():
        raise NotCarried(f"has {option} {value!r}, not a number")
    return int(value)


class _Tool:
    """What curl and wget share: the request being read, its URLs, and the notes; its short options (a
    letter taking a value, a letter standing for a flag) by their long names."""

    program = ""
    short_values: ClassVar[Mapping[str, str]] = {}
    short_flags: ClassVar[Mapping[str, str]] = {}

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.method: str | None = None
        self.headers: dict[str, str] = {}
        self.data: list[str] = []
        self.urls: list[str] = []
        self.notes: list[tuple[str, str]] = []
        self.user: str | None = None
        self.password: str | None = None
        self.retries: int | None = None

    def noted(self, what: str, why: str) -> None:
        self.notes.append((what, why))

    def option(self, name: str, value: str | None) -> None:
        raise NotImplementedError

    def short(self, cluster: str, args: Any) -> None:
        """A cluster of short options (``-fsS``, ``-XPOST``): the first that takes a value takes the rest."""
        values, flags = self.short_values, self.short_flags
        for position, letter in enumerate(cluster):
            if letter in values:
                rest = cluster[position + 1 :]
                self.option(values[letter], rest if rest else next(args, None))
                return
            if letter not in flags:
                raise NotCarried(f"{self.program} option -{letter} is not understood here")
            self.option(flags[letter], None)

    def url(self) -> str:
        if not self.urls:
            raise NotCarried(f"{self.program} names no URL")
        if len(self.urls) > 1:
            raise NotCarried(f"{self.program} requests {len(self.urls)} URLs; a job makes one request")
        uri = self.urls[0]
        if not re.match(r"https?://", uri, re.IGNORECASE):
            raise NotCarried(f"{self.program}'s URL {uri!r} is not an http or https URL")
        return uri

    def form_type(self) -> None:
        """The content type curl and wget send a body with unless told otherwise."""
        if not _has(self.headers, "Content-Type"):
            self.headers["Content-Type"] = "application/x-www-form-urlencoded"


_TIMEOUT = "no per-job request timeout here"
_VERIFY = "certificates are always verified here"
_CURL_SHORT_VALUES = {
    "X": "--request",
    "H": "--header",
    "d": "--data",
    "u": "--user",
    "A": "--user-agent",
    "e": "--referer",
    "m": "--max-time",
    "o": "--output",
    "w": "--write-out",
    "b": "--cookie",
    "x": "--proxy",
    "F": "--form",
    "T": "--upload-file",
    "K": "--config",
}
_CURL_SHORT_FLAGS = {
    "f": "--fail",
    "s": "--silent",
    "S": "--show-error",
    "L": "--location",
    "k": "--insecure",
    "v": "--verbose",
    "q": "--disable",
    "O": "--remote-name",
    "i": "--include",
    "I": "--head",
    "G": "--get",
    "g": "--globoff",
    "4": "--ipv4",
    "6": "--ipv6",
    "N": "--no-buffer",
    "#": "--progress-bar",
}
_CURL_DROPPED = frozenset(
    {
        "--fail",
        "--fail-with-body",
        "--silent",
        "--show-error",
        "--location",
        "--verbose",
        "--disable",
        "--remote-name",
        "--include",
        "--ipv4",
        "--ipv6",
        "--no-buffer",
        "--progress-bar",
        "--no-progress-meter",
        "--compressed",
        "--http1.1",
        "--http2",
        "--retry-connrefused",
        "--retry-all-errors",
        "--output",
        "--write-out",
    }
)


class _Curl(_Tool):
    program = "curl"
    short_values = _CURL_SHORT_VALUES
    short_flags = _CURL_SHORT_FLAGS

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self.get = self.head = self.json = self.globoff = False

    def parse(self) -> HttpCall:
        args = iter(self.args)
        for arg in args:
            if arg.startswith("--") and len(arg) > 2:
                takes = arg in _CURL_VALUE_OPTIONS
                self.option(arg, next(args, None) if takes else None)
            elif arg.startswith("-") and len(arg) > 1:
                self.short(arg[1:], args)
            else:
                self.urls.append(arg)
        return self.request()

    def option(self, name: str, value: str | None) -> None:
        if name in _CURL_VALUE_OPTIONS and value is None:
            raise NotCarried(f"curl option {name} has no value")
        handler = _CURL_OPTIONS.get(name)
        if handler is not None:
            handler(self, value or "")
        elif name not in _CURL_DROPPED:
            raise NotCarried(f"curl option {name} is not understood here")
        elif name in ("--output", "--write-out") and value not in (None, "/dev/null", "-"):
            self.noted(f"{name} {value}", "the output is not written to a file; the job's history has each response")

    def data_item(self, value: str, *, raw: bool = False) -> None:
        if value.startswith("@") and not raw:
            raise NotCarried(f"curl reads its body from {value[1:] or 'a file'!r} (-d @file), which is not here")
        self.data.append(value)

    def urlencoded(self, value: str) -> None:
        name, sep, content = value.partition("=")
        if content.startswith("@") or (not sep and value.startswith("@")):
            raise NotCarried("curl reads its body from a file (--data-urlencode @file), which is not here")
        self.data.append(f"{name}={quote(content, safe='')}" if sep else quote(value, safe=""))

    def user_option(self, value: str) -> None:
        user, sep, password = value.partition(":")
        if not sep:
            raise NotCarried("curl -u names a user without a password (curl would ask for it)")
        self.user, self.password = user, password

    def request(self) -> HttpCall:
        uri = self.url()
        if not self.globoff and any(c in uri for c in "[]{}"):
            raise NotCarried("curl expands [...] and {...} in its URL into several requests")
        body = "&".join(self.data) if self.data else None
        if body is not None and self.get:
            uri, body = uri + ("&" if "?" in uri else "?") + body, None
        method = self.method or ("POST" if body is not None else "HEAD" if self.head else "GET")
        if body is not None:
            if self.json:
                self.headers.setdefault("Accept", "application/json")
                if not _has(self.headers, "Content-Type"):
                    self.headers["Content-Type"] = "application/json"
            self.form_type()
        call = HttpCall(uri, method, self.headers, body, self.user, self.password, self.retries, self.notes)
        return call


def _set_method(tool: _Tool, value: str) -> None:
    tool.method = value.upper()


def _set_json(tool: _Curl, value: str) -> None:
    tool.json = True
    tool.data_item(value)


def _set_flag(name: str) -> Callable[[_Curl, str], None]:
    def handler(tool: _Curl, _value: str) -> None:
        setattr(tool, name, True)

    return handler


def _cookie(tool: _Tool, value: str) -> None:
    if "=" not in value:
        raise NotCarried(f"curl reads cookies from the file {value!r}, which is not here")
    tool.headers["Cookie"] = value


_CURL_OPTIONS: dict[str, Callable[[Any, str], None]] = {
    "--request": _set_method,
    "--header": lambda tool, value: _header(value, tool.headers),
    "--data": lambda tool, value: tool.data_item(value),
    "--data-ascii": lambda tool, value: tool.data_item(value),
    "--data-binary": lambda tool, value: tool.data_item(value),
    "--data-raw": lambda tool, value: tool.data_item(value, raw=True),
    "--data-urlencode": lambda tool, value: tool.urlencoded(value),
    "--json": _set_json,
    "--user": lambda tool, value: tool.user_option(value),
    "--user-agent": lambda tool, value: tool.headers.__setitem__("User-Agent", value),
    "--referer": lambda tool, value: tool.headers.__setitem__("Referer", value),
    "--oauth2-bearer": lambda tool, value: tool.headers.__setitem__("Authorization", f"Bearer {value}"),
    "--cookie": _cookie,
    "--url": lambda tool, value: tool.urls.append(value),
    "--retry": lambda tool, value: setattr(tool, "retries", _count("--retry", value)),
    "--get": _set_flag("get"),
    "--head": _set_flag("head"),
    "--globoff": _set_flag("globoff"),
    "--insecure": lambda tool, _value: tool.noted("--insecure (-k)", _VERIFY),
    "--max-time": lambda tool, value: tool.noted(f"--max-time {value}", _TIMEOUT),
    "--connect-timeout": lambda tool, value: tool.noted(f"--connect-timeout {value}", _TIMEOUT),
    "--retry-delay": lambda tool, value: tool.noted(f"--retry-delay {value}", "the retry policy sets the delays"),
    "--retry-max-time": lambda tool, value: tool.noted(f"--retry-max-time {value}", "the retry policy sets the delays"),
    "--proxy": lambda tool, value: tool.noted(f"--proxy {value}", "the service connects directly"),
}
_CURL_VALUE_OPTIONS = frozenset(
    {name for name in _CURL_OPTIONS if name not in ("--get", "--head", "--globoff", "--insecure")}
    | {"--output", "--write-out", "--form", "--upload-file", "--config"}
)


# --------------------------------------------------------------------------------------------- wget

_WGET_VALUES = frozenset(
    {
        "--output-document",
        "--output-file",
        "--append-output",
        "--header",
        "--method",
        "--post-data",
        "--body-data",
        "--post-file",
        "--body-file",
        "--user",
        "--http-user",
        "--password",
        "--http-password",
        "--user-agent",
        "--referer",
        "--timeout",
        "--read-timeout",
        "--connect-timeout",
        "--dns-timeout",
        "--tries",
        "--waitretry",
    }
)
_WGET_SHORT = {"O": "--output-document", "o": "--output-file", "a": "--append-output", "U": "--user-agent"}
_WGET_SHORT |= {"T": "--timeout", "t": "--tries"}
_WGET_FLAGS = {"q": "--quiet", "v": "--verbose", "S": "--server-response", "4": "--inet4-only", "6": "--inet6-only"}
_WGET_DROPPED = frozenset(
    {
        "--quiet",
        "--verbose",
        "--no-verbose",
        "--server-response",
        "--inet4-only",
        "--inet6-only",
        "--no-clobber",
        "--no-cache",
        "--no-cookies",
        "--delete-after",
        "--content-on-error",
        "--auth-no-challenge",
        "--output-document",
        "--output-file",
        "--append-output",
    }
)


class _Wget(_Tool):
    program = "wget"
    short_values = _WGET_SHORT
    short_flags = _WGET_FLAGS

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self.spider = False

    def parse(self) -> HttpCall:
        args = iter(self.args)
        for arg in args:
            if arg in ("-nv", "-nc"):
                self.option("--no-verbose" if arg == "-nv" else "--no-clobber", None)
            elif arg.startswith("--") and len(arg) > 2:
                name, sep, value = arg.partition("=")
                self.option(name, value if sep else next(args, None) if name in _WGET_VALUES else None)
            elif arg.startswith("-") and len(arg) > 1:
                self.short(arg[1:], args)
            else:
                self.urls.append(arg)
        return self.request()

    def option(self, name: str, value: str | None) -> None:
        if name in _WGET_VALUES and value is None:
            raise NotCarried(f"wget option {name} has no value")
        text = value or ""
        if name == "--method":
            self.method = text.upper()
        elif name == "--header":
            _header(text, self.headers)
        elif name in ("--post-data", "--body-data"):
            self.data = [text]
            self.method = self.method or "POST"
        elif name in ("--post-file", "--body-file"):
            raise NotCarried(f"wget reads its body from the file {text!r}, which is not here")
        elif name in ("--user", "--http-user"):
            self.user = text
        elif name in ("--password", "--http-password"):
            self.password = text
        elif name == "--user-agent":
            self.headers["User-Agent"] = text
        elif name == "--referer":
            self.headers["Referer"] = text
        elif name == "--tries":
            tries = _count(name, text)
            self.retries = 20 if tries == 0 else tries - 1
        elif name in ("--timeout", "--read-timeout", "--connect-timeout", "--dns-timeout"):
            self.noted(f"{name}={text}", _TIMEOUT)
        elif name == "--waitretry":
            self.noted(f"{name}={text}", "the retry policy sets the delays")
        elif name == "--no-check-certificate":
            self.noted(name, _VERIFY)
        elif name == "--spider":
            self.spider = True
        elif name not in _WGET_DROPPED:
            raise NotCarried(f"wget option {name} is not understood here")
        elif name in ("--output-file", "--append-output") or (
            name == "--output-document" and text not in ("-", "/dev/null")
        ):
            self.noted(f"{name}={text}", "the output is not written to a file; the job's history has each response")

    def request(self) -> HttpCall:
        uri = self.url()
        body = self.data[0] if self.data else None
        if body is not None:
            self.form_type()
        method = self.method or ("HEAD" if self.spider else "GET")
        if self.password is not None and self.user is None:
            raise NotCarried("wget has a --password without a --user")
        return HttpCall(uri, method, self.headers, body, self.user, self.password, self.retries, self.notes)
