"""Execute: run one attempt of one occurrence, record it once, and never lose it.

The executor reloads the job the message names (messages never carry definitions or secrets), drops the
message when the job is gone, was changed (generation) or disabled since dispatch, claims the attempt
(the lease rule of :mod:`scheduler_core.model.claim`), runs the action, writes a history row, and updates the
job's counters with an ETag-guarded write. A failed attempt with retries left is re-sent with a delay;
after the last retry the error action runs under the same policy and the occurrence counts as faulted.
A job whose last occurrence completes ends ``Completed``; one whose last occurrence faults ends ``Faulted``.

Delivery: each attempt has one execution id (:meth:`ExecutionMessage.stable_execution_id`), the same on
every delivery. Its action runs at least once, and more than once only when a worker or storage dies
mid-call: a worker that takes over an expired claim records the lost holder's attempt in history ("worker
lost; the call may have been delivered") next to its own run. The holder renews its claim's 15-s lease every
5 s while it holds it (:mod:`scheduler_core.pipeline.leases`), and a worker that finds a lease over looks
again 10 s later before it takes the claim over (:mod:`scheduler_core.model.claim`), so a live call is not
taken over, however long it runs or storage stays away. A worker that takes an attempt over the
:data:`~scheduler_core.model.claim.MAX_TAKEOVERS`-th time (3) does not run it again: it records it as failed
("the worker running this attempt was lost 3 times; ..."), and the occurrence goes on to its retries (a
retry is a new attempt, with a count of its own) or its error action, counted once, as for any failed
attempt; so an action that crashes its worker stops doing so after 3 tries. The writes after the action (follow-up
messages, counters, then the history entry with the claim's completion) retry through a storage outage of
a minute (:mod:`scheduler_core.pipeline.durable`) and are idempotent: the history entry's key is fixed by
the claim (its holder and claim time) and the execution id; the counters write records the attempt in the
job in the same ETag-guarded write (:mod:`scheduler_core.pipeline.counters`), so a retried or repeated
counters write never counts an attempt twice.

Storage operations of an attempt that succeeds: the job read, the claim (an insert), the counters (one
ETag-guarded write over the job as read) and the history entry written into the claim's row as it is
completed (one merge, :meth:`~scheduler_core.ports.Claims.record`): four, besides the queue's receive and
delete; and one merge per 5 s that it holds its claim beyond its first 5 s (the lease's renewals). A
takeover costs two more requests (its first look: an insert that finds the claim, and its read). Its watch
entry costs nothing more when the watch look finds the attempt counted in the job it reads anyway, besides
the look itself, shared by the attempts of a shard that fall due in one 5-s slot
(:mod:`scheduler_core.pipeline.watchdog`).
"""

from __future__ import annotations

import logging
import math
import socket
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from scheduler_core.actions import ActionContext, ActionResult, ActionRunner
from scheduler_core.actions.outcome import outcome_message
from scheduler_core.model import (
    CLAIM_LEASE,
    ClaimOutcome,
    ClaimResult,
    HistoryEntry,
    HistoryStatus,
    Job,
    LostAttempt,
)
from scheduler_core.model.actions import Action
from scheduler_core.model.claim import MAX_TAKEOVERS, takeover_pause
from scheduler_core.pipeline import reporting
from scheduler_core.pipeline.attempts import Attempts
from scheduler_core.pipeline.durable import durably
from scheduler_core.pipeline.flow import FlowGate, Permit
from scheduler_core.pipeline.follow_ups import FollowUp, FollowUps
from scheduler_core.pipeline.leases import LeaseKeeper, Wait, wait_on_event
from scheduler_core.pipeline.live import live_job, stream_again
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.outcomes import ExecutionReport, Outcome, action_of, log_skip, repeat_of, trigger_of
from scheduler_core.pipeline.overlap import OverlapGate, gated
from scheduler_core.pipeline.stream import HistoryStream
from scheduler_core.ports import Claims, FlowLimits, Stores
from scheduler_core.storage.keys import history_row_key

