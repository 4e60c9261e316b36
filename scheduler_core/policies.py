"""The pipeline policies of api-version 2026-12-01-preview, as pure decisions: given a job's typed policy
values (``JobDefinition.overlap_policy``, ``.missed_run_policy``, ``.pause_after_failures``,
``.delete_after_completion``) and the facts the dispatcher or executor has at hand, what happens.

No I/O here: the dispatcher and the executor read the facts (the job, its history) and act on the answer.
Each default (``AllowAll``, ``RunOnce`` without a window, no pause, no delete) answers what a 2016-03-01 job
does, so a job that names no policy is run exactly as before.

* :func:`on_overlap`: an occurrence due while the previous one is unfinished runs, waits or is skipped
  (:func:`unfinished_until`: when an unfinished occurrence is taken as lost);
* :func:`catch_up`: of the occurrences missed while the service was down, which run (``missedRunPolicy``);
  :func:`dropped_reason`: the one ``Skipped`` history entry of those that do not;
* :func:`occurrence_end`: whether an attempt ends its occurrence, and how (completed or faulted);
* :func:`consecutive_faults` / :func:`pauses`: ``pauseAfterFailures``;
* :func:`deletes`: ``deleteAfterCompletion``;
* :func:`backfill_occurrences` over :func:`past_schedule`: the occurrences of a past window a backfill runs
  (at most :data:`MAX_BACKFILL`);
* :class:`BackfillLimits`, :func:`live_backfills`, :func:`check_backfill_limits`, :func:`backfill_slots`: how
  many backfill occurrences may be outstanding, and when each may start (the plan's rate), decided over the
  rows of a collection's backfill ledger (:class:`LedgerEntry`, stored by
  :mod:`scheduler_core.pipeline.counters`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from scheduler_core.errors import QuotaExceededError, ValidationError
from scheduler_core.model.actions import NotificationKind
from scheduler_core.model.history import HistoryEntry, Trigger
from scheduler_core.model.job import Job, MissedRunMode, MissedRunPolicy, OverlapPolicy
from scheduler_core.model.retry import JITTER_FRACTION, RetryPolicy, RetryType
from scheduler_core.model.states import ActionName, HistoryStatus, JobState
from scheduler_core.recurrence import OccurrenceSeries, format_instant
from scheduler_core.schedules import definition_schedule

#: The most occurrences one backfill runs, whatever the plan; a window holding more is refused (400). The plans'
#: limits on outstanding backfill occurrences (:class:`BackfillLimits`) may refuse fewer (409).
MAX_BACKFILL = 1000
#: An occurrence found this much after its instant was missed (the service was down): the dispatcher scans
#: ahead of time (its lookahead), so an occurrence it sends on time is never this late.
MISSED_AFTER = timedelta(seconds=60)


# ------------------------------------------------------------------------------------------------ overlap


class Start(enum.StrEnum):
    """What an occurrence due now does (:func:`on_overlap`)."""

    RUN = "run"
    """It runs now."""
    SKIP = "skip"
    """It does not run; recorded in history as ``Skipped`` with the reason."""
    WAIT = "wait"
    """It runs when the unfinished occurrence finishes (``BufferOne``: the one that waits)."""


@dataclass(frozen=True)
class OverlapVerdict:
    start: Start
    reason: str = ""


def on_overlap(
    policy: OverlapPolicy,
    occurrence: datetime,
    unfinished: datetime | None,
    waiting: datetime | None = None,
) -> OverlapVerdict:
    """What ``occurrence`` does under ``policy`` when ``unfinished`` is the occurrence whose attempts (main
    action, retries, error action) are not over (None: none is) and ``waiting`` the occurrence already
    buffered behind it (None: none).

    ``AllowAll`` runs it anyway; ``Skip`` skips it; ``BufferOne`` lets it wait, unless another already waits:
    then it is skipped (at most one waits, the earlier). An occurrence never overlaps itself (a redelivery)."""
    if policy is OverlapPolicy.ALLOW_ALL or unfinished is None or unfinished == occurrence:
        return OverlapVerdict(Start.RUN)
    running = f"the occurrence of {format_instant(unfinished)} was still running"
    if policy is OverlapPolicy.SKIP:
        return OverlapVerdict(Start.SKIP, f"Skipped: {running} (overlapPolicy Skip)")
    if waiting is None or waiting == occurrence:
        return OverlapVerdict(Start.WAIT, f"waits: {running} (overlapPolicy BufferOne)")
    return OverlapVerdict(
        Start.SKIP,
        f"Skipped: {running} and the occurrence of {format_instant(waiting)} already waits for it "
        "(overlapPolicy BufferOne)",
    )


#: Added to :func:`unfinished_until`: attempts that waited in a queue backlog, and the watchdog's re-sends.
UNFINISHED_SLACK_LEASES = 10
#: The time one attempt is reckoned to hold its claim in :func:`unfinished_until`, when the claim's lease is
#: shorter: the call's deadline (60 s by default) and a minute of writes after it. (A claim's lease is renewed
#: while its attempt runs, so it no longer bounds the attempt; this was the 2-minute lease's value.)
ATTEMPT_HOLD = timedelta(minutes=2)


def unfinished_until(occurrence: datetime, retry: RetryPolicy, lease: timedelta) -> datetime:
    """The latest instant the attempts of ``occurrence`` can still be going on under the job's retry policy
    (the main action's tries and their delays, then the error action's under the same policy, each attempt
    held at most a claim ``lease``, or :data:`ATTEMPT_HOLD` when that is longer), with a slack of
    :data:`UNFINISHED_SLACK_LEASES` such holds. An occurrence a job still names as unfinished after that was
    lost (its message dropped as poison, say): it no longer makes later occurrences overlap, so a job is never
    skipped forever."""
    hold = max(lease, ATTEMPT_HOLD)
    attempts = 1 if retry.kind is RetryType.NONE else retry.retry_count + 1
    waits = sum((retry.delay(attempt) for attempt in range(attempts - 1)), timedelta())
    if retry.kind is RetryType.EXPONENTIAL:
        waits *= 1 + JITTER_FRACTION
    one_action = waits + attempts * hold
    return occurrence + 2 * one_action + UNFINISHED_SLACK_LEASES * hold


# ------------------------------------------------------------------------------------------- missed runs


@dataclass(frozen=True)
class CatchUp:
    """What :func:`catch_up` decided: ``run``, the missed occurrences sent now, in order; ``stands_for``, how
    many occurrences the first of them stands for (RunOnce: all that were kept; else 1); ``dropped``, the
    missed occurrences that do not run (mode Skip, or older than the window)."""

    run: tuple[datetime, ...]
    stands_for: int
    dropped: int

    @property
    def reason(self) -> str:
        """Why occurrences were dropped (empty when none were)."""
        if not self.dropped:
            return ""
        return f"{self.dropped} occurrence(s) missed while the service was down not run (missedRunPolicy)"


@dataclass(frozen=True)
class MissedSpan:
    """Missed occurrences that do not run, and why (``why``): from ``first`` to ``last``, ``count`` of them;
    when there were more than the dispatcher walks one by one, ``last`` is None and ``before`` is the first
    occurrence after them (then ``count`` is None too when the series ended meanwhile)."""

    first: datetime
    last: datetime | None
    count: int | None
    why: str
    before: datetime | None = None


def dropped_reason(spans: Sequence[MissedSpan]) -> str:
    """The message of the one ``Skipped`` history entry a catch-up writes for the missed occurrences that
    ``missedRunPolicy`` does not run (however many: one entry per catch-up), e.g. "Skipped: 11 occurrence(s)
    from 2026-12-01T10:00:00Z to 2026-12-01T10:10:00Z missed while the service was down (missedRunPolicy
    Skip)". Empty when ``spans`` is."""
    if not spans:
        return ""
    ordered = sorted(spans, key=lambda span: span.first)
    counts = [span.count for span in ordered]
    total = None if any(count is None for count in counts) else sum(c for c in counts if c is not None)
    how_many = f"{total} occurrence(s)" if total is not None else "the occurrences"
    end = ordered[-1]
    if end.last is not None:
        until = f" to {format_instant(end.last)}"
    elif end.before is not None:
        until = f" up to {format_instant(end.before)} (excluded)"
    else:
        until = " on"
    why = "; ".join(span.why for span in ordered)
    return (
        f"Skipped: {how_many} from {format_instant(ordered[0].first)}{until} missed while the service was down ({why})"
    )


