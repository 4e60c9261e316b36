"""Flow control (``action.flowControl``, api-version 2026-12-01-preview): an attempt of a job's main action runs
only within the limits of its key, shared by every job of the subscription that names it, on every instance.

:meth:`FlowGate.admit` decides before the attempt's claim:

- ``ratePerSecond``: the attempt reserves a start of the key (:meth:`~scheduler_core.ports.FlowLimits.reserve`:
  starts :math:`1/rate` apart, in the order attempts reach the gate; the copies of one attempt's message share
  one). A start within :data:`MAX_INLINE_WAIT` is waited for in the worker, after the claim and right before the
  call (:attr:`Permit.start`); a later one re-sends the message to show then, carrying its reservation
  (:func:`~scheduler_core.pipeline.attempts.flow_waiting`), so no worker thread is held while work waits. A
  message that comes back after its start has passed (a late queue poll, a busy instance) reserves a new one
  rather than start alongside the call that has the next; and an attempt whose job has an earlier attempt
  waiting for the key waits after it, so a job's attempts keep their order.
- ``parallelism``: the attempt takes one of the key's slots (:meth:`~scheduler_core.ports.FlowLimits.acquire`)
  for its call, renewed with its claim's lease (so a worker that dies gives its slot back a lease after its
  last renewal) and given back when the call ends. With none free, or while an earlier attempt of the same job
  waits for one (a job's attempts keep their order), it notes that it waits and looks again
  :data:`SLOT_RECHECK` later, then less often the longer it has waited (:func:`recheck_after`, at most
  :data:`MAX_SLOT_RECHECK` apart).

Nothing over a limit is dropped: it waits, and the time it waited (from its first arrival at the gate) is
recorded apart from the scheduler's lateness (:attr:`Permit.waited`). A waiting attempt is noted in the key's
state (:meth:`~scheduler_core.ports.FlowLimits.wait`), so that the watchdog, which finds it unclaimed, does not
take it for lost and send it again (:func:`waiting_until`). Error actions and notifications are not
limited. A job without ``flowControl`` makes no call here.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.model import Job
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.attempts import Attempts, flow_waiting, visibility_seconds
from scheduler_core.pipeline.messages import ExecutionMessage
from scheduler_core.pipeline.outcomes import ExecutionReport, Outcome
from scheduler_core.ports import Clock, FlowLimits
from scheduler_core.storage.keys import flow_partition

#: A message waiting for a reserved start is shown this many whole seconds (and up to one more) before it, so
#: that a queue poll (up to a second apart) and a busy instance still bring it in time.
SHOW_EARLY_SECONDS = 2
#: A reserved start at most this far ahead is waited for in the worker; a later one is re-sent to show then.
MAX_INLINE_WAIT = timedelta(seconds=SHOW_EARLY_SECONDS + 1)
#: An attempt that found no free slot looks again this many seconds later at first...
SLOT_RECHECK = 2
#: ...and less often the longer it has waited (a quarter of its wait so far), at most this many seconds apart:
#: a thousand attempts waiting behind a long call make a few looks a second, not hundreds.
MAX_SLOT_RECHECK = 30


def late_by(spacing: timedelta) -> timedelta:
    """How late past its reserved start a call may still start: 100 ms, or a fiftieth of the spacing when that
    is more, but never more than half the spacing (so that two calls start at least ``spacing`` less 100 ms
    apart at low rates, and at least half of it at high ones, where a busy instance's jitter would otherwise
    give most starts up)."""
    return min(spacing / 2, max(spacing / 50, timedelta(milliseconds=100)))


def recheck_after(waited: timedelta) -> int:
    """Seconds until an attempt that has waited ``waited`` for its key looks again."""
    return int(min(MAX_SLOT_RECHECK, max(SLOT_RECHECK, waited.total_seconds() / 4)))


#: How long a note that an attempt waits holds past its next look (written again at each look): a dead waiter's
#: note keeps its job's later attempts behind it, and the watchdog from sending it again, at most this long.
WAIT_NOTE = timedelta(seconds=30)


@dataclass
class Permit:
    """What the gate let through: the key and the slot held (None: no parallelism limit, or not limited at
    all), and how long the attempt waited for its key's limits."""

    flow: FlowLimits | None = None
    key: str = ""
    holder: str = ""
    limit: int = 0
    waited: timedelta | None = None
    reservation: str = ""  # the attempt whose rate reservation to drop once its call ran
    start: datetime | None = None  # the call starts no sooner (its rate's reserved start, a few seconds on at most)
    spacing: timedelta | None = None  # its rate's spacing (None: no rate)

    def start_at(self, now: datetime) -> datetime | None:
        """When the call may start (None: any time): its reserved start; or, when that passed more than
        :func:`late_by` ago (a claim slowed by a busy instance), a new one, so that the call does not start
        alongside the one that has the next start. Called right before the call, and again after each wait for it."""
        if self.flow is None or self.start is None or self.spacing is None or now - self.start <= late_by(self.spacing):
            return self.start
        self.start = self.flow.reserve(self.key, self.spacing, now, self.reservation, passed=self.start)
        return self.start

    def renew(self, now: datetime, lease: timedelta) -> None:
        """Keep the slot another ``lease`` (with the claim's renewals)."""
        if self.flow is not None and self.holder:
            self.flow.acquire(self.key, self.limit, self.holder, now + lease, now)

    def release(self) -> None:
        """Give the slot back and drop the rate reservation (idempotent)."""
        if self.flow is not None and self.holder:
            holder, self.holder = self.holder, ""
            self.flow.release(self.key, holder)
        if self.flow is not None and self.reservation:
            reservation, self.reservation = self.reservation, ""
            self.flow.forget(self.key, reservation)


