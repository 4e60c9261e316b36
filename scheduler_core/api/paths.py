"""ARM resource paths of Microsoft.Scheduler, parsed case-insensitively (ARM clients send mixed case)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from scheduler_core.errors import NotFoundError

_NAME = r"(?P<{}>[^/]+)"
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("subscription_collections", r"subscriptions/{sub}/providers/microsoft\.scheduler/jobcollections"),
    (
        "group_collections",
        r"subscriptions/{sub}/resourcegroups/{rg}/providers/microsoft\.scheduler/jobcollections",
    ),
    ("collection", r"{jc_path}"),
    ("collection_action", r"{jc_path}/(?P<action>enable|disable)"),
    ("jobs", r"{jc_path}/jobs"),
    ("job", r"{jc_path}/jobs/{job}"),
    ("job_run", r"{jc_path}/jobs/{job}/run"),
    ("job_history", r"{jc_path}/jobs/{job}/history"),
)
_JC = r"subscriptions/{sub}/resourcegroups/{rg}/providers/microsoft\.scheduler/jobcollections/{jc}"


def _compile() -> tuple[tuple[str, re.Pattern[str]], ...]:
    names = {
        "sub": _NAME.format("sub"),
        "rg": _NAME.format("rg"),
        "jc": _NAME.format("jc"),
        "job": _NAME.format("job"),
    }
    compiled = []
    for kind, template in _PATTERNS:
        text = template.replace("{jc_path}", _JC).format(**names)
        compiled.append((kind, re.compile(f"^{text}/?$", re.IGNORECASE)))
    return tuple(compiled)


_COMPILED = _compile()


@dataclass(frozen=True)
class ResourcePath:
    """What a request path addresses: ``kind`` and the names in it (percent-decoded, case kept)."""

    kind: str
    subscription: str
    resource_group: str | None = None
    collection: str | None = None
    job: str | None = None
    action: str | None = None


def parse_path(path: str) -> ResourcePath:
    """Parse an ARM path (``subscriptions/S/resourceGroups/R/providers/Microsoft.Scheduler/...``).

    Raises :class:`NotFoundError` for a path that names no Scheduler resource or operation.
    """
    clean = path.split("?", 1)[0].strip("/")
    for kind, pattern in _COMPILED:
        match = pattern.match(clean)
        if match is None:
            continue
        groups = {k: unquote(v) for k, v in match.groupdict().items() if v is not None}
        return ResourcePath(
            kind=kind,
            subscription=groups["sub"],
            resource_group=groups.get("rg"),
            collection=groups.get("jc"),
            job=groups.get("job"),
            action=groups.get("action", "").lower() or None,
        )
    raise NotFoundError(f"no Microsoft.Scheduler resource or operation at path '/{clean}'")