def is_missed(occurrence: datetime, now: datetime) -> bool:
    """Whether ``occurrence``, found due at ``now``, was missed (see :data:`MISSED_AFTER`)."""
    return now - occurrence >= MISSED_AFTER


def catch_up(policy: MissedRunPolicy, missed: Sequence[datetime], now: datetime) -> CatchUp:
    """Which of ``missed`` (occurrences due before ``now`` that never fired, oldest first) run now.

    The ``window`` first drops every one older than ``now - window``. ``RunOnce`` then runs the oldest kept
    one, standing for all kept ones (Azure Scheduler's coalescing: with no window, what every 2016-03-01 job
    does); ``RunAll`` runs each kept one, in order; ``Skip`` runs none (the schedule resumes at the next
    future occurrence)."""
    ordered = sorted(missed)
    if policy.mode is MissedRunMode.SKIP:
        return CatchUp((), 0, len(ordered))
    window = policy.window_length
    kept = [instant for instant in ordered if window is None or now - instant <= window]
    dropped = len(ordered) - len(kept)
    if not kept:
        return CatchUp((), 0, dropped)
    if policy.mode is MissedRunMode.RUN_ONCE:
        return CatchUp((kept[0],), len(kept), dropped)
    return CatchUp(tuple(kept), 1, dropped)


