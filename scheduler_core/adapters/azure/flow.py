"""Flow control state in Table Storage (the :class:`~scheduler_core.ports.FlowLimits` port): table
``FlowControl``, one partition per key (the key as the caller gives it, a digest of subscription and target):

- ``rate``: ``Next``, the key's next free instant; ``res|<holder>``: ``At``, a holder's reserved start (written in
  one transaction with ``rate``, so copies of one attempt's message share one start);
- ``slot|<holder>``: one row per held slot, ``Until`` its end (a row past it is a free slot: its holder died);
- ``wait|<job>|<place>``: an attempt waiting for a slot, ``Until`` how long the note holds.

Every read-decide-write is ETag-guarded and starts over when it loses a race (at most :data:`RACE_TRIES`
tries: a reservation or a slot that cannot be had then waits as one over the limit does). A key nobody uses
has no rows.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode

from scheduler_core.adapters.azure.errors import translated
from scheduler_core.adapters.azure.rest import Table
from scheduler_core.errors import EtagMismatchError
from scheduler_core.races import Bound, RacesLost, race
from scheduler_core.storage.keys import SEPARATOR, escape_key

#: How a flow write that loses a race to another instance's tries again: at once, then with short jittered waits.
RACE_BOUND = Bound(tries=20, first=0.005, cap=0.1)
_RATE = "rate"
_RESERVED = f"res{SEPARATOR}"
_SLOT = f"slot{SEPARATOR}"
_WAIT = f"wait{SEPARATOR}"


def _aware(value: Any) -> datetime:
    instant: datetime = value
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def _after(prefix: str) -> str:
    """The row key just past every key that starts with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


@translated
class TableFlowLimits:
    """Flow control state over one table (see the module)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def reserve(
        self, key: str, spacing: timedelta, now: datetime, holder: str, *, passed: datetime | None = None
    ) -> datetime:
        mine = _RESERVED + escape_key(holder)
        if passed is not None:  # its start passed: the reservation goes, and a new one is made below
            self.forget(key, holder)

        def attempt() -> datetime:
            try:
                row = self.table.get_entity(key, _RATE)
            except ResourceNotFoundError:
                row = None
            last = row is not None and passed is not None and _aware(row["Next"]) == passed + spacing
            start = now if row is None or last or _aware(row["Next"]) < now else _aware(row["Next"])
            rate = {"PartitionKey": key, "RowKey": _RATE, "Next": start + spacing}
            move: tuple[Any, ...] = ("create", rate)
            if row is not None:
                guard = {"etag": row.metadata["etag"], "match_condition": MatchConditions.IfNotModified}
                move = ("update", rate, {"mode": UpdateMode.REPLACE, **guard})
            try:  # the key's next instant and the holder's reservation, in one transaction
                self.table.submit_transaction([move, ("create", {"PartitionKey": key, "RowKey": mine, "At": start})])
            except TableTransactionError:
                try:  # this holder reserved before (a copy of its message)
                    return _aware(self.table.get_entity(key, mine)["At"])
                except ResourceNotFoundError:
                    raise EtagMismatchError("another instance reserved first") from None
            return start

        return race(attempt, RACE_BOUND)

    def forget(self, key: str, holder: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.table.delete_entity(key, _RESERVED + escape_key(holder))

    def _slots(self, key: str) -> list[Any]:
        return list(
            self.table.query_entities(
                "PartitionKey eq @p and RowKey ge @lo and RowKey lt @hi",
                parameters={"p": key, "lo": _SLOT, "hi": _after(_SLOT)},
            )
        )

    def acquire(self, key: str, limit: int, holder: str, until: datetime, now: datetime) -> bool:
        mine = _SLOT + escape_key(holder)

        def attempt() -> bool:
            rows = self._slots(key)
            own = next((row for row in rows if row["RowKey"] == mine), None)
            entity = {"PartitionKey": key, "RowKey": mine, "Until": until}
            if own is not None:  # a renewal
                self.table.upsert_entity(entity, mode=UpdateMode.REPLACE)
                return True
            live = [row for row in rows if _aware(row["Until"]) > now]
            if len(live) >= limit:
                return False
            dead = [row for row in rows if _aware(row["Until"]) <= now]
            try:
                self.table.create_entity(entity)
            except ResourceExistsError:
                raise EtagMismatchError("the slot was taken meanwhile") from None
            for row in dead:  # a dead holder's row: removed only if unchanged since read
                with contextlib.suppress(ResourceNotFoundError, ResourceModifiedError):
                    self.table.delete_entity(
                        key, row["RowKey"], etag=row.metadata["etag"], match_condition=MatchConditions.IfNotModified
                    )
            if len([row for row in self._slots(key) if _aware(row["Until"]) > now]) > limit:
                # Another instance took the last slot at the same time: the later holder gives its slot back.
                self.table.delete_entity(key, mine)
                raise EtagMismatchError("over the limit after a concurrent take")
            return True

        try:
            return race(attempt, RACE_BOUND)
        except RacesLost:
            return False

    def release(self, key: str, holder: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.table.delete_entity(key, _SLOT + escape_key(holder))

    def _wait_key(self, job: str, place: str) -> str:
        return f"{_WAIT}{escape_key(job)}{SEPARATOR}{escape_key(place)}"

    def wait(self, key: str, job: str, place: str, until: datetime) -> None:
        row = {"PartitionKey": key, "RowKey": self._wait_key(job, place), "Until": until, "Place": place}
        self.table.upsert_entity(row, mode=UpdateMode.REPLACE)

    def waiting(self, key: str, job: str, place: str, now: datetime) -> datetime | None:
        try:
            row = self.table.get_entity(key, self._wait_key(job, place))
        except ResourceNotFoundError:
            return None
        until = _aware(row["Until"])
        return until if until > now else None

    def first_waiting(self, key: str, job: str, now: datetime) -> str | None:
        prefix = f"{_WAIT}{escape_key(job)}{SEPARATOR}"
        rows = self.table.query_entities(
            "PartitionKey eq @p and RowKey ge @lo and RowKey lt @hi",
            parameters={"p": key, "lo": prefix, "hi": _after(prefix)},
        )
        places = [str(row["Place"]) for row in rows if _aware(row["Until"]) > now]
        return min(places) if places else None

    def done_waiting(self, key: str, job: str, place: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.table.delete_entity(key, self._wait_key(job, place))
