"""An entity group transaction on the wire: the ``multipart/mixed`` body of a ``$batch`` request (one
changeset of up to 100 operations on one partition) and the parts of its answer."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from scheduler_core.adapters.azure.rest._http import Answer

_BLANK = re.compile(rb"\r?\n\r?\n")
_STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ?([^\r\n]*)")


@dataclass(frozen=True)
class Operation:
    """One request of a changeset: ``method``, its full URL, its headers and JSON body."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None


def batch_body(operations: list[Operation]) -> tuple[str, bytes]:
    """The ``Content-Type`` and body of a ``$batch`` request holding ``operations`` in one changeset."""
    batch, changeset = f"batch_{uuid.uuid4()}", f"changeset_{uuid.uuid4()}"
    lines = [f"--{batch}", f"Content-Type: multipart/mixed; boundary={changeset}", ""]
    out = ["\r\n".join(lines).encode() + b"\r\n"]
    for operation in operations:
        head = [
            f"--{changeset}",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            "",
            f"{operation.method} {operation.url} HTTP/1.1",
            *(f"{name}: {value}" for name, value in operation.headers.items()),
            "",
            "",
        ]
        out.append("\r\n".join(head).encode() + (operation.body or b"") + b"\r\n")
    out.append(f"--{changeset}--\r\n--{batch}--\r\n".encode())
    return f"multipart/mixed; boundary={batch}", b"".join(out)


def batch_answers(content_type: str, body: bytes) -> list[Answer]:
    """The operations' answers in a ``$batch`` answer (an answer that is not multipart: none)."""
    answers: list[Answer] = []
    for headers, content in _parts(content_type, body):
        kind = headers.get("content-type", "")
        if kind.startswith("multipart/mixed"):
            answers.extend(batch_answers(kind, content))
        elif kind.startswith("application/http"):
            answers.append(_http(content))
    return answers


def _boundary(content_type: str) -> bytes | None:
    match = re.search(r"boundary=\"?([^\";]+)\"?", content_type)
    return match.group(1).encode() if match else None


def _parts(content_type: str, body: bytes) -> list[tuple[dict[str, str], bytes]]:
    boundary = _boundary(content_type)
    if boundary is None:
        return []
    parts = []
    for chunk in body.split(b"--" + boundary)[1:]:
        if chunk.startswith(b"--"):
            break
        head, content = _split(chunk)
        parts.append((_headers(head), content))
    return parts


def _split(chunk: bytes) -> tuple[bytes, bytes]:
    """A part's head and what follows its blank line."""
    pieces = _BLANK.split(chunk.lstrip(b"\r\n"), maxsplit=1)
    return pieces[0], (pieces[1] if len(pieces) > 1 else b"")


def _headers(block: bytes) -> dict[str, str]:
    headers = {}
    for line in block.decode("latin-1").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers


def _http(content: bytes) -> Answer:
    head, body = _split(content)
    status_line, _, rest = head.partition(b"\n")
    match = _STATUS.match(status_line.strip())
    if match is None:
        return Answer(500, "unreadable batch answer", {}, content)
    return Answer(int(match.group(1)), match.group(2).decode("latin-1"), _headers(rest), body.rstrip(b"\r\n"))