__all__ = [
    "GIVEN_UP",
    "MAX_EARLY_WAIT",
    "WORKER_LOST",
    "ExecutionReport",
    "Executor",
    "FollowUp",
    "Outcome",
    "given_up_result",
    "history_entry",
]

log = logging.getLogger("scheduler_core.execute")

#: A message that appears before its due time (queues count whole seconds) is held this long at most.
MAX_EARLY_WAIT = timedelta(seconds=3)
#: The result of an error-action attempt whose job no longer has an error action.
NO_ERROR_ACTION = ActionResult(
    False,
    outcome_message("Unknown", "Not run", "the job has no error action any more (removed since this attempt was sent)"),
)
#: The history message of an attempt whose worker died (or lost storage) before recording it.
WORKER_LOST = "worker lost; the call may have been delivered"
#: The start of the history message of an attempt given up after its workers were lost
#: :data:`~scheduler_core.model.claim.MAX_TAKEOVERS` times.
GIVEN_UP = "the worker running this attempt was lost"


def given_up_result() -> ActionResult:
    """The result of an attempt whose workers were lost :data:`MAX_TAKEOVERS` times: failed, not run again."""
    return ActionResult(
        False,
        f"{GIVEN_UP} {MAX_TAKEOVERS} times; not run again: its action most likely stops the worker that runs it "
        "(a native crash, memory exhausted). Each of those calls may have been delivered",
    )


Clock = Callable[[], datetime]


def history_entry(
    job: Job,
    message: ExecutionMessage,
    execution_id: str,
    result: ActionResult,
    claimed_at: datetime,
    started: datetime,
    ended: datetime,
    note: str = "",
    flow_wait: timedelta | None = None,
) -> HistoryEntry:
    """The history row of an attempt that ran; its key is fixed by the claim (a retried write is one row).
    ``note`` is what the attempt decided besides (a job paused by ``pauseAfterFailures``); ``flow_wait`` how
    long it waited for its flow control key's limits."""
    text = result.message
    if message.missed > 1:
        text += f" (late run standing for {message.missed} occurrences missed while the service was down)"
    elif message.cause == Cause.MANUAL:
        text += " (run on demand)"
    elif message.cause == Cause.BACKFILL:
        text += " (backfill)"
    elif message.cause == Cause.REPLAY:
        text += " (replay)"
    if message.notification is not None:
        text += f" ({message.notification} notification)"
    if message.poll is not None:
        text += f" (the operation's outcome, after {message.poll.number} poll(s))"
    if note:
        text += f"; {note}"
    return HistoryEntry(
        execution_id=execution_id,
        row_key=history_row_key(claimed_at, execution_id),  # fixed per holder: a retried write is one row
        start_time=started,
        end_time=ended,
        expected_execution_time=message.occurrence_time,
        action_name=message.action_name,
        status=HistoryStatus.COMPLETED if result.succeeded else HistoryStatus.FAILED,
        message=text,
        retry_count=message.attempt,
        repeat_count=repeat_of(job, message),
        trigger=trigger_of(message),
        due_time=message.due_time if message.due else None,
        flow_wait=flow_wait,
    )


def wait_to_start(
    message: ExecutionMessage, permit: Permit | None, clock: Clock, sleep: Callable[[float], None]
) -> datetime:
    """Wait until the attempt's call may start, and return that instant: its due instant when it came a little
    early (at most :data:`MAX_EARLY_WAIT`: queues count whole seconds), and its flow control rate's start
    (``permit``: :meth:`Permit.start_at`), asked again after each wait for it, so that a call never starts
    further past its start than :func:`~scheduler_core.pipeline.flow.late_by`, however late the worker wakes
    (one that overslept takes a new start and waits for it)."""
    due = message.due_time
    early = due - clock() if due is not None else timedelta(0)
    if timedelta(0) < early <= MAX_EARLY_WAIT:
        sleep(early.total_seconds())
    start = permit.start_at(clock()) if permit is not None else None
    while permit is not None and start is not None and start > clock():
        sleep((start - clock()).total_seconds())
        start = permit.start_at(clock())
    return clock()


