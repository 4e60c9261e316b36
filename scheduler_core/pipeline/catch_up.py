"""``missedRunPolicy``: which occurrences missed while the service was down run, as a pure plan
(:func:`plan`) that the dispatcher applies (it writes the ``Skipped`` entry, then sends the runs)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from scheduler_core import policies
from scheduler_core.definitions import format_duration
from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus, Job
from scheduler_core.model.job import MissedRunMode
from scheduler_core.pipeline.messages import EXECUTION_ID_NAMESPACE
from scheduler_core.recurrence import OccurrenceSeries, format_instant
from scheduler_core.storage.keys import history_row_key

#: The most missed occurrences ``missedRunPolicy`` RunAll runs after one outage (those of the window, or the
#: first ones missed when it has none).
MAX_MISSED_RUNS = 1000


@dataclass(frozen=True)
class Plan:
    """What a catch-up does: the ``runs`` it sends now (each occurrence, how many missed occurrences it stands
    for, and whether the series ends with it), the ``Skipped`` entry of those it does not run (None: none), and
    the first occurrence after now (``following``; None: the series is over)."""

    runs: tuple[tuple[datetime, int, bool], ...]
    skipped: HistoryEntry | None
    following: datetime | None


def plan(job: Job, occurrence: datetime, now: datetime, schedule: OccurrenceSeries) -> Plan:
    """The catch-up of the occurrences missed from ``occurrence`` to ``now`` that ``missedRunPolicy`` runs
    (:func:`policies.catch_up`; at most :data:`MAX_MISSED_RUNS`, the first ones), and the one ``Skipped``
    history entry of those it does not run (mode Skip, older than the window, beyond that many;
    :func:`policies.dropped_reason`)."""
    policy = job.definition.missed_run_policy
    window = policy.window_length
    first: datetime | None = occurrence
    if window is not None and now - window > occurrence:
        first = schedule.after(now - window, inclusive=True)
    missed: list[datetime] = []
    instant = first
    if policy.mode is not MissedRunMode.SKIP:
        while instant is not None and instant <= now and len(missed) < MAX_MISSED_RUNS:
            missed.append(instant)
            instant = schedule.after(instant)
    following = schedule.after(now) if instant is None or instant <= now else instant
    decided = policies.catch_up(policy, missed, now)
    dropped: list[policies.MissedSpan] = []
    if policy.mode is MissedRunMode.SKIP:
        dropped.append(missed_span(schedule, occurrence, following, now, f"missedRunPolicy {policy.mode}"))
    else:
        if first != occurrence:
            written = format_duration(policy.window.value, policy.window.style) if policy.window else ""
            dropped.append(
                missed_span(schedule, occurrence, first, now, f"older than the missedRunPolicy window {written}")
            )
        # RunAll: beyond the runs of one outage (RunOnce's one run stands for them: they are not skipped)
        if policy.mode is MissedRunMode.RUN_ALL and instant is not None and instant <= now:
            why = f"beyond the {MAX_MISSED_RUNS} runs of one missedRunPolicy {policy.mode} catch-up"
            dropped.append(missed_span(schedule, instant, following, now, why))
    dropped = [span for span in dropped if span.count != 0]
    runs = tuple(
        (
            late,
            decided.stands_for if index == 0 and decided.stands_for > 1 else 0,
            following is None and index == len(decided.run) - 1,
        )
        for index, late in enumerate(decided.run)
    )
    return Plan(runs, skipped_entry(job, schedule, dropped, now) if dropped else None, following)


def missed_span(
    schedule: OccurrenceSeries, first: datetime, end: datetime | None, now: datetime, why: str
) -> policies.MissedSpan:
    """The occurrences from ``first`` up to ``end`` (excluded; None: up to ``now``) that do not run: walked
    one by one up to :data:`MAX_MISSED_RUNS` (more are counted by their ordinals, never walked), so a long
    outage costs no more than a RunAll catch-up does."""
    count, last = 0, None
    instant: datetime | None = first
    while instant is not None and (instant < end if end is not None else instant <= now):
        if count == MAX_MISSED_RUNS:
            try:
                total = schedule.ordinal(end) - schedule.ordinal(first) if end is not None else None
            except ValueError:
                total = None
            return policies.MissedSpan(first, None, total, why, before=end)
        count, last = count + 1, instant
        instant = schedule.after(instant)
    return policies.MissedSpan(first, last, count, why)


def skipped_entry(
    job: Job, schedule: OccurrenceSeries, spans: list[policies.MissedSpan], now: datetime
) -> HistoryEntry:
    """The one ``Skipped`` history entry of a catch-up's dropped occurrences, keyed by the first of them
    (so a scan repeated after a failure writes it once)."""
    first = min(span.first for span in spans)
    execution_id = uuid.uuid5(
        EXECUTION_ID_NAMESPACE, f"{job.ref.partition_key}|{job.ref.row_key}|{format_instant(first)}|missed"
    ).hex
    try:
        repeat = schedule.ordinal(first)
    except ValueError:
        repeat = 0
    return HistoryEntry(
        execution_id=execution_id,
        row_key=history_row_key(first, execution_id),
        start_time=now,
        end_time=now,
        expected_execution_time=first,
        action_name=ActionName.MAIN,
        status=HistoryStatus.SKIPPED,
        message=policies.dropped_reason(spans),
        retry_count=0,
        repeat_count=repeat,
    )