# ------------------------------------------------------------------------------- occurrences and faults


class End(enum.StrEnum):
    """How an occurrence ended."""

    COMPLETED = "completed"
    """Its main action succeeded (on a try or a retry)."""
    FAULTED = "faulted"
    """Its main action failed after every retry (its error action, if any, has run)."""


def occurrence_end(main: bool, succeeded: bool, retry_follows: bool, error_action_follows: bool) -> End | None:
    """How the attempt just made ends its occurrence (None: the occurrence goes on: a retry or the error
    action follows). ``main``: the attempt ran the main action (else the error action)."""
    if retry_follows or error_action_follows:
        return None
    if main and succeeded:
        return End.COMPLETED
    return End.FAULTED


def consecutive_faults(rows: Iterable[HistoryEntry], before: datetime | None = None) -> int:
    """How many occurrences in a row ended faulted, counting back from the latest in ``rows`` (a job's
    history), only those before ``before`` when given. An occurrence completed when any of its main-action
    rows completed; skipped occurrences (status ``Skipped``), runs on demand and backfills (their entries'
    ``trigger``) count neither way."""
    outcomes: dict[datetime, bool] = {}
    for row in rows:
        when = row.expected_execution_time
        if when is None or (before is not None and when >= before) or row.status == SKIPPED:
            continue
        if row.trigger is not Trigger.SCHEDULED or row.action_name is ActionName.NOTIFICATION:
            continue  # a run on demand, a backfill or a replay (outside the schedule), or a notification
        if row.repeat_count == 0 or row.message.endswith("(run on demand)"):
            continue  # a run on demand recorded before entries carried their trigger
        completed = row.action_name == ActionName.MAIN and row.status == HistoryStatus.COMPLETED
        outcomes[when] = outcomes.get(when, False) or completed
    count = 0
    for when in sorted(outcomes, reverse=True):
        if outcomes[when]:
            break
        count += 1
    return count


