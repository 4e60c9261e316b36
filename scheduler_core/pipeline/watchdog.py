"""The watchdog over dispatched attempts: an attempt whose worker died runs again within a tick of its
claim's lease, not after the queue's 10-minute processing lease. The lease (60 s,
:data:`~scheduler_core.model.claim.CLAIM_LEASE`) is renewed by its holder every 20 s while it holds the
attempt (:mod:`scheduler_core.pipeline.leases`), so a lease found over means that its holder stopped renewing
it, and a call of any length is never sent again while its worker lives; the worker that takes the attempt
over looks once more :func:`~scheduler_core.model.claim.takeover_pause` (10 s) later first. A dead worker's
attempt thus runs again at most a lease, :data:`WATCH_GRACE`, one dispatch interval (the tick that looks,
60 s), a queue poll and that pause after the worker's last renewal: 60 + 5 + 60 + 1 + 10 s, about 2¼ minutes
at worst and 1½ on average (it was a fixed 2 minutes after the *claim*, plus the tick: up to 3 minutes, and a
call longer than 2 minutes was taken over while it ran). An attempt whose workers were lost
:data:`~scheduler_core.model.claim.MAX_TAKEOVERS` (3) times is not run again but recorded as failed by the
worker that takes it over the last time (:mod:`scheduler_core.pipeline.execute`).

With each attempt it sends, a scan writes a *watch entry* (kind ``watch``, carrying the message) in the
same shard batch that moves the fired entry, due when the attempt's claim lease would end (occurrence +
lease + :data:`WATCH_GRACE`). A scan that finds a watch entry due reads its job with the jobs of its other
entries (a collection at a time) and asks :meth:`Watchdog.check`:

- the job counted the attempt (its ``counted`` list names it: the executor counts an attempt after sending
  what follows it): drop the entry, with no read of its own (the happy path);
- the attempt would not run any more (job gone, changed or disabled): drop the entry, with no read;
- otherwise, unless its queue is behind (below), the attempt's claim is read (one point read): done, drop
  the entry;
- the claim's lease is live: look again at its end;
- the claim is ``Running`` past its lease (its worker died mid-call): send the same message again at once
  (so the same execution id) and watch the re-run;
- nobody has claimed it a lease after it was due: its message was lost on its way to a worker (a receive
  that storage carried out but whose answer was lost in an outage, or a worker that died before claiming:
  the queue hides such a message for its 10-minute processing lease), or it waits behind a backlog. Send
  the same message again at once, the first time only (a copy that comes second finds the claim taken or
  done and is dropped), and look again a lease later, :data:`WATCH_UNCLAIMED_CHECKS` times at most (by
  then the queue has shown the message again by itself). An occurrence that waits its turn
  (``overlapPolicy`` BufferOne: the job holds it) is only looked at again.

While the attempt's queue is behind (it shows a message sent more than a lease ago, not yet taken:
:meth:`ExecutionRouter.behind <scheduler_core.queue_router.ExecutionRouter.behind>`), a look that finds the
attempt not counted reads no claim and sends nothing: the attempt most likely waits in that backlog, and a
copy would only add to it. The entry is looked at again a lease later (its looks counted as an unclaimed
attempt's are), and a resend it still owes is kept (``DueEntry.held``) for the first look that finds the
queue keeping up. Without this, every attempt of a burst that drained for longer than a lease was sent twice
(and its claim read), doubling the queue's load just when it was overloaded; a worker that died in such a
backlog is sent again once the queue keeps up, or its message is shown again by the queue after 10 minutes.

Attempts sent outside a scan (retries, error actions, runs on demand) are watched by :meth:`Watchdog.watch`,
one index write each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.model import CLAIM_LEASE, WATCH, DueEntry, Job, JobState
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.ports import Claims, ExecutionQueue, Stores
from scheduler_core.storage.keys import SEPARATOR, due_row_key, shard_of

#: Whether the queue of a message (its text) is behind: a message sent more than ``older_than`` before ``now``
#: not yet taken (:meth:`scheduler_core.queue_router.ExecutionRouter.behind`).
Behind = Callable[[str, timedelta, datetime], bool]

#: A watch entry is due this long after the lease it watches would end (clock skew between instances).
WATCH_GRACE = timedelta(seconds=5)
#: How long a queue hides a message a worker received (the Functions host's processing lease).
QUEUE_PROCESSING_LEASE = timedelta(minutes=10)
#: A watch entry whose attempt has not been claimed yet is looked at this many times (a lease apart)
#: before it is dropped: by then the queue has shown the message again by itself (10 for the 60-s lease).
WATCH_UNCLAIMED_CHECKS = math.ceil(QUEUE_PROCESSING_LEASE / CLAIM_LEASE)


def waits_its_turn(job: Job, message: ExecutionMessage) -> bool:
    """Whether ``job`` holds ``message``'s occurrence until the one before it ends (``overlapPolicy``
    BufferOne): unclaimed on purpose, and sent by the executor when its turn comes."""
    return bool(job.waiting) and ExecutionMessage.from_json(job.waiting).attempt_key == message.attempt_key


@dataclass(frozen=True)
class Look:
    """What a look at a due watch entry decided: the entry that replaces it (None: it goes), and whether
    the attempt was sent again (its worker died)."""

    again: DueEntry | None
    rescued: bool = False


class Watchdog:
    def __init__(
        self,
        stores: Stores,
        claims: Claims,
        send: ExecutionQueue,
        shards: int,
        lease: timedelta,
        grace: timedelta,
        behind: Behind | None = None,
    ) -> None:
        self.stores = stores
        self.claims = claims
        self.send = send
        self.shards = shards
        self.lease = lease
        self.grace = grace
        self.behind = behind

    def row(
        self, job: Job, message: ExecutionMessage, shard: str, due: datetime, checks: int = 0, held: bool = False
    ) -> DueEntry:
        """The watch entry of ``message``'s attempt, due at ``due``."""
        key = due_row_key(due, job.ref.identity, job.generation) + f"{SEPARATOR}{WATCH}{SEPARATOR}{message.attempt_key}"
        return DueEntry(
            shard,
            key,
            job.ref.partition_key,
            job.ref.row_key,
            job.generation,
            due,
            message=message.to_json(),
            kind=WATCH,
            checks=checks,
            held=held,
        )

    def row_after_lease(self, job: Job, message: ExecutionMessage, shard: str, due: datetime) -> DueEntry:
        """The watch entry of an attempt due at ``due``: due when its claim's lease would end, plus the grace."""
        return self.row(job, message, shard, due + self.lease + self.grace)

    def watch(self, job: Job, message: ExecutionMessage, due: datetime) -> None:
        """Watch an attempt due at ``due`` that was sent outside a scan: one due-index write."""
        self.stores.due.put(self.row_after_lease(job, message, shard_of(job.ref.identity, self.shards), due))

    def check(self, row: DueEntry, now: datetime, job: Job | None) -> Look | None:
        """Look at a watch entry (see the module's rules); None: not due yet, leave it. ``job`` is the
        entry's job as the scan read it (None: gone)."""
        if row.due > now or row.message is None:
            return None  # not yet: the entry is inside the lookahead window only
        message = ExecutionMessage.from_json(row.message)
        if job is not None and message.attempt_key in job.counted:
            return Look(None)  # ran and counted: what follows it was sent before it was counted
        if job is None or (
            message.cause != Cause.MANUAL and (job.generation != message.generation or job.state != JobState.ENABLED)
        ):
            return Look(None)  # the attempt would not run any more (done or not: no claim read needed)
        owed = (row.checks == 0 or row.held) and not waits_its_turn(job, message)  # a resend, if unclaimed
        if self.behind is not None and self.behind(row.message, self.lease, now):
            # Its queue is behind: the attempt most likely waits in that backlog, and whatever its claim says
            # could only send it again into the backlog. Look again a lease later, without a claim read.
            if row.checks + 1 < WATCH_UNCLAIMED_CHECKS:
                return Look(self.row(job, message, row.shard, now + self.lease, row.checks + 1, owed))
            return Look(None)
        identity = f"{row.job_partition}{SEPARATOR}{row.job_row}"
        state = self.claims.state(identity, message.claim_row)
        if state is not None and state.done:
            return Look(None)
        if state is None:  # not claimed: lost on its way to a worker (see the module)
            if owed:
                reporting.resent_unclaimed(job, message, row.due)
                self.send(row.message, 0)
                return Look(self.row(job, message, row.shard, now + self.lease, row.checks + 1), rescued=True)
            if row.checks + 1 < WATCH_UNCLAIMED_CHECKS:
                return Look(self.row(job, message, row.shard, now + self.lease, row.checks + 1))
            return Look(None)
        if state.lease_until is not None and state.lease_until > now:  # still running: look again at its end
            return Look(self.row(job, message, row.shard, state.lease_until + self.grace, row.checks))
        # Claimed, not done, lease over: its worker died mid-call. Run it again, and watch the re-run.
        reporting.rescued(job, message, state.lease_until)
        self.send(row.message, 0)
        return Look(self.row(job, message, row.shard, now + self.lease + self.grace), rescued=True)
