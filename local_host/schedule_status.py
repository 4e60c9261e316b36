"""A timer's schedule status, as the Functions host's schedule monitor keeps it (its last scheduled run and
the next one due): in a file of the local host's state (``local_host.timers.ScheduleStatusStore``) or in a
blob of AzureWebJobsStorage as the host writes it (``local_host.leases.BlobScheduleStatusStore``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class ScheduleStatus:
    """What the schedule monitor remembers of a timer: its last scheduled run and the next one due."""

    last: datetime | None
    next: datetime
    last_updated: datetime

    def to_json(self) -> str:
        return json.dumps(
            {
                "Last": self.last.isoformat() if self.last else None,
                "Next": self.next.isoformat(),
                "LastUpdated": self.last_updated.isoformat(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ScheduleStatus:
        """Read a status written by :meth:`to_json`, or by the Functions host (which writes .NET's
        ``default(DateTime)``, year 1, for a run that never happened; naive times are UTC, as in Azure)."""
        data = json.loads(text)
        last = _instant(data.get("Last"))
        return cls(
            last=last if last is not None and last.year > 1 else None,
            next=_required_instant(data["Next"]),
            last_updated=_required_instant(data["LastUpdated"]),
        )


def _instant(text: object) -> datetime | None:
    if not text:
        return None
    value = datetime.fromisoformat(str(text))
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def _required_instant(text: object) -> datetime:
    value = _instant(text)
    if value is None:
        raise ValueError("a schedule status needs Next and LastUpdated")
    return value