def pauses(pause_after_failures: int | None, end: End | None, faults_before: int) -> bool:
    """Whether the job is disabled now: its occurrence just ended faulted and, with the ``faults_before`` it
    (the occurrences in a row before it that faulted), ``pause_after_failures`` occurrences in a row did."""
    return pause_after_failures is not None and end is End.FAULTED and faults_before + 1 >= pause_after_failures


def notice(end: End | None, faults_before: int) -> NotificationKind | None:
    """The notification an occurrence's end sends (``notifications``): ``onFailure`` when it faulted after one
    that did not (the first of a streak), ``onRecovery`` when it completed after ``faults_before`` faulted ones
    in a row; None otherwise (one notice per streak, not one per faulted occurrence)."""
    if end is End.FAULTED and faults_before == 0:
        return NotificationKind.ON_FAILURE
    if end is End.COMPLETED and faults_before > 0:
        return NotificationKind.ON_RECOVERY
    return None


def succeeded(rows: Iterable[HistoryEntry], occurrence: datetime) -> bool:
    """Whether the scheduled ``occurrence`` has succeeded, by the job's history ``rows``: its main action
    completed, on the schedule's attempts or a replay's (``notifications.deadline`` is met)."""
    return any(
        row.expected_execution_time == occurrence
        and row.action_name is ActionName.MAIN
        and row.status == HistoryStatus.COMPLETED
        and row.trigger in (Trigger.SCHEDULED, Trigger.REPLAY)
        for row in rows
    )


def pause_reason(pause_after_failures: int) -> str:
    """The reason a paused job shows (its history and its status)."""
    return (
        f"Disabled after {pause_after_failures} consecutive faulted occurrence(s) (pauseAfterFailures "
        f"{pause_after_failures}); enable the job to resume"
    )


def deletes(delete_after_completion: bool, final_state: JobState | None) -> bool:
    """Whether the job is removed: it asked to be (``deleteAfterCompletion``) and has just completed (a job
    that faults is kept, so its history can be read)."""
    return delete_after_completion and final_state == JobState.COMPLETED


#: The status of a skipped occurrence's history entry (``HistoryStatus.SKIPPED`` once the pipeline records
#: skips; its text is the contract).
SKIPPED = "Skipped"


# ----------------------------------------------------------------------------------------------- backfill


def past_schedule(job: Job, since: datetime) -> OccurrenceSeries:
    """The job's schedule as it would have fired since ``since``: the job's own schedule (its start, or when
    it was written when it names none, anchors its series; its jitter and exclusions apply) without the
    rule that a schedule begins when it is written."""
    definition = job.definition
    anchored = replace(definition, start_time=definition.start_time or job.defined_at)
    return definition_schedule(anchored, min(job.defined_at, since), job.ref.identity)


def backfill_occurrences(
    schedule: OccurrenceSeries, start: datetime, end: datetime, field: str = "endTime"
) -> list[datetime]:
    """The occurrences of ``schedule`` that fire from ``start`` (included) to ``end`` (excluded), in order (at
    the instants they fire at: their jitter applied, excluded ones left out). More than
    :data:`MAX_BACKFILL` is a 400 naming ``field``."""
    found: list[datetime] = []
    instant = schedule.after(start, inclusive=True)
    while instant is not None and instant < end:
        if len(found) == MAX_BACKFILL:
            raise ValidationError(
                field,
                f"the window from {format_instant(start)} to {format_instant(end)} holds more than "
                f"{MAX_BACKFILL} occurrences of the job; backfill at most {MAX_BACKFILL} at once",
            )
        found.append(instant)
        instant = schedule.after(instant)
    return found


# ---------------------------------------------------------------------------------------- backfill limits


