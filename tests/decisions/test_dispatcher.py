"""The dispatcher's decisions: which due-index entries fire, which are removed, which are left alone, how
downtime is coalesced, and what the watchdog does with an attempt it watches."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from scheduler_core.errors import StorageError
from scheduler_core.model import CLAIM_LEASE, ClaimState, DueEntry, JobState, claim_key
from scheduler_core.model.job import first_generation
from scheduler_core.pipeline.dispatch import ABANDONED_AFTER
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.pipeline.watchdog import WATCH_RECHECK, WATCH_UNCLAIMED_CHECKS
from scheduler_core.pipeline.watches import WATCH_GRACE
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import due_row_key
from tests.support.harness import START, Deployment, parsed
from tests.support.http_target import HttpTarget
from tests.support.jobs import http_action, job_body

HOURLY = {"frequency": "Hour", "interval": 1}
MINUTELY = {"frequency": "Minute", "interval": 1}
#: Beyond the lookahead window (75 s in the sample settings): written without being dispatched at once.
LATER = START + timedelta(minutes=10)


def hourly_job(deployment: Deployment, target: HttpTarget, name: str, first: datetime = LATER) -> None:
    deployment.put_job(name, job_body(first, http_action(target.base_url), HOURLY))


def claim_row(message: ExecutionMessage) -> str:
    return claim_key(message.occurrence_time, message.action, message.attempt, message.cause)


# ------------------------------------------------------------------------------------------ occurrences


def test_a_live_entry_fires_one_message_naming_its_generation_and_occurrence(
    deployment: Deployment, target: HttpTarget
) -> None:
    created = deployment.clock.now
    hourly_job(deployment, target, "a")
    job = deployment.job("a")
    assert job.generation == first_generation(created)
    deployment.clock.set(LATER - timedelta(seconds=30))

    report = deployment.scan()

    assert (report.fired, report.coalesced, report.stale) == (1, 0, 0)
    [queued] = deployment.queued()
    message = ExecutionMessage.from_json(queued.text)
    assert message == ExecutionMessage(
        job_partition=job.ref.partition_key,
        job_row=job.ref.row_key,
        generation=job.generation,
        occurrence=format_instant(LATER),
        attempt=0,
        action="main",
        cause=Cause.SCHEDULE,
        missed=0,
        last=False,
    )
    assert queued.visible_at == LATER - timedelta(seconds=1)  # shown just before its second
    [entry] = deployment.occurrence_entries()  # moved to the following occurrence, same generation
    assert (entry.due, entry.generation) == (LATER + timedelta(hours=1), job.generation)
    [watch] = deployment.watch_entries()
    assert watch.due == LATER + CLAIM_LEASE + WATCH_GRACE
    assert watch.message == queued.text
    assert deployment.scan().fired == 0  # a second scan of the window finds nothing more to fire


def test_an_entry_beyond_the_lookahead_window_is_not_fired_yet(deployment: Deployment, target: HttpTarget) -> None:
    hourly_job(deployment, target, "a")
    lookahead = timedelta(seconds=deployment.settings.lookahead_seconds)
    deployment.clock.set(LATER - lookahead - timedelta(seconds=1))
    assert deployment.scan().fired == 0
    assert deployment.queued() == []
    [entry] = deployment.occurrence_entries()
    assert entry.due == LATER


def test_the_last_occurrence_of_a_series_is_sent_as_last(deployment: Deployment, target: HttpTarget) -> None:
    deployment.put_job("twice", job_body(LATER, http_action(target.base_url), {**MINUTELY, "count": 2}))
    deployment.put_job("once", job_body(LATER, http_action(target.base_url)))
    deployment.clock.set(LATER - timedelta(seconds=10))  # both occurrences of "twice" are in the window

    assert deployment.scan().fired == 3

    sent = {(m.job_row, m.occurrence): m.last for m in parsed(deployment.queued())}
    assert sent == {
        ("twice", format_instant(LATER)): False,
        ("twice", format_instant(LATER + timedelta(minutes=1))): True,
        ("once", format_instant(LATER)): True,
    }
    assert deployment.occurrence_entries() == []  # neither series has an occurrence left to index


def test_several_occurrences_inside_one_lookahead_window_are_all_sent(
    deployment: Deployment, target: HttpTarget
) -> None:
    deployment.put_job("m", job_body(LATER, http_action(target.base_url), MINUTELY))
    deployment.clock.set(LATER - timedelta(seconds=10))  # window: up to LATER + 65 s

    report = deployment.scan()

    assert report.fired == 2
    queued = deployment.queued()
    assert [m.occurrence for m in parsed(queued)] == [format_instant(LATER + timedelta(minutes=i)) for i in (0, 1)]
    assert [q.visible_at for q in queued] == [LATER - timedelta(seconds=1), LATER + timedelta(seconds=59)]
    [entry] = deployment.occurrence_entries()
    assert entry.due == LATER + timedelta(minutes=2)
    assert len(deployment.watch_entries()) == 2  # each attempt sent is watched


def test_downtime_is_coalesced_into_one_late_run_and_the_schedule_resumes_at_the_next_future_occurrence(
    deployment: Deployment, target: HttpTarget
) -> None:
    deployment.put_job("m", job_body(LATER, http_action(target.base_url), MINUTELY))
    down_until = LATER + timedelta(minutes=10, seconds=30)  # no scan ran for ten and a half minutes
    deployment.clock.set(down_until)

    report = deployment.scan()

    assert (report.fired, report.coalesced) == (2, 1)
    late, following = deployment.queued()
    late_message, following_message = parsed([late, following])
    assert late_message.occurrence == format_instant(LATER)  # one late run, at once...
    assert late_message.missed == 11  # ...standing for the occurrences LATER .. LATER + 10 min
    assert late.visible_at == down_until
    resume = LATER + timedelta(minutes=11)  # the schedule resumes at the next future occurrence
    assert (following_message.occurrence, following_message.missed) == (format_instant(resume), 0)
    assert following.visible_at == resume - timedelta(seconds=1)
    [entry] = deployment.occurrence_entries()
    assert entry.due == resume + timedelta(minutes=1)


def test_a_series_that_ended_during_downtime_fires_once_more_as_its_last(
    deployment: Deployment, target: HttpTarget
) -> None:
    deployment.put_job("m", job_body(LATER, http_action(target.base_url), {**MINUTELY, "count": 3}))
    deployment.clock.set(LATER + timedelta(minutes=10))

    assert deployment.scan().fired == 1

    [message] = parsed(deployment.queued())
    assert (message.occurrence, message.last, message.missed) == (format_instant(LATER), True, 0)
    assert deployment.occurrence_entries() == []


# --------------------------------------------------------------------------------- stale and abandoned


def test_entries_of_a_stale_generation_a_disabled_or_a_deleted_job_are_removed_without_firing(
    deployment: Deployment, target: HttpTarget
) -> None:
    first = first_generation(deployment.clock.now)
    for name in ("edited", "disabled", "deleted", "live"):
        hourly_job(deployment, target, name)
    # "edited": its edit could not delete the old entry (a tidy-up that failed is left to the dispatcher).
    deployment.storage.due.fail_next("delete", StorageError("storage unreachable"))
    later = {"properties": {"startTime": format_instant(LATER + timedelta(minutes=30))}}
    deployment.service.patch_job(deployment.ref("edited"), later)
    # "disabled": disabled in place (same generation) with its entry still indexed.
    disabled = deployment.job("disabled")
    deployment.storage.jobs.save(replace(disabled, state=JobState.DISABLED), create=False)
    # "deleted": its row is gone, its entry is not (a deletion that stopped half-way).
    deployment.storage.jobs.delete(deployment.ref("deleted"), None)
    assert len(deployment.occurrence_entries()) == 5  # edited has two: its old and its new generation
    deployment.clock.set(LATER)  # ten minutes after the entries were written: long past ABANDONED_AFTER

    report = deployment.scan()

    assert (report.fired, report.stale) == (1, 3)
    assert [m.job_row for m in parsed(deployment.queued())] == ["live"]
    left = {(entry.job_row, entry.generation, entry.due) for entry in deployment.occurrence_entries()}
    assert left == {("edited", first + 1, LATER + timedelta(minutes=30)), ("live", first, LATER + timedelta(hours=1))}


def test_an_entry_newer_than_its_job_is_left_alone_until_it_is_abandoned(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_job(deployment, target, "a")
    job = deployment.job("a")
    # The entry of the next generation is written before its job row: a write in flight (or one that died).
    due, next_generation = START + timedelta(minutes=1), job.generation + 1
    newer = DueEntry(
        "0000",
        due_row_key(due, job.ref.identity, next_generation),
        job.ref.partition_key,
        job.ref.row_key,
        next_generation,
        due,
    )
    deployment.storage.due.put(newer)
    written = deployment.clock.now

    deployment.clock.set(written + ABANDONED_AFTER)
    report = deployment.scan()
    assert (report.fired, report.stale) == (0, 0)
    assert newer.row_key in {entry.row_key for entry in deployment.occurrence_entries()}

    deployment.clock.advance(1)
    report = deployment.scan()
    assert (report.fired, report.stale) == (0, 1)
    assert [entry.generation for entry in deployment.occurrence_entries()] == [job.generation]  # its own stays
    assert deployment.queued() == []


def test_an_entry_of_a_job_not_yet_written_is_left_alone_until_it_is_abandoned(deployment: Deployment) -> None:
    # A create writes the job's entry first; until the job row lands the dispatcher finds no job.
    due = START + timedelta(seconds=30)
    ref = deployment.ref("coming")
    entry = DueEntry("0003", due_row_key(due, ref.identity, 1), ref.partition_key, ref.row_key, 1, due)
    deployment.storage.due.put(entry)

    deployment.clock.set(due)
    assert deployment.scan().stale == 0
    assert deployment.occurrence_entries() == [replace(entry, written_at=START)]

    deployment.clock.set(START + ABANDONED_AFTER + timedelta(seconds=1))
    assert deployment.scan().stale == 1
    assert deployment.occurrence_entries() == []


# ------------------------------------------------------------------------------------- parked retries


def test_a_parked_retry_is_sent_when_near_and_only_while_its_job_is_live(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_job(deployment, target, "live")
    hourly_job(deployment, target, "edited")
    due = START + timedelta(days=8)  # longer than a queue can hold a message
    retries = {}
    for name in ("live", "edited"):
        job = deployment.job(name)
        retry = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, format_instant(LATER), 1)
        deployment.dispatcher.attempts.park(job, retry, due)
        retries[name] = retry
    deployment.put_job("edited", job_body(LATER, http_action(target.base_url + "/v2"), HOURLY))
    parked = [entry for entry in deployment.due_entries() if entry.message is not None and entry.kind == ""]
    assert len(parked) == 2

    deployment.clock.set(due - timedelta(seconds=30))
    report = deployment.scan()

    assert report.retries == 1
    [queued] = [q for q in deployment.queued() if ExecutionMessage.from_json(q.text).attempt == 1]
    assert queued.text == retries["live"].to_json()
    assert queued.visible_at == due - timedelta(seconds=1)
    assert [entry for entry in deployment.due_entries() if entry.message is not None and entry.kind == ""] == []


def test_a_parked_retry_is_not_sent_before_it_is_near(deployment: Deployment, target: HttpTarget) -> None:
    hourly_job(deployment, target, "a")
    job = deployment.job("a")
    due = START + timedelta(days=8)
    retry = ExecutionMessage(job.ref.partition_key, job.ref.row_key, job.generation, format_instant(LATER), 1)
    deployment.dispatcher.attempts.park(job, retry, due)
    deployment.clock.set(due - timedelta(minutes=5))
    assert deployment.scan().retries == 0
    assert any(entry.message == retry.to_json() for entry in deployment.due_entries())


# --------------------------------------------------------------------------------------------- watchdog


def dispatched(
    deployment: Deployment, target: HttpTarget, name: str = "w", backlog_since: datetime | None = None
) -> ExecutionMessage:
    """An hourly job's first occurrence, dispatched by a scan and taken from the queue (not yet run). With
    ``backlog_since`` (before the scan, at ``LATER`` - 30 s), its queue is behind: see :func:`backlog`."""
    hourly_job(deployment, target, name)
    if backlog_since is not None:
        backlog(deployment, backlog_since)
    deployment.clock.set(LATER - timedelta(seconds=30))
    deployment.scan()
    return deployment.fire_at(LATER)


def watch_of(deployment: Deployment, message: ExecutionMessage) -> DueEntry | None:
    found = [entry for entry in deployment.watch_entries() if entry.message == message.to_json()]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_watch_of_a_completed_attempt_is_removed_once_due(deployment: Deployment, target: HttpTarget) -> None:
    message = dispatched(deployment, target)
    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED
    watch = watch_of(deployment, message)
    assert watch is not None

    deployment.clock.set(watch.due - timedelta(seconds=1))  # inside the window, not yet due: left alone
    deployment.look_now()
    assert watch_of(deployment, message) == watch

    deployment.clock.set(watch.due)
    report = deployment.look_now()
    assert watch_of(deployment, message) is None
    assert (report.rescued, deployment.queued()) == (0, [])
    assert len(target.received) == 1


def test_the_watch_of_an_attempt_under_a_live_lease_is_re_armed_at_the_lease_end(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = dispatched(deployment, target)
    job = deployment.job("w")
    claimed_at = LATER + timedelta(seconds=60)  # a worker took it a minute late (a queue backlog)
    deployment.storage.claims.claim(job.ref.identity, claim_row(message), "busy-worker", claimed_at, CLAIM_LEASE)
    watch = watch_of(deployment, message)
    assert watch is not None

    deployment.clock.set(watch.due)
    report = deployment.look_now()

    again = watch_of(deployment, message)
    assert again is not None
    assert again.due == claimed_at + CLAIM_LEASE + WATCH_GRACE
    assert again.checks == 0
    assert (report.rescued, deployment.queued()) == (0, [])


def test_an_attempt_whose_lease_expired_unfinished_is_sent_again_and_watched_again(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = dispatched(deployment, target)
    job = deployment.job("w")
    deployment.storage.claims.claim(job.ref.identity, claim_row(message), "dead-worker", LATER, CLAIM_LEASE)
    watch = watch_of(deployment, message)
    assert watch is not None
    now = watch.due
    deployment.clock.set(now)

    report = deployment.look_now()

    assert report.rescued == 1
    [queued] = deployment.queued()
    assert queued.text == message.to_json()  # the same attempt (the same execution id), visible at once
    assert queued.visible_at == now
    again = watch_of(deployment, message)
    assert again is not None
    assert again.due == now + CLAIM_LEASE + WATCH_GRACE
    # The re-sent attempt is taken over by the next worker and completes; its watch then goes.
    assert deployment.deliver()[0].outcome is Outcome.SUCCEEDED
    deployment.clock.set(again.due)
    deployment.look_now()
    assert watch_of(deployment, message) is None


def test_an_attempt_never_claimed_is_sent_again_once_then_looked_at_a_few_times_then_dropped(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = dispatched(deployment, target)  # taken from the queue and lost (its answer): nobody claims it
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.clock.set(watch.due)
    assert deployment.look_now().rescued == 1
    [queued] = deployment.queued()
    assert queued.text == message.to_json()  # the same attempt (the same execution id), visible at once
    assert queued.visible_at == watch.due
    deployment.take()  # ...and lost again (or it waits behind a backlog): it is not sent a third time
    checks = []
    while (watch := watch_of(deployment, message)) is not None:
        checks.append(watch.checks)
        deployment.clock.set(watch.due)
        assert deployment.look_now().rescued == 0
        again = watch_of(deployment, message)
        if again is not None:
            assert again.due == watch.due + WATCH_RECHECK  # looked at again WATCH_RECHECK later
    assert checks == list(range(1, WATCH_UNCLAIMED_CHECKS))
    assert deployment.queued() == []  # by then the queue shows an unclaimed message again by itself


def backlog(deployment: Deployment, sent_at: datetime) -> None:
    """A message of another job on the execution queue, sent at ``sent_at`` (before the attempt's own is taken
    at ``LATER``), visible from ``LATER`` + 1 s on and taken by nobody: the queue's consumers are behind (a
    burst larger than they drain in :data:`WATCH_RECHECK`). Time moves on to ``sent_at``."""
    deployment.clock.set(sent_at)
    other = ExecutionMessage("other-partition", "other", 1, format_instant(sent_at))
    shown = LATER + timedelta(seconds=1)  # after the attempt's message was taken (``dispatched``)
    deployment.storage.executions.send(other.to_json(), int((shown - sent_at).total_seconds()))


def test_an_unclaimed_attempt_is_not_sent_again_while_its_queue_is_behind_but_once_it_keeps_up(
    deployment: Deployment, target: HttpTarget
) -> None:
    # Taken and lost, or waiting in the backlog: nobody claims it.
    message = dispatched(deployment, target, backlog_since=LATER - WATCH_RECHECK)
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.clock.set(watch.due)  # the backlog's message was sent WATCH_RECHECK and more ago

    assert deployment.look_now().rescued == 0
    texts = [m.text for m in deployment.queued()]
    assert texts != [] and message.to_json() not in texts  # only the backlog's message
    held = watch_of(deployment, message)
    assert held is not None
    assert (held.held, held.checks, held.due) == (True, 1, watch.due + WATCH_RECHECK)

    deployment.take()  # the consumers catch up; the attempt is still unclaimed: its message was lost
    deployment.clock.set(held.due)
    assert deployment.look_now().rescued == 1
    [queued] = deployment.queued()
    assert queued.text == message.to_json()  # the same attempt, sent again once
    again = watch_of(deployment, message)
    assert again is not None and (again.held, again.checks) == (False, 2)
    assert [report.outcome for report in deployment.deliver()] == [Outcome.SUCCEEDED]
    assert len(target.received) == 1


def claim_reads(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The claim reads (``Claims.state``) the deployment makes from now on."""
    reads: list[tuple[str, str]] = []
    claims = deployment.storage.claims
    read = claims.state

    def counted(partition: str, row: str) -> ClaimState | None:
        reads.append((partition, row))
        return read(partition, row)

    monkeypatch.setattr(claims, "state", counted)
    return reads


