"""An attempt's transitions, in one place: every execution message is built and sent here.

No other product module constructs an :class:`~scheduler_core.pipeline.messages.ExecutionMessage`: the
builders below make each kind of attempt (a scheduled occurrence, a run on demand, a backfill's occurrence, a
retry, an error action, a released or a deadline copy of a waiting occurrence), and :class:`Attempts` sends
them, one queue operation per transition (and, where the attempt is watched, its watch entry):

- :meth:`Attempts.dispatch`: a scan sends an occurrence to show at its second (at once when late); the watch
  entry is returned for the scan's shard batch (no round trip of its own);
- :meth:`Attempts.send_at` and :meth:`Attempts.watch`: a follow-up (retry, error action, released occurrence,
  a backfill's next occurrence) shown at its instant, or parked in the due index when a queue cannot hold it
  that long (:meth:`Attempts.park`), and watched; the executor makes each durable;
- :meth:`Attempts.run_now`, :meth:`Attempts.replay` and :meth:`Attempts.start_backfill`: the API's runs, sent
  and watched;
- :meth:`Attempts.unpark`: a parked follow-up, sent when it is near;
- :meth:`Attempts.resend`: the watchdog sends a lost attempt again, visible at once (its watch stands);
- :meth:`Attempts.later`: a delivery that found its attempt busy, or over its flow control key's limits
  (:func:`flow_waiting`), shows again after a delay (its watch stands).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from scheduler_core.model import Job, ParkedEntry, WatchEntry
from scheduler_core.model.actions import NotificationKind
from scheduler_core.model.retry import FailureFacts
from scheduler_core.pipeline.messages import Cause, ExecutionMessage, FlowWait, Poll
from scheduler_core.pipeline.watches import Watches
from scheduler_core.policies import start_delay
from scheduler_core.ports import ExecutionQueue
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import due_row_key, shard_of

#: Queue messages can be delayed by at most 7 days (Azure Storage queues).
MAX_VISIBILITY = timedelta(days=7)
#: Execution messages become visible this many whole seconds before their occurrence, plus the fraction
#: that queues (which count whole seconds) cannot express; the executor holds them until the due instant.
#: With a queue polling interval of at most this margin, actions fire at their second, not after it.
EARLY_MARGIN_SECONDS = 1


def visibility_seconds(due: datetime, now: datetime, margin: int = EARLY_MARGIN_SECONDS) -> int:
    """The visibility timeout that shows a message ``margin`` to ``margin`` + 1 seconds before ``due`` (by
    default 1–2 s; 0 when that is already past)."""
    return max(0, math.floor((due - now).total_seconds()) - margin)


# ------------------------------------------------------------------------------------------------ builders


def _message(job: Job, occurrence: datetime, **fields: Any) -> ExecutionMessage:
    """The first attempt of ``job``'s occurrence ``occurrence``, with ``fields`` (cause and the like)."""
    return ExecutionMessage(
        job_partition=job.ref.partition_key,
        job_row=job.ref.row_key,
        generation=job.generation,
        occurrence=format_instant(occurrence),
        **fields,
    )


def scheduled(job: Job, occurrence: datetime, missed: int = 0, last: bool = False) -> ExecutionMessage:
    """The first attempt of a scheduled occurrence (``missed``: how many missed occurrences it stands for;
    ``last``: the series ends with it)."""
    return _message(job, occurrence, cause=Cause.SCHEDULE, missed=missed, last=last)


def on_demand(job: Job, now: datetime) -> ExecutionMessage:
    """A run on demand (``POST .../run``), its occurrence the instant it was asked for."""
    return _message(job, now, cause=Cause.MANUAL)


def backfill_run(job: Job, occurrence: datetime, backfill: str, until: str = "") -> ExecutionMessage:
    """An occurrence of backfill ``backfill``; ``until`` (the last occurrence of its window) when the backfill's
    occurrences run one after another, each sending the next."""
    return _message(job, occurrence, cause=Cause.BACKFILL, until=until, backfill=backfill)


def replayed(job: Job, occurrence: datetime, now: datetime) -> ExecutionMessage:
    """``job``'s occurrence ``occurrence`` run again on request, due now (a request id of its own)."""
    message = _message(job, occurrence, cause=Cause.REPLAY, replay=uuid.uuid4().hex[:16])
    return replace(message, due=format_instant(now))