@dataclass(frozen=True)
class BackfillLimits:
    """A plan's limits on backfills (the values: :func:`scheduler_core.service.plans.backfill_limits`).

    ``per_job`` and ``per_collection`` bound the *outstanding* backfill occurrences (sent, and not yet run to
    completion: their attempts, retries and error action not over) of one job and of all the jobs of one
    collection; a backfill that would go over either is refused whole (409 ``QuotaExceeded``,
    :func:`check_backfill_limits`). ``starts`` per ``per`` is the rate: at most that many backfill occurrences
    of one job start in each span of ``per`` (:func:`backfill_slots`)."""

    plan: str
    per_job: int
    per_collection: int
    starts: int
    per: timedelta

    @property
    def gap(self) -> timedelta:
        """The time each backfill occurrence takes of its job's rate (``per / starts``)."""
        return self.per / self.starts

    @property
    def rate(self) -> str:
        """The rate in words ("10 per second", "1 per minute")."""
        unit = {1: "second", 60: "minute", 3600: "hour"}.get(int(self.per.total_seconds()))
        return f"{self.starts} per {unit}" if unit else f"{self.starts} per {self.per.total_seconds():g} s"


@dataclass(frozen=True)
class LedgerEntry:
    """One row of a collection's backfill ledger (stored by :mod:`scheduler_core.pipeline.counters`).

    An *occurrence* row (``occurrence`` set) is one backfill occurrence, from the moment its backfill is
    accepted until its attempts are over (the executor deletes it then): ``slot`` is the instant it may start
    at the earliest, ``deadline`` the instant after which the row no longer counts whatever happened to its
    occurrence (a message dropped as poison, a worker lost for good): its longest possible life
    (:func:`backfill_lifetime`) after its slot. ``chain``: run one after another (``Skip``, ``BufferOne``),
    each sent when the one before it ends (and, when ``gap`` is a second or more, at least ``gap`` after it);
    a chain's occurrences count while the first of them left (its *head*) is within its deadline, which the
    executor renews as it sends each (a chain whose head was lost sends nothing more).

    A *tail* row (``occurrence`` None), one per backfill, keeps the job's rate state after it (its pace,
    :func:`backfill_slots`, as ``slot`` and ``deadline``) until that instant has passed."""

    job_row: str
    backfill: str
    occurrence: datetime | None
    generation: int
    slot: datetime
    deadline: datetime
    chain: bool = False
    gap: timedelta = timedelta(0)
    #: The row's key as stored ("" for a row not yet stored).
    key: str = ""


def live_backfills(
    entries: Iterable[LedgerEntry], jobs: Mapping[str, Job], now: datetime
) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """Split a collection's ledger rows into those that count at ``now`` and those that no longer do (which
    may be removed). ``jobs`` are the jobs the rows name, by row key (a job missing from it is gone).

    An occurrence row counts while its message can still run it: its job exists, is enabled and has the
    generation the message carries (else the executor drops the message as stale), and it is within its
    deadline (a chain's: its head's). A tail row counts (for the rate only) until its deadline."""
    rows = list(entries)
    heads: dict[tuple[str, str], datetime] = {}
    for row in rows:
        if row.occurrence is not None and row.chain:
            chain = (row.job_row, row.backfill)
            head = heads.get(chain)
            if head is None or row.occurrence < head:
                heads[chain] = row.occurrence
    deadline_of_head = {
        (row.job_row, row.backfill): row.deadline
        for row in rows
        if row.occurrence is not None and row.chain and heads[(row.job_row, row.backfill)] == row.occurrence
    }
    live: list[LedgerEntry] = []
    dead: list[LedgerEntry] = []
    for row in rows:
        if row.occurrence is None:
            counts = row.deadline > now
        else:
            job = jobs.get(row.job_row)
            runnable = job is not None and job.state == JobState.ENABLED and job.generation == row.generation
            deadline = deadline_of_head[(row.job_row, row.backfill)] if row.chain else row.deadline
            counts = runnable and deadline > now
        (live if counts else dead).append(row)
    return live, dead


def outstanding_backfills(live: Iterable[LedgerEntry], job_row: str | None = None) -> int:
    """How many backfill occurrences ``live`` (rows that count, :func:`live_backfills`) holds: of the job
    whose row key is ``job_row``, or of every job (None)."""
    return sum(1 for row in live if row.occurrence is not None and (job_row is None or row.job_row == job_row))