def _waited(since: datetime, ready: datetime) -> timedelta | None:
    """How long an attempt that first came to the gate at ``since`` waited for its key's limits, which let it
    start at ``ready`` (None: it did not)."""
    return ready - since if ready > since else None


def place_of(message: ExecutionMessage) -> str:
    """Where an attempt stands among its job's: occurrence, then cause and attempt (sorts in the order they run)."""
    return f"{message.occurrence}|{message.cause_key}|{message.action}|{message.attempt:03d}"


def waiting_until(flow: FlowLimits, job: Job, message: ExecutionMessage, now: datetime) -> datetime | None:
    """Until when ``message``'s attempt is noted as waiting for its flow control key (None: it is not: a job
    without ``flowControl``, or an attempt that is not waiting). One point read, for flow-controlled jobs only."""
    key_name = job.definition.action.flow_key
    if key_name is None or not message.is_main:
        return None
    key = flow_partition(job.ref.collection.subscription, key_name)
    return flow.waiting(key, job.ref.identity, place_of(message), now)


class FlowGate:
    """Admits attempts within their key's limits (see the module). ``sleep`` waits in the worker (a seam)."""

    def __init__(
        self,
        flow: FlowLimits,
        attempts: Attempts,
        clock: Clock,
        sleep: Callable[[float], None],
        lease: timedelta,
    ) -> None:
        self.flow = flow
        self.attempts = attempts
        self.clock = clock
        self.sleep = sleep
        self.lease = lease

    def admit(self, job: Job, message: ExecutionMessage) -> Permit | ExecutionReport:
        """Let ``message``'s attempt through (a :class:`Permit`), or re-send it for when it may run and say so."""
        action = job.definition.action
        limits, key_name = action.flow_control, action.flow_key
        if limits is None or key_name is None or not message.is_main:
            return Permit()
        key = flow_partition(job.ref.collection.subscription, key_name)
        identity, place, now = job.ref.identity, place_of(message), self.clock()
        limit = "rate" if limits.parallelism is None else "parallelism"
        # A message shown before its due instant (queues count whole seconds) runs at it: so does its turn.
        due = message.due_time
        earliest = max(now, due) if due is not None else now
        since = message.flow.since_time if message.flow is not None else earliest
        permit = Permit(self.flow, key)
        permit.start = message.flow.at_time if message.flow is not None else None
        if limits.rate_per_second is not None:  # (its reservation is dropped once its call ran)
            permit.reservation = f"{identity}|{message.claim_row}"
            permit.spacing = timedelta(seconds=1 / limits.rate_per_second)
            if permit.start is None or now - permit.start > late_by(permit.spacing):  # none yet, or it passed
                permit.start = self.flow.reserve(key, permit.spacing, earliest, permit.reservation, passed=permit.start)
        first = self.flow.first_waiting(key, identity, now)
        if first is not None and first < place:  # an earlier attempt of its job waits: this one after it
            return self._later(job, message, since, permit.start, recheck_after(now - since), key_name, limit)
        if permit.start is not None and permit.start - now > MAX_INLINE_WAIT:
            delay = visibility_seconds(permit.start, now, SHOW_EARLY_SECONDS)
            return self._later(job, message, since, permit.start, delay, key_name, "rate")
        ready = max(earliest, permit.start) if permit.start is not None else earliest  # when the rate lets it start
        if limits.parallelism is not None:
            holder = f"{identity}|{message.claim_row}|{uuid.uuid4().hex[:12]}"  # each delivery its own
            if not self.flow.acquire(key, limits.parallelism, holder, now + self.lease, now):
                return self._later(job, message, since, permit.start, recheck_after(now - since), key_name, limit)
            permit.holder, permit.limit = holder, limits.parallelism
            if message.flow is not None:  # it took its slot after looking again
                ready = max(ready, now)
        if message.flow is not None or first == place:
            self.flow.done_waiting(key, identity, place)
        permit.waited = _waited(since, ready)
        return permit

    def _later(
        self,
        job: Job,
        message: ExecutionMessage,
        since: datetime,
        reserved: datetime | None,
        delay: int,
        key_name: str,
        limit: str,
    ) -> ExecutionReport:
        """Note that the attempt waits (so that the watchdog leaves it, and its job's later attempts wait after it)
        and re-send it to show in ``delay`` seconds, waiting since ``since`` (its reservation kept)."""
        now = self.clock()
        until = max(now + timedelta(seconds=delay), reserved or now) + WAIT_NOTE
        self.flow.wait(
            flow_partition(job.ref.collection.subscription, key_name), job.ref.identity, place_of(message), until
        )
        self.attempts.later(flow_waiting(message, since, reserved), max(0, delay))
        why = f"over the {limit} limit of flow control key '{key_name}'; looked at again in {math.ceil(delay)} s"
        reporting.attempt_throttled(job, message, why)
        return ExecutionReport(Outcome.THROTTLED, why, message.stable_execution_id())
