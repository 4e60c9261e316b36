"""History messages that start with the outcome, and the short reason a console line gives for a failure.

Every view of a history message that cuts it short (the CLI's history table, the dashboard's "Last
outcome", a history row) shows its start, so every sender writes the outcome first and where it went
after it, in one shape (:func:`outcome_message`)::

    <outcome>[: <detail>] | <Type> Action[ - <where>][ | <more>]

    500 Internal Server Error: boom: database unavailable | Http Action - Response from host 'api.example'
        | Response Headers: Content-Type: text/plain          (one line)
    Queue not found (QueueNotFound): The specified queue does not exist. | StorageQueue Action - queue 'q'
        of storage account 'a'                                  (one line)
    Request timed out after 60 s: the call's deadline ran out while ... | Http Action - Request to host 'x'

The text a target chose (an answer's body and headers, an SDK error's message) goes through
:func:`shown` first: every character a terminal acts on rather than shows (escape sequences, C1
controls, bidirectional overrides, carriage returns) is written as a visible escape (``\\x1b``), the rule
of the command line's output (:func:`scheduler_core.cli.output.visible`), so a history message never
reaches a console raw; line feeds and tabs of a body are kept (a multi-line JSON error stays readable).

:func:`reason` is the end of a failed attempt's log line: the outcome and its detail (the part of the
history message before `` | <Type> Action``) on one line, at most :data:`MAX_REASON` characters, escaped,
credentials masked.
"""

from __future__ import annotations

import re

from scheduler_core.actions.redact import redact

__all__ = ["CUT", "MAX_REASON", "SEPARATOR", "failure_reason", "outcome_message", "reason", "shown"]

#: Between the outcome (with its detail), the action and where it went, and what more there is.
SEPARATOR = " | "
#: At most this many characters of a history message end a failed attempt's log line.
MAX_REASON = 200
#: What ends a text cut short.
CUT = "…"


def _hidden(code: int) -> bool:
    """Whether a terminal may act on the character ``code`` rather than show it (the rule of
    :func:`scheduler_core.cli.output.visible`, which this module must not import: the deployed app does not
    load the command line; ``tests/actions/test_outcome_first.py`` checks that the two agree)."""
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or code in (0x061C, 0x200E, 0x200F)
        or 0x202A <= code <= 0x202E
        or 0x2066 <= code <= 0x2069
        or code in (0x2028, 0x2029)
    )


_ESCAPES = {
    code: {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}.get(code, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    for code in range(0x2070)
    if _hidden(code)
}
#: Line feeds and tabs stay in a history message (a body's lines); a log line escapes them too.
_IN_HISTORY = {code: text for code, text in _ESCAPES.items() if code not in (0x09, 0x0A)}


def shown(text: str, *, one_line: bool = False) -> str:
    """``text`` with every character a terminal acts on written as a visible escape (``\\x1b``, ``\\u202e``,
    ``\\r``); a CR LF line end is a line feed. Line feeds and tabs are kept unless ``one_line``. Idempotent:
    ``shown(shown(t)) == shown(t)``."""
    text = text.replace("\r\n", "\n")
    return text.translate(_ESCAPES if one_line else _IN_HISTORY)


def outcome_message(action_type: str, outcome: str, detail: str = "", where: str = "", more: str = "") -> str:
    """A history message, outcome first: ``<outcome>[: <detail>] | <action_type> Action[ - <where>][ | <more>]``.
    The caller passes text a target chose through :func:`shown` and masks its secrets."""
    head = f"{outcome}: {detail}" if detail else outcome
    action = f"{action_type} Action - {where}" if where else f"{action_type} Action"
    return SEPARATOR.join(part for part in (head, action, more) if part)


#: Where the outcome of a history message ends: `` | <Type> Action`` (what follows, the log line says itself).
_ACTION_PART = re.compile(r" \| [A-Za-z]+ Action\b")


def reason(message: str, limit: int = MAX_REASON) -> str:
    """The short reason of a failed attempt for its log line: the outcome and its detail, which
    :func:`outcome_message` puts first (the part before `` | <Type> Action``; the log line names the action
    and its target itself; a message of another shape whole), on one line, every character a terminal acts
    on escaped, anything that looks like a SAS signature or token masked, and at most ``limit`` characters
    (cut with :data:`CUT`)."""
    found = _ACTION_PART.search(message)
    head = message[: found.start()] if found else message
    line = shown(redact(head), one_line=True).strip()
    return line if len(line) <= limit else line[: limit - len(CUT)].rstrip() + CUT


#: The text of an OS error (``[Errno 111] Connection refused``) or of an ``ssl`` error's reason.
_OS_TEXT = re.compile(r"\[(?:Errno|SSL: ?)[^\]]*\]\s*([^()'\"]{1,120})")


def failure_reason(error: BaseException) -> str:
    """Why a call failed, safe for a history message: the innermost OS or TLS error's text (``Connection
    refused``, ``CERTIFICATE_VERIFY_FAILED ...``) and the exception's class, never its message (``requests``
    quotes the URL, path and query included)."""
    seen: set[int] = set()
    found: list[str] = []
    pending: list[object] = [error]
    while pending and len(seen) < 32:
        item = pending.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, OSError) and item.strerror and not found:
            found.append(item.strerror)
        pending.extend([item.__cause__, item.__context__, getattr(item, "reason", None), *item.args])
    if not found:
        match = _OS_TEXT.search(str(error))
        if match:
            found.append(match.group(1).strip().rstrip(":"))
    text = shown(found[0], one_line=True) if found else ""
    return f"{text} ({type(error).__name__})" if text else type(error).__name__
