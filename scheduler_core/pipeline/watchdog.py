"""The watchdog over dispatched attempts: an attempt whose worker died runs again about half a minute after
the death, not after the queue's 10-minute processing lease. The claim's lease (15 s,
:data:`~scheduler_core.model.claim.CLAIM_LEASE`) is renewed by its holder every 5 s while it holds the
attempt (:mod:`scheduler_core.pipeline.leases`), so a lease found over means that its holder stopped renewing
it, and a call of any length is never sent again while its worker lives; the worker that takes the attempt
over looks once more :func:`~scheduler_core.model.claim.takeover_pause` (10 s) later first. Watch entries are
looked at by *watch looks*, scan messages of their own sent for the :data:`~.watches.WATCH_SLOT` (5 s) in which an
entry falls due, so a dead worker's attempt runs again at most a lease, :data:`~.watches.WATCH_GRACE`, a slot, two
queue polls and that pause after the worker's last renewal (renewed 0–5 s before it died): 15 + 2 + 5 + 2 +
10 s, about 34 s after the death at worst and 29 s on average. An attempt whose workers were lost
:data:`~scheduler_core.model.claim.MAX_TAKEOVERS` (3) times is not run again but recorded as failed by the
worker that takes it over the last time (:mod:`scheduler_core.pipeline.execute`).

With each attempt it sends, a scan writes a *watch entry* (kind ``watch``, carrying the message) in the
same shard batch that moves the fired entry, due when the attempt's claim lease would end (occurrence +
lease + :data:`~.watches.WATCH_GRACE`), keyed after every occurrence's entry
(:func:`~.watches.watch_key`), and sends the look of its slot (:meth:`~.watches.Watches.schedule`). A look
reads the jobs of the shard's watch entries due by then (a collection at a time) and asks
:meth:`Watchdog.check` of each:

- the job counted the attempt (its ``counted`` list names it: the executor counts an attempt after sending
  what follows it): drop the entry, with no read of its own (the happy path);
- the attempt would not run any more (job gone, changed or disabled): drop the entry, with no read;
- otherwise, unless its queue is behind (below), the attempt's claim is read (one point read): done, drop
  the entry;
- the claim's lease is live: look again at its end;
- the claim is ``Running`` past its lease (its worker died mid-call): send the same message again at once
  (so the same execution id) and watch the re-run;
- nobody has claimed it, and it is noted as waiting for its ``flowControl`` key's limits
  (:func:`~scheduler_core.pipeline.flow.waiting_until`): look again when the note runs out;
- nobody has claimed it a lease after it was due: its message was lost on its way to a worker (a receive
  that storage carried out but whose answer was lost in an outage, or a worker that died before claiming:
  the queue hides such a message for its 10-minute processing lease), or it waits behind a backlog. Send
  the same message again at once, the first time only (a copy that comes second finds the claim taken or
  done and is dropped), and look again :data:`WATCH_RECHECK` later, :data:`WATCH_UNCLAIMED_CHECKS` times at
  most (by then the queue has shown the message again by itself). An occurrence that waits its turn
  (``overlapPolicy`` BufferOne: the job holds it) is only looked at again, and the resend it owes is kept
  (``WatchEntry.held``) for a look that finds it no longer waiting but still unclaimed (the worker that
  released it died before sending it).

While the attempt's queue is behind (it shows a message sent more than :data:`WATCH_RECHECK` ago, not yet taken:
:meth:`ExecutionRouter.behind <scheduler_core.queue_router.ExecutionRouter.behind>`), a look that finds the
attempt not counted reads no claim and sends nothing: the attempt most likely waits in that backlog, and a
copy would only add to it. The entry is looked at again :data:`WATCH_RECHECK` later (its looks counted as an unclaimed
attempt's are), and a resend it still owes is kept (``WatchEntry.held``) for the first look that finds the
queue keeping up. Without this, every attempt of a burst that drained for longer than a minute was sent twice
(and its claim read), doubling the queue's load just when it was overloaded; a worker that died in such a
backlog is sent again once the queue keeps up, or its message is shown again by the queue after 10 minutes.

Attempts sent outside a scan (retries, error actions, runs on demand) are watched by :meth:`Watchdog.watch`,
one index write each (and the look of its slot).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.model import Job, JobState, WatchEntry
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.flow import waiting_until
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.ports import Claims, FlowLimits
from scheduler_core.storage.keys import SEPARATOR

#: Whether the queue of a message (its text) is behind: a message sent more than ``older_than`` before ``now``
#: not yet taken (:meth:`scheduler_core.queue_router.ExecutionRouter.behind`).
Behind = Callable[[str, timedelta, datetime], bool]

#: How long a queue hides a message a worker received (the Functions host's processing lease).
QUEUE_PROCESSING_LEASE = timedelta(minutes=10)
#: An attempt not claimed yet is looked at again this long later; and a queue that shows a message sent this
#: long ago, not yet taken, is *behind* (more than the time from a scan's send to the due second, so that a
#: message shown at its second is not taken for a backlog).
WATCH_RECHECK = timedelta(seconds=60)
#: A watch entry whose attempt has not been claimed yet is looked at this many times (:data:`WATCH_RECHECK`
#: apart) before it is dropped: by then the queue has shown the message again by itself (10).
WATCH_UNCLAIMED_CHECKS = math.ceil(QUEUE_PROCESSING_LEASE / WATCH_RECHECK)


def waits_its_turn(job: Job, message: ExecutionMessage) -> bool:
    """Whether ``job`` holds ``message``'s occurrence until the one before it ends (``overlapPolicy``
    BufferOne): unclaimed on purpose, and sent by the executor when its turn comes."""
    return bool(job.waiting) and ExecutionMessage.from_json(job.waiting).attempt_key == message.attempt_key


@dataclass(frozen=True)
class Look:
    """What a look at a due watch entry decided: the entry that replaces it (None: it goes), and whether
    the attempt was sent again (its worker died)."""

    again: WatchEntry | None
    rescued: bool = False


class Watchdog:
    """Looks at due watch entries (:meth:`check`); re-sends through ``attempts``, re-arms through its watches."""

    def __init__(
        self,
        claims: Claims,
        attempts: Attempts,
        behind: Behind | None = None,
        flow: FlowLimits | None = None,
    ) -> None:
        self.claims = claims
        self.flow = flow
        self.attempts = attempts
        self.watches = attempts.watches
        self.behind = behind

    def check(self, row: WatchEntry, now: datetime, job: Job | None) -> Look | None:
        """Look at a watch entry (see the module's rules); None: not due yet, leave it. ``job`` is the
        entry's job as the scan read it (None: gone)."""
        if row.due > now:
            return None  # not yet: the entry is inside the lookahead window only
        message = ExecutionMessage.from_json(row.message)
        if job is not None and message.attempt_key in job.counted:
            return Look(None)  # ran and counted: what follows it was sent before it was counted
        if job is None or (
            not message.survives_edits and (job.generation != message.generation or job.state != JobState.ENABLED)
        ):
            return Look(None)  # the attempt would not run any more (done or not: no claim read needed)
        owed = row.checks == 0 or row.held  # a resend, if unclaimed (kept while it waits its turn or a backlog)
        waiting = waits_its_turn(job, message)
        if self.behind is not None and self.behind(row.message, WATCH_RECHECK, now):
            # Its queue is behind: the attempt most likely waits in that backlog, and whatever its claim says
            # could only send it again into the backlog. Look again later, without a claim read.
            if row.checks + 1 < WATCH_UNCLAIMED_CHECKS:
                return Look(self.watches.row(job, message, row.shard, now + WATCH_RECHECK, row.checks + 1, owed))
            return Look(None)
        identity = f"{row.job_partition}{SEPARATOR}{row.job_row}"
        state = self.claims.state(identity, message.claim_row)
        if state is not None and state.done:
            return Look(None)
        if state is None:  # not claimed: lost on its way to a worker (see the module), or held back
            held_until = waiting_until(self.flow, job, message, now) if self.flow is not None else None
            if held_until is not None:  # it waits for its flow control key's limits: look again after that
                return Look(
                    self.watches.row(job, message, row.shard, held_until + self.watches.grace, row.checks, owed)
                )
            if owed and not waiting:
                reporting.resent_unclaimed(job, message, row.due)
                self.attempts.resend(row.message)
                return Look(
                    self.watches.row(job, message, row.shard, now + WATCH_RECHECK, row.checks + 1), rescued=True
                )
            if row.checks + 1 < WATCH_UNCLAIMED_CHECKS:
                return Look(self.watches.row(job, message, row.shard, now + WATCH_RECHECK, row.checks + 1, owed))
            return Look(None)
        if state.lease_until is not None and state.lease_until > now:  # still running: look again at its end
            return Look(self.watches.row(job, message, row.shard, state.lease_until + self.watches.grace, row.checks))
        # Claimed, not done, lease over: its worker died mid-call. Run it again, and watch the re-run.
        reporting.rescued(job, message, state.lease_until)
        self.attempts.resend(row.message)
        return Look(
            self.watches.row(job, message, row.shard, now + self.watches.lease + self.watches.grace), rescued=True
        )