def next_backfill_run(message: ExecutionMessage, following: datetime) -> ExecutionMessage:
    """The occurrence after ``message``'s of the same backfill (a second copy of its send runs once)."""
    return ExecutionMessage(
        job_partition=message.job_partition,
        job_row=message.job_row,
        generation=message.generation,
        occurrence=format_instant(following),
        cause=Cause.BACKFILL,
        until=message.until,
        backfill=message.backfill,
    )


def retry_of(message: ExecutionMessage, first: datetime) -> ExecutionMessage:
    """The next attempt of ``message``'s action (a scheduled occurrence's retries are caused ``retry``);
    ``first``: when the action's first attempt at the occurrence started (kept from ``message`` when it says)."""
    return replace(
        message,
        attempt=message.attempt + 1,
        cause=Cause.RETRY if message.cause == Cause.SCHEDULE else message.cause,
        first=message.first or format_instant(first),
        poll=None,
    )


def error_action_of(message: ExecutionMessage, failure: FailureFacts) -> ExecutionMessage:
    """The first attempt of the error action of ``message``'s occurrence, knowing how the main action's last
    attempt failed (``failure``)."""
    return replace(message, action="error", attempt=0, first="", failure=failure, poll=None)


def notification_of(
    message: ExecutionMessage, kind: NotificationKind, failure: FailureFacts | None = None
) -> ExecutionMessage:
    """The first attempt of the job's ``kind`` notification about ``message``'s occurrence (``failure``: how
    its main action failed, for ``onFailure``; a ``deadline`` runs only if the occurrence has not succeeded by
    then). It keeps the occurrence, its cause and generation, nothing of the attempt's own state."""
    return replace(
        message,
        action=kind.value,
        attempt=0,
        missed=0,
        last=False,
        until="",
        waits_for="",
        first="",
        failure=failure,
        poll=None,
    )


def poll_of(message: ExecutionMessage, url: str, since: datetime) -> ExecutionMessage:
    """The next poll of the operation ``message``'s attempt started at ``since`` (``request.asyncPolling``)."""
    number = message.poll.number + 1 if message.poll is not None else 1
    return replace(message, poll=Poll(url, format_instant(since), number))


def released(job: Job, occurrence: datetime, last: bool) -> ExecutionMessage:
    """The first attempt of ``job``'s occurrence ``occurrence``, released from waiting (BufferOne)."""
    return _message(job, occurrence, last=last)


def due_at(message: ExecutionMessage, due: datetime) -> ExecutionMessage:
    """``message`` due to start at ``due`` (its :attr:`~ExecutionMessage.due`; none for the first attempt of the
    main action due at its occurrence, whose message is as it always was)."""
    first = message.attempt == 0 and message.is_main
    return replace(message, due="" if first and due == message.occurrence_time else format_instant(due))


def waiting(message: ExecutionMessage) -> ExecutionMessage:
    """``message`` as the job keeps it while it waits its turn (BufferOne)."""
    return replace(message, waits_for="")


def flow_waiting(message: ExecutionMessage, since: datetime, at: datetime | None) -> ExecutionMessage:
    """``message`` waiting for its ``flowControl`` key's limits since ``since``, with the start its key's rate
    reserved for it (``at``; None: none)."""
    return replace(message, flow=FlowWait(format_instant(since), format_instant(at) if at is not None else ""))


def deadline_copy(message: ExecutionMessage, generation: int, running: datetime) -> ExecutionMessage:
    """A copy of the waiting ``message`` that runs it if the occurrence ``running`` (of the job's
    ``generation``), which it waits for, is taken as lost."""
    return replace(message, waits_for=f"{generation}|{format_instant(running)}")


# ----------------------------------------------------------------------------------------------- transitions


