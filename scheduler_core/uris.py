"""Target URIs of HTTP actions: the one rule for what a job may name, and the credentials its query carries.

**The rule** (:func:`parse_target`). A target URI is ``http`` or ``https``, then ``//``, then an authority that
is exactly ``host[:port]`` in RFC 3986's grammar with the host a DNS name (letters, digits, ``-`` and ``_``
in dot-separated labels, ASCII), a dotted IPv4 address or a bracketed IPv6 address; then a path, query and
fragment. Refused, each with the rule it breaks: a backslash anywhere, white space or a control character,
user information (``user:pass@``: every spelling of it, since an ``@`` in the authority is refused),
percent-encoding or non-ASCII text in the authority (an internationalized name is written in its ``xn--``
form), an IPv6 zone, an empty or out-of-range port. Within that grammar every URL parser agrees on the
host: ``urllib.parse``, ``requests`` and ``urllib3`` (which connect), and browsers. Outside it they do not
(``https://attacker.example\\@management.azure.com/`` is ``management.azure.com`` to ``urlsplit`` and
``attacker.example`` to ``urllib3``), and a decision made with one parser while another connects is the
parser differential that sent the app's tokens and a job's secrets to a host nobody checked. The sender
still decides on the host it actually connects to (``scheduler_core.actions.outbound``); this rule keeps
the host a client sees, the host stored secrets are bound to (:func:`origin`) and that host the same.

**Credentials in the query** (:data:`CREDENTIAL_PARAMETERS`). ``sig`` (a Storage SAS or a Logic Apps trigger
URL), ``code`` (a Functions key) and the usual key and token parameters are full credentials: they are
write-only like a ``sasToken``. :func:`hide_credentials` replaces each such value with :data:`HIDDEN`
for every answer, and :func:`restore_credentials` puts the stored URI back when a client writes exactly the
hidden form back (the GET, modify, PUT of Azure Scheduler's SDK); any other change to a URI holding
:data:`HIDDEN` must write the credentials again.

Pure: no HTTP client, no I/O."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = [
    "CREDENTIAL_PARAMETERS",
    "HIDDEN",
    "Origin",
    "TargetUri",
    "UriProblem",
    "hidden_credentials",
    "hide_credentials",
    "origin",
    "parse_target",
    "restore_credentials",
]

#: Query parameters whose values are credentials (compared without regard to case, percent-decoded).
CREDENTIAL_PARAMETERS = frozenset(
    {
        "sig",  # Storage and Service Bus SAS, Logic Apps and Event Grid trigger URLs
        "signature",
        "code",  # Azure Functions keys
        "key",
        "apikey",
        "api-key",
        "api_key",
        "x-api-key",
        "subscription-key",  # API Management
        "access_token",
        "token",
        "client_secret",
        "secret",
        "password",
        "sharedaccesssignature",
        "x-amz-signature",  # S3 and other AWS presigned URLs
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",  # Google Cloud Storage signed URLs
        "access-token",
        "accesstoken",
        "auth",
        "auth_token",
        "api_token",
        "apitoken",
    }
)
#: What a hidden credential value is answered as (and, written back to the same origin, means "keep it").
HIDDEN = "***"
DEFAULT_PORTS = {"http": 80, "https": 443}

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_PORT = re.compile(r"[0-9]{1,5}")
_WHITE_OR_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")

#: (scheme, host, port): what a stored secret is bound to.
Origin = tuple[str, str, int]


class UriProblem(ValueError):
    """The URI breaks the rule; the message states the rule it breaks (never the URI)."""


@dataclass(frozen=True)
class TargetUri:
    """A target URI as the rule reads it: lower-case ``scheme``, ``host`` (lower-case, without brackets or a
    trailing dot), ``port`` (None when not written) and the rest (path, query and fragment) as written."""

    scheme: str
    host: str
    port: int | None
    rest: str

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.scheme]

    @property
    def origin(self) -> Origin:
        return self.scheme, self.host, self.effective_port


def _host(text: str) -> str:
    if not text:
        raise UriProblem("must name a host after // (an absolute http or https URI)")
    if "%" in text:
        raise UriProblem("must not percent-encode its host (write the host name as it is)")
    if not text.isascii():
        raise UriProblem("must have an ASCII host (write an internationalized domain name in its xn-- form)")
    if text.startswith("["):
        if not text.endswith("]"):
            raise UriProblem("must close a bracketed IPv6 host with ]")
        try:
            address = ipaddress.IPv6Address(text[1:-1])
        except ValueError:
            raise UriProblem("must have a valid IPv6 address between [ and ] (no zone, no IPvFuture)") from None
        return str(address)
    name = text[:-1] if text.endswith(".") else text
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise UriProblem(
            "must have a host that is a DNS name (letters, digits, '-' and '_' in labels of 1 to 63 characters, "
            "separated by dots), an IPv4 address or an IPv6 address in brackets"
        )
    return name.lower()


def parse_target(uri: str) -> TargetUri:
    """The URI read by the rule (see the module). Raises :class:`UriProblem` naming the rule broken."""
    if "\\" in uri:
        raise UriProblem("must not contain a backslash (write / or percent-encode it as %5C)")
    if _WHITE_OR_CONTROL.search(uri):
        raise UriProblem("must not contain spaces or control characters (percent-encode them)")
    scheme_match = _SCHEME.match(uri)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    if scheme not in DEFAULT_PORTS or scheme_match is None:
        raise UriProblem("must be an absolute http or https URI")
    after = uri[scheme_match.end() :]
    if not after.startswith("//"):
        raise UriProblem("must be an absolute http or https URI (// and a host after the scheme)")
    after = after[2:]
    end = min((i for i in (after.find(c) for c in "/?#") if i >= 0), default=len(after))
    authority, rest = after[:end], after[end:]
    if "@{" in authority:
        raise UriProblem("must not hold a placeholder in its host or port (placeholders expand in the query only)")
    if "@" in authority:
        raise UriProblem(
            "must not carry user information ('user:password@' before the host): use the authentication "
            "property (Basic) instead"
        )
    port: int | None = None
    host_text = authority
    closing = authority.rfind("]")
    colon = authority.rfind(":")
    if colon > closing:
        host_text, port_text = authority[:colon], authority[colon + 1 :]
        if not _PORT.fullmatch(port_text) or not 0 < int(port_text) < 65536:
            raise UriProblem("must have a port, if one is written, that is a number from 1 to 65535")
        port = int(port_text)
    return TargetUri(scheme, _host(host_text), port, rest)


def origin(uri: object) -> Origin | None:
    """(scheme, host, port) of a URI that keeps the rule; None for anything else (so that no stored secret
    is ever bound to, or kept for, a URI outside the rule)."""
    if not isinstance(uri, str):
        return None
    try:
        return parse_target(uri).origin
    except UriProblem:
        return None


def _split_query(uri: str) -> tuple[str, str | None, str]:
    """(before the query, the query or None, from the fragment on)."""
    head, hash_mark, fragment = uri.partition("#")
    base, question, query = head.partition("?")
    return base, (query if question else None), hash_mark + fragment


def _credential(name: str) -> bool:
    return unquote(name).strip().lower() in CREDENTIAL_PARAMETERS


def _pairs(query: str) -> list[tuple[str, str, str, str]]:
    """(separator before it, name, "=" or "", value) of each parameter of a query, split at ``&`` and at ``;``
    (which some servers still take as a separator), so that ``a=1;sig=...`` hides its ``sig`` too."""
    pieces = re.split(r"([&;])", query)
    out = []
    for index in range(0, len(pieces), 2):
        separator = pieces[index - 1] if index else ""
        name, equals, value = pieces[index].partition("=")
        out.append((separator, name, equals, value))
    return out


def hide_credentials(uri: str) -> tuple[str, list[str]]:
    """``uri`` with the value of each credential parameter of its query replaced by :data:`HIDDEN` (an
    empty value stays empty), and the names of the parameters hidden; everything else as written."""
    base, query, fragment = _split_query(uri)
    if not query:
        return uri, []
    hidden: list[str] = []
    parts = []
    for separator, name, equals, value in _pairs(query):
        shown = value
        if equals and value and _credential(name):
            hidden.append(name)
            shown = HIDDEN
        parts.append(f"{separator}{name}{equals}{shown}")
    if not hidden:
        return uri, []
    return f"{base}?{''.join(parts)}{fragment}", hidden


def hidden_credentials(uri: object) -> list[str]:
    """The credential parameters of ``uri``'s query answered as :data:`HIDDEN` (what a reader cannot see)."""
    if not isinstance(uri, str):
        return []
    _, query, _ = _split_query(uri)
    return [name for _, name, equals, value in _pairs(query or "") if equals and value == HIDDEN and _credential(name)]


def restore_credentials(uri: str, stored: str | None) -> tuple[str, list[str]]:
    """The URI a client means by ``uri``: ``stored`` (the full URI kept for the job) when ``uri`` is exactly
    what a client was answered for it (:func:`hide_credentials`: the same URI, each credential hidden), else
    ``uri`` itself; and the hidden credential parameters of ``uri`` that were not restored (the client must
    write those again). A stored credential is never moved to another path, parameter name, spelling or
    position: only the unchanged URI gets its credentials back."""
    hidden = hidden_credentials(uri)
    if not hidden:
        return uri, []
    if stored is not None and hide_credentials(stored)[0] == uri:
        return stored, []
    return uri, hidden
