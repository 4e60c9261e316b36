"""The history stream (setting ``SchedulerHistoryStream``): every history record, as it is written, is also sent to
a Storage queue of the operator's, for audit and analytics beyond the history's retention.

A record is sent after its write landed, by the writer: :class:`StreamedHistory` and :class:`StreamedClaims` wrap
the history store and the claims, so every path that records (an attempt's entry written with its claim, a lost
or given-up attempt's, a skipped occurrence's) streams it, and a write retried through a storage outage
(``durably``) sends again with it. A worker that dies between the write and the send leaves the record
unsent until its message is delivered again (the queue shows it again after the host's processing lease):
that delivery finds the attempt done and sends the attempt's records again (:meth:`HistoryStream.again`).

So every record is sent **at least once**, and twice only around a failure; each message carries the record's
``recordId`` (the job's resource id, ``/history/`` and the entry's row key: one per record, the same on every
send), by which a consumer keeps each record once. The message is JSON text (base64-encoded on the queue, as
the Functions host reads queue messages):
``{"v": 1, "recordId": ..., "job": <job resource id>, "entry": <the history entry as api-version
2026-12-01-preview answers it>}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from scheduler_core.definitions import Wire, history_json
from scheduler_core.model import HistoryEntry
from scheduler_core.model.claim import Claim, ClaimResult, ClaimState
from scheduler_core.model.history import HistoryRetention
from scheduler_core.ports import Claims, History, MessageSender
from scheduler_core.storage.keys import JobRef

__all__ = ["HistoryStream", "StreamedClaims", "StreamedHistory", "stream_message"]

VERSION = 1


def stream_message(job: JobRef, entry: HistoryEntry) -> str:
    """The stream's message of one history record (see the module)."""
    record = {
        "v": VERSION,
        "recordId": f"{job.resource_id}/history/{entry.row_key}",
        "job": job.resource_id,
        "entry": history_json(job, entry, Wire.PREVIEW),
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


class HistoryStream:
    """Sends history records to the stream's queue (``sender``)."""

    def __init__(self, sender: MessageSender) -> None:
        self.sender = sender

    def send(self, job: JobRef, entry: HistoryEntry) -> None:
        self.sender.send(stream_message(job, entry))

    def again(self, history: History, job: JobRef, execution_id: str) -> int:
        """Send again every record of one attempt (``execution_id``) of ``job``: a delivery that found the attempt
        done, whose first worker may have died before it sent them. How many."""
        sent = 0
        for entry in list(history.list(job)):
            if entry.execution_id == execution_id:
                self.send(job, entry)
                sent += 1
        return sent


class StreamedHistory:
    """A :class:`~scheduler_core.ports.History` whose writes are streamed once they landed."""

    def __init__(self, inner: History, stream: HistoryStream) -> None:
        self.inner = inner
        self.stream = stream

    def __getattr__(self, name: str) -> Any:  # the adapter's other members (tests read its tables)
        return getattr(self.inner, name)

    def add(self, job: JobRef, record: HistoryEntry) -> None:
        self.inner.add(job, record)
        self.stream.send(job, record)

    def add_if_absent(self, job: JobRef, record: HistoryEntry) -> bool:
        """Write unless present, and stream it either way (a write that found it present may be the retry of
        one whose send was lost)."""
        written = self.inner.add_if_absent(job, record)
        self.stream.send(job, record)
        return written

    def list(self, job: JobRef, *, once: bool = False) -> Iterator[HistoryEntry]:
        return self.inner.list(job, once=once)

    def trim(self, job: JobRef, retention: HistoryRetention, now: datetime) -> int:
        return self.inner.trim(job, retention, now)

    def delete_all(self, job: JobRef) -> None:
        self.inner.delete_all(job)


class StreamedClaims:
    """:class:`~scheduler_core.ports.Claims` whose recorded entries are streamed once they landed."""

    def __init__(self, inner: Claims, stream: HistoryStream) -> None:
        self.inner = inner
        self.stream = stream

    def __getattr__(self, name: str) -> Any:  # the adapter's own members (tests read its tables)
        return getattr(self.inner, name)

    def claim(
        self,
        partition: str,
        row: str,
        worker: str,
        now: datetime,
        lease: timedelta,
        token: str | None = None,
        take_over: bool = True,
    ) -> ClaimResult:
        return self.inner.claim(partition, row, worker, now, lease, token, take_over)

    def renew(self, claim: Claim, now: datetime, lease: timedelta) -> Claim | None:
        return self.inner.renew(claim, now, lease)

    def state(self, partition: str, row: str) -> ClaimState | None:
        return self.inner.state(partition, row)

    def complete(self, claim: Claim, now: datetime) -> None:
        self.inner.complete(claim, now)

    def record(self, claim: Claim, job: JobRef, entry: HistoryEntry, now: datetime) -> None:
        self.inner.record(claim, job, entry, now)
        self.stream.send(job, entry)

    def release(self, claim: Claim) -> None:
        self.inner.release(claim)

    def delete_older_than(self, partition: str, before: datetime) -> int:
        return self.inner.delete_older_than(partition, before)

    def delete_all(self, partition: str) -> None:
        self.inner.delete_all(partition)