def check_backfill_limits(
    limits: BackfillLimits, job: str, collection: str, of_job: int, of_collection: int, asked: int
) -> None:
    """Refuse a backfill of ``asked`` occurrences of ``job`` when it would take the job's outstanding
    backfill occurrences (``of_job`` now) over ``limits.per_job``, or its collection's (``of_collection``) over
    ``limits.per_collection``: a 409 ``QuotaExceeded`` naming the limit and its value."""
    breached = [
        ("maxOutstandingPerJob", limits.per_job, f"job '{job}'", of_job),
        ("maxOutstandingPerCollection", limits.per_collection, f"job collection '{collection}'", of_collection),
    ]
    for name, limit, what, already in breached:
        if already + asked > limit:
            raise QuotaExceededError(
                f"backfill limit {name} ({limit} on the {limits.plan} plan) exceeded: {what} has {already} "
                f"outstanding backfill occurrence(s) (sent, not yet run to completion) and this backfill asks for "
                f"{asked} more; backfill a smaller window, or again once they have run"
            )


@dataclass(frozen=True)
class BackfillSlots:
    """When new backfill occurrences of a job may start (:func:`backfill_slots`): ``slots``, one per
    occurrence, in order; ``paced_until``, the job's rate state after them (the next :func:`backfill_slots`
    of the job starts from it: a backfill's tail row keeps it)."""

    slots: tuple[datetime, ...]
    paced_until: datetime


def backfill_slots(
    live: Iterable[LedgerEntry], job_row: str, count: int, limits: BackfillLimits, now: datetime
) -> BackfillSlots:
    """The start slots of ``count`` new backfill occurrences of the job whose row key is ``job_row``, so that
    the backfill occurrences of one job start at most ``limits.starts`` per ``limits.per``, counted in the
    spans of ``limits.per`` that follow a send (a queue delay counts whole seconds).

    The rule is a leaky bucket (GCRA): each occurrence takes :attr:`BackfillLimits.gap` of the job's *pace*,
    which starts at ``now`` or where the job's earlier backfills left it (the latest ``slot`` of the tails in
    ``live``, rows that count); an occurrence may start once its pace is at most ``per - gap`` ahead of now.
    So ``starts`` may start at once, then one every ``gap`` (10 a second: 10 now, 10 within the next second,
    and so on; 1 a minute: one a minute)."""
    step = limits.gap
    burst = limits.per - step
    paced = max([now, *(row.slot for row in live if row.job_row == job_row and row.occurrence is None)])
    slots: list[datetime] = []
    for _ in range(count):
        slots.append(max(now, paced - burst))
        paced += step
    return BackfillSlots(tuple(slots), paced)


def backfill_lifetime(retry: RetryPolicy, lease: timedelta) -> timedelta:
    """The longest an occurrence's attempts can go on after it starts (:func:`unfinished_until`, its slack
    included): a ledger row no longer counts this long after its occurrence's slot."""
    return unfinished_until(_EPOCH, retry, lease) - _EPOCH


def backfill_deadlines(slots: Sequence[datetime], chain: bool, lifetime: timedelta) -> list[datetime]:
    """The deadlines of new ledger rows at ``slots``: each slot and a ``lifetime``; one after another
    (``chain``) the ``i``-th occurrence starts at the latest ``i`` lifetimes after its slot (each before it
    took one at most), so its deadline is ``i + 1`` lifetimes after it (the executor renews it when it sends
    the occurrence, a lifetime after then)."""
    return [slot + (index + 1 if chain else 1) * lifetime for index, slot in enumerate(slots)]


def start_delay(start: datetime, now: datetime) -> int:
    """The visibility delay (whole seconds) that shows a message sent at ``now`` no earlier than ``start``."""
    return max(0, math.ceil((start - now).total_seconds()))


#: Any instant: lifetimes are differences (:func:`unfinished_until` is the same for every occurrence).
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