class Executor:
    """Runs attempts (see the module). ``flow``: flow control keys' state (None: none, as in tests that build an
    executor by hand; ``wiring.build`` always gives it); ``stream``: the history stream (None: off)."""

    def __init__(
        self,
        stores: Stores,
        claims: Claims,
        runner: ActionRunner,
        attempts: Attempts,
        clock: Clock,
        worker: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        lease: timedelta = CLAIM_LEASE,
        wait: Wait = wait_on_event,
        app_host: str = "",
        flow: FlowLimits | None = None,
        stream: HistoryStream | None = None,
    ) -> None:
        self.stores = stores
        self.claims = claims
        self.runner = runner
        self.attempts = attempts  # every attempt this one sends (retries, error actions, released ones) goes there
        self.gate = OverlapGate(stores, claims, attempts, clock, lease)
        self.follow_ups = FollowUps(stores, self.gate, clock)
        self.clock = clock
        self.worker = worker or f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
        self.sleep = sleep
        self.lease = lease
        self.wait = wait  # the lease keeper's wait between renewals (simulated time in tests)
        self.app_host = app_host  # the app's host name, for @{historyUrl}
        self.flow = FlowGate(flow, attempts, clock, sleep, lease) if flow is not None else None
        self.stream = stream  # the history stream (None: off): a done attempt's records are sent again

    def execute(self, message: ExecutionMessage) -> ExecutionReport:
        """Run one attempt (see the module's docstring)."""
        live = live_job(self.stores, message, self.stream)
        if isinstance(live, ExecutionReport):
            return live
        permit = self.flow.admit(live, message) if self.flow is not None else Permit()
        if isinstance(permit, ExecutionReport):
            return permit
        try:
            return self._admitted(live, message, permit)
        finally:
            permit.release()  # (given back when its call ended; here too when it did not run)

    def _admitted(self, job: Job, message: ExecutionMessage, permit: Permit) -> ExecutionReport:
        """Run an attempt within its flow control key's limits (``permit``): its overlap policy, claim and run."""
        if gated(job, message):
            admitted = self.gate.admit(job, message)
            if isinstance(admitted, ExecutionReport):
                return admitted
            job = admitted
        execution_id = message.stable_execution_id()
        claimed_at, token = self.clock(), uuid.uuid4().hex
        result = self._claim(job, message, claimed_at, token)
        if result.outcome is ClaimOutcome.DONE:
            stream_again(self.stores, self.stream, job, execution_id)  # its worker may have died before sending them
            log_skip(job, message, Outcome.DUPLICATE, "already ran")
            return ExecutionReport(Outcome.DUPLICATE, execution_id=execution_id)
        claim = result.claim
        if result.outcome is not ClaimOutcome.CLAIMED or claim is None:
            # Look again once the holder's lease has ended (it may die): then this delivery takes over.
            wait = (result.lease_until or claimed_at + self.lease) - self.clock()
            delay = max(1, math.ceil(wait.total_seconds()) + 1)
            self.attempts.later(message, delay)
            log_skip(job, message, Outcome.BUSY, f"another worker runs it; looked at again in {delay} s")
            return ExecutionReport(Outcome.BUSY, execution_id=execution_id)
        # The claim is this worker's: its lease is renewed until the write that completes it.
        renew_slot = (lambda now: permit.renew(now, self.lease)) if permit.holder else None
        keeper = LeaseKeeper(
            self.claims, claim, self.lease, self.clock, wait=self.wait, name=message.attempt_key, renewed=renew_slot
        )
        keeper.start()
        try:
            return self._run_claimed(job, message, execution_id, result.lost, keeper, permit)
        finally:
            keeper.stop()  # also when the attempt fails with an exception: its lease then runs out

    def _claim(self, job: Job, message: ExecutionMessage, now: datetime, token: str) -> ClaimResult:
        """Claim the attempt (the lease rule). A lease found over is looked at again :func:`takeover_pause`
        later, and taken over only if it is still over: a live holder that could not renew during a storage
        outage renews first once storage answers again (:mod:`scheduler_core.model.claim`)."""
        identity, row = job.ref.identity, message.claim_row
        result = durably(
            "claim",
            lambda: self.claims.claim(identity, row, self.worker, now, self.lease, token, take_over=False),
        )
        if result.outcome is not ClaimOutcome.EXPIRED:
            return result
        self.sleep(takeover_pause(self.lease).total_seconds())
        later = self.clock()
        return durably("claim", lambda: self.claims.claim(identity, row, self.worker, later, self.lease, token))

    def _run_claimed(
        self,
        job: Job,
        message: ExecutionMessage,
        execution_id: str,
        lost: LostAttempt | None,
        keeper: LeaseKeeper,
        permit: Permit,
    ) -> ExecutionReport:
        """Run an attempt this worker has claimed (``lost``: the holder it took the claim over from), and
        complete its claim with ``keeper``'s latest version of it; its flow control slot (``permit``) is given
        back as soon as its call ends."""
        given_up = False
        if lost is not None:
            if message.attempt_key in job.counted:
                return self._counted_by_lost(job, message, execution_id, lost, keeper)
            # It made the call (one beyond gave the attempt up: no call); a lost poll is a read made again,
            # not recorded (the history shows the operation, once).
            if lost.takeovers <= MAX_TAKEOVERS and message.poll is None:
                self._record_lost(job, message, execution_id, lost)
            given_up = lost.takeovers >= MAX_TAKEOVERS
        job_action = job.definition.action
        action = action_of(job, message)
        outcome, started, ended = self._call(job, message, execution_id, action, given_up, permit)
        permit.release()
        # From here on the call may have been delivered: every write retries through an outage. What
        # follows the attempt (messages, counters) goes first; the history entry last, in the same write
        # that completes the claim, so a done claim always has its entry and everything that follows.
        follow = self.follow_ups.after(job, message, outcome, job_action, started, ended)
        step, retry_at, outcome = follow.step, follow.retry_at, follow.outcome or outcome
        claim = keeper.stop()  # its latest version: the record is guarded by it
        if follow.polling:  # the operation runs on: its poll is sent; its outcome is recorded when it ends
            durably("claim completion", lambda: self.claims.complete(claim, ended))
            done = Outcome.POLLING
        else:
            began = message.poll.since_time if message.poll is not None else started  # the operation's start
            record = history_entry(
                job, message, execution_id, outcome, claim.claimed_at, began, ended, follow.note, permit.waited
            )
            durably("history", lambda: self.claims.record(claim, job.ref, record, ended))
            if follow.delete is not None:
                self.follow_ups.delete_completed(follow.delete)
            done = Outcome.SUCCEEDED if outcome.succeeded else Outcome.FAILED
        policy = job_action.retry_policy
        reporting.attempt_ran(
            job,
            message,
            action,
            policy,
            done.value,
            execution_id,
            outcome,
            started,
            ended,
            step,
            retry_at,
            permit.waited,
        )
        return ExecutionReport(done, outcome.message, execution_id, step.value)

    def _counted_by_lost(
        self, job: Job, message: ExecutionMessage, execution_id: str, lost: LostAttempt, keeper: LeaseKeeper
    ) -> ExecutionReport:
        """A takeover of an attempt its lost holder ran (or gave up), sent what follows and counted: only its
        record, which completes the claim, was left to write (its entry, if it wrote one, is kept)."""
        if lost.takeovers > MAX_TAKEOVERS:
            self._record_given_up(job, message, execution_id, lost)
        else:
            self._record_lost(job, message, execution_id, lost, counted=True)
        self.gate.resend_released(job, message)
        claim = keeper.stop()
        durably("claim completion", lambda: self.claims.complete(claim, self.clock()))
        log_skip(job, message, Outcome.DUPLICATE, "recorded by a worker lost after it")
        return ExecutionReport(Outcome.DUPLICATE, "recorded by a worker lost after it", execution_id)

    def _call(
        self,
        job: Job,
        message: ExecutionMessage,
        execution_id: str,
        action: Action | None,
        given_up: bool,
        permit: Permit | None = None,
    ) -> tuple[ActionResult, datetime, datetime]:
        """Run the attempt's action (the result, when it started and ended), once :func:`wait_to_start` lets it;
        ``given_up``: its workers were lost
        :data:`MAX_TAKEOVERS` times, most likely its action stops them: not run again, recorded as failed (it
        goes on to its retries or error action as any failed attempt)."""
        if given_up:
            now = self.clock()
            reporting.attempt_given_up(job, message, execution_id, MAX_TAKEOVERS)
            return given_up_result(), now, now
        started = wait_to_start(message, permit, self.clock, self.sleep)
        context = ActionContext(
            job_id=job.ref.resource_id,
            collection_id=job.ref.collection.resource_id,
            expected_time=message.occurrence_time,
            execution_id=execution_id,
            retry_count=message.attempt,
            started_at=started,
            expand_placeholders=job.definition.action.expand_placeholders or message.notification is not None,
            message_id=message.message_id(),
            failure=message.failure,
            poll=message.poll.url if message.poll is not None else "",
            app_host=self.app_host,
        )
        # An error action removed since its attempt was sent (only an on-demand run gets here) fails as before.
        with reporting.attempt_span(job, message, action) as span:
            outcome = span.record(self.runner.run(action, context) if action is not None else NO_ERROR_ACTION)
        return outcome, started, self.clock()

    def _record_lost(
        self, job: Job, message: ExecutionMessage, execution_id: str, lost: LostAttempt, counted: bool = False
    ) -> None:
        """Record the attempt of a holder that died mid-call, unless it recorded it itself before dying
        (``counted``: it died after counting the attempt, before recording its outcome)."""
        if counted:
            why = "ran it and counted it, then stopped before recording its outcome"
        elif lost.takeovers >= MAX_TAKEOVERS:
            why = f"stopped before recording it; not run again: its workers were lost {MAX_TAKEOVERS} times"
        else:
            why = "stopped before recording it; run again"
        record = HistoryEntry(
            execution_id=execution_id,
            row_key=history_row_key(lost.claimed_at, execution_id),  # the row the lost holder would have written
            start_time=lost.claimed_at,
            end_time=self.clock(),
            expected_execution_time=message.occurrence_time,
            action_name=message.action_name,
            status=HistoryStatus.FAILED,
            message=f"{WORKER_LOST} (worker {lost.worker} {why})",
            retry_count=message.attempt,
            repeat_count=repeat_of(job, message),
            trigger=trigger_of(message),
        )
        durably("history of a lost attempt", lambda: self.stores.history.add_if_absent(job.ref, record))
        reporting.worker_lost(
            job, message, execution_id, lost.worker, again=not counted and lost.takeovers < MAX_TAKEOVERS
        )

    def _record_given_up(self, job: Job, message: ExecutionMessage, execution_id: str, lost: LostAttempt) -> None:
        """Write the entry of a holder that gave an attempt up (its workers lost too often) and counted it, but
        stopped before recording it: the entry it would have written, at its key."""
        record = history_entry(
            job, message, execution_id, given_up_result(), lost.claimed_at, lost.claimed_at, self.clock()
        )
        durably("history of a given-up attempt", lambda: self.stores.history.add_if_absent(job.ref, record))
