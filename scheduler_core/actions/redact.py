"""Keep secrets out of history messages and logs: SAS signatures, tokens and any value named a secret."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: Query parameters and token fields whose values are credentials (``sig=...`` of a SAS, a bearer token).
_SECRET_PARAMS = re.compile(r"(?i)\b(sig|signature|access_token|client_secret|sharedaccesskey)=([^&;\s'\"]+)")
_BEARER = re.compile(r"(?i)\b(bearer|sharedaccesssignature)\s+[^\s'\"]+")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret (and anything that looks like a SAS signature or token) masked."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
            stripped = secret.lstrip("?")
            if stripped != secret and len(stripped) >= 4:
                text = text.replace(stripped, "***")
    text = _SECRET_PARAMS.sub(lambda m: f"{m.group(1)}=***", text)
    return _BEARER.sub(lambda m: f"{m.group(1)} ***", text)


def first_line(text: str, limit: int = 300) -> str:
    """The first line of an SDK error message, at most ``limit`` characters (they carry whole responses)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