def test_an_unclaimed_attempt_whose_queue_stays_behind_is_never_sent_again_and_its_watch_ends(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = dispatched(deployment, target, backlog_since=LATER - WATCH_RECHECK)
    reads = claim_reads(deployment, monkeypatch)
    looks = 0
    while (watch := watch_of(deployment, message)) is not None:
        assert looks < WATCH_UNCLAIMED_CHECKS  # (a watch that outlives its looks fails here, not by a timeout)
        deployment.clock.set(watch.due)
        assert deployment.look_now().rescued == 0
        looks += 1
    assert looks == WATCH_UNCLAIMED_CHECKS  # as many looks as an attempt sent again gets; then the queue's own lease
    assert message.to_json() not in [m.text for m in deployment.queued()]
    assert reads == []  # no claim read while the queue is behind


def test_while_its_queue_is_behind_a_dead_workers_attempt_waits_and_is_sent_again_once_it_keeps_up(
    deployment: Deployment, target: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = dispatched(deployment, target, backlog_since=LATER - WATCH_RECHECK)
    job = deployment.job("w")
    deployment.storage.claims.claim(job.ref.identity, claim_row(message), "dead-worker", LATER, CLAIM_LEASE)
    reads = claim_reads(deployment, monkeypatch)
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.clock.set(watch.due)

    assert deployment.look_now().rescued == 0
    assert reads == []
    again = watch_of(deployment, message)
    assert again is not None and (again.due, again.checks) == (watch.due + WATCH_RECHECK, 1)

    deployment.take()  # the consumers catch up
    deployment.clock.set(again.due)
    assert deployment.look_now().rescued == 1
    assert reads == [(job.ref.identity, claim_row(message))]
    [queued] = deployment.queued()
    assert queued.text == message.to_json()
    assert [report.outcome for report in deployment.deliver()] == [Outcome.SUCCEEDED]  # the lease taken over
    assert len(target.received) == 1


def test_a_queue_whose_visible_messages_are_recent_is_not_behind(deployment: Deployment, target: HttpTarget) -> None:
    look = LATER + CLAIM_LEASE + WATCH_GRACE
    # Visible at the look, but sent less than WATCH_RECHECK before it.
    message = dispatched(deployment, target, backlog_since=look - WATCH_RECHECK + timedelta(seconds=10))
    watch = watch_of(deployment, message)
    assert watch is not None and watch.due == look
    deployment.clock.set(watch.due)
    assert deployment.look_now().rescued == 1
    assert message.to_json() in [m.text for m in deployment.queued()]


def test_a_queue_that_cannot_be_asked_is_taken_as_keeping_up(deployment: Deployment, target: HttpTarget) -> None:
    message = dispatched(deployment, target, backlog_since=LATER - WATCH_RECHECK)
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.storage.executions.fail_next("behind", StorageError("storage answered 503", 503))
    deployment.clock.set(watch.due)
    assert deployment.look_now().rescued == 1  # the resend, as before: a lost message must not wait 10 minutes
    assert message.to_json() in [m.text for m in deployment.queued()]


def test_an_attempt_sent_again_unclaimed_runs_once_and_its_lost_copy_is_dropped_when_it_comes_back(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = dispatched(deployment, target)  # the copy whose receive's answer was lost: hidden for a while
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.clock.set(watch.due)
    assert deployment.look_now().rescued == 1
    assert [report.outcome for report in deployment.deliver()] == [Outcome.SUCCEEDED]
    assert deployment.executor.execute(message).outcome is Outcome.DUPLICATE  # the hidden copy, back later
    assert len(target.received) == 1
    again = watch_of(deployment, message)
    assert again is not None
    deployment.clock.set(again.due)
    assert deployment.look_now().rescued == 0
    assert watch_of(deployment, message) is None


def test_an_occurrence_waiting_its_turn_is_not_sent_again_by_its_watch(
    deployment: Deployment, target: HttpTarget
) -> None:
    message = dispatched(deployment, target)
    job = deployment.job("w")  # overlapPolicy BufferOne holds it until the occurrence before it ends
    deployment.storage.jobs.save(replace(job, waiting=message.to_json()), create=False, etag=job.etag)
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.clock.set(watch.due)
    assert deployment.look_now().rescued == 0
    assert deployment.queued() == []
    again = watch_of(deployment, message)
    assert again is not None and again.due == watch.due + WATCH_RECHECK


def test_the_watch_of_an_attempt_whose_job_changed_is_dropped(deployment: Deployment, target: HttpTarget) -> None:
    message = dispatched(deployment, target)
    deployment.put_job("w", job_body(LATER + timedelta(hours=2), http_action(target.base_url), HOURLY))
    watch = watch_of(deployment, message)
    assert watch is not None
    deployment.clock.set(watch.due)
    assert deployment.look_now().rescued == 0
    assert watch_of(deployment, message) is None


# --------------------------------------------------------------------------------------- dispatch_job


def test_a_job_written_with_an_occurrence_inside_the_lookahead_is_dispatched_at_once(
    deployment: Deployment, target: HttpTarget
) -> None:
    soon, first = START + timedelta(seconds=20), first_generation(deployment.clock.now)
    deployment.put_job("soon", job_body(soon, http_action(target.base_url), HOURLY))
    deployment.put_job("later", job_body(LATER, http_action(target.base_url), HOURLY))

    [queued] = deployment.queued()  # no scan ran: the write dispatched it
    message = ExecutionMessage.from_json(queued.text)
    assert (message.job_row, message.occurrence, message.generation) == ("soon", format_instant(soon), first)
    assert queued.visible_at == soon - timedelta(seconds=1)
    entries = {(entry.job_row, entry.due) for entry in deployment.occurrence_entries()}
    assert entries == {("soon", soon + timedelta(hours=1)), ("later", LATER)}
    assert len(deployment.watch_entries()) == 1
    deployment.clock.set(soon - timedelta(seconds=5))
    assert deployment.scan().fired == 0  # the scan that follows does not fire it a second time


def test_dispatch_job_leaves_a_job_without_an_indexed_occurrence_alone(
    deployment: Deployment, target: HttpTarget
) -> None:
    hourly_job(deployment, target, "a")
    deployment.service.patch_job(deployment.ref("a"), {"properties": {"state": "Disabled"}})
    report = deployment.dispatcher.dispatch_job(deployment.job("a"), deployment.clock())
    assert report.fired == 0
    assert deployment.queued() == []