class Attempts:
    """Sends attempts: ``send`` is the execution queue (the router over the K queues), ``watches`` writes their
    watch entries and looks."""

    def __init__(self, send: ExecutionQueue, watches: Watches) -> None:
        self.send = send
        self.watches = watches

    def dispatch(self, job: Job, message: ExecutionMessage, shard: str, now: datetime) -> WatchEntry:
        """Send a scheduled occurrence to show at its second (at once when it is late); its watch entry, for the
        scan to write in its shard batch."""
        occurrence = message.occurrence_time
        self.send(message.to_json(), visibility_seconds(occurrence, now))
        return self.watches.row_after_lease(job, message, shard, occurrence, now)

    def dispatch_at(self, job: Job, message: ExecutionMessage, shard: str, due: datetime, now: datetime) -> WatchEntry:
        """Send ``message`` (due within :data:`MAX_VISIBILITY`) to show at ``due`` from a scan; its watch entry,
        for the scan to write in its shard batch."""
        message = due_at(message, due)
        self.send(message.to_json(), visibility_seconds(due, now))
        return self.watches.row_after_lease(job, message, shard, due, now)

    def send_at(self, job: Job, message: ExecutionMessage, due: datetime, now: datetime) -> None:
        """Send ``message`` to show at ``due``: on its queue when a queue can hold it that long, else parked
        in the due index until it is near."""
        if due - now <= MAX_VISIBILITY - timedelta(minutes=5):
            self.send(message.to_json(), visibility_seconds(due, now))
        else:
            self.park(job, message, due)

    def watch(self, job: Job, message: ExecutionMessage, due: datetime, now: datetime) -> None:
        """Watch an attempt due at ``due`` sent outside a scan: one due-index write, and the look of its slot."""
        self.watches.watch(job, message, due, now)

    def park(self, job: Job, message: ExecutionMessage, due: datetime) -> None:
        """Keep an attempt due later than a queue can hold it in the due index (one write) until it is near."""
        shard = shard_of(job.ref.identity, self.watches.shards)
        key = due_row_key(due, job.ref.identity, job.generation) + f"|retry{message.attempt}{message.action}"
        row = ParkedEntry(shard, key, job.ref.partition_key, job.ref.row_key, job.generation, due, message.to_json())
        self.watches.stores.due.put(row.entry())

    def unpark(self, row: ParkedEntry, now: datetime) -> None:
        """Send a parked attempt (its row is near) to show at its instant."""
        self.send(row.message, visibility_seconds(row.due, now))

    def run_now(self, job: Job, now: datetime) -> None:
        """A run on demand, sent at once and watched."""
        message = on_demand(job, now)
        self.send(message.to_json(), 0)
        self.watch(job, message, now, now)

    def replay(self, job: Job, occurrence: datetime, now: datetime) -> ExecutionMessage:
        """Run ``job``'s occurrence ``occurrence`` again, sent at once and watched; its message."""
        message = replayed(job, occurrence, now)
        self.send(message.to_json(), 0)
        self.watch(job, message, now, now)
        return message

    def start_backfill(
        self,
        job: Job,
        backfill: str,
        occurrences: Sequence[datetime],
        starts: Sequence[datetime],
        chained: bool,
        now: datetime,
    ) -> None:
        """Backfill ``backfill``'s occurrences, each shown at its start (the plan's pace) and watched: all of
        them, or only the first when they run one after another (``chained``: it names the last, and each sends
        the next when its attempts are over). When they are all sent (``AllowAll``: they run side by side), they
        are sent in order and then watched in the due index's batches, as a scan watches what it sends (those
        sent before a failed send too)."""
        until = format_instant(occurrences[-1]) if chained else ""
        count = 1 if chained else len(occurrences)
        sends = [
            (due_at(backfill_run(job, occurrence, backfill, until), max(start, now)), start)
            for occurrence, start in zip(occurrences[:count], starts[:count], strict=True)
        ]
        if count == 1:
            [(message, start)] = sends
            self.send(message.to_json(), start_delay(start, now))
            self.watch(job, message, max(start, now), now)
            return
        sent: list[tuple[ExecutionMessage, datetime]] = []
        try:
            for message, start in sends:  # in order: the queue shows them in the order of their starts
                self.send(message.to_json(), start_delay(start, now))
                sent.append((message, max(start, now)))
        finally:
            self.watches.watch_many(job, sent, now)

    def resend(self, text: str) -> None:
        """Send an attempt's message again, visible at once (the watchdog found it lost)."""
        self.send(text, 0)

    def later(self, message: ExecutionMessage, delay: int) -> None:
        """Show ``message`` again in ``delay`` whole seconds (a delivery that found its attempt busy, or over its
        ``flowControl`` key's limits)."""
        self.send(message.to_json(), delay)
