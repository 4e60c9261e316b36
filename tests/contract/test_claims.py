"""Claims (:class:`scheduler_core.ports.Claims`) on every adapter: the lease rule of
:mod:`scheduler_core.model.claim`."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

from scheduler_core.model import ClaimOutcome, ClaimResult, ClaimState, HistoryEntry, LostAttempt, claim_key
from scheduler_core.model.history import HistoryRetention, Keep, Trigger
from scheduler_core.model.retry import Duration
from scheduler_core.ports import Claims
from tests.contract.conftest import Backend
from tests.contract.records import JOB, T0, history_entry

PARTITION = JOB.identity
ROW = claim_key(T0, "main", 0, "schedule")
LEASE = timedelta(minutes=2)


def test_a_first_claim_is_claimed_and_holds_a_lease(claims: Claims) -> None:
    assert claims.state(PARTITION, ROW) is None
    result = claims.claim(PARTITION, ROW, "w1", T0, LEASE)
    assert result.outcome is ClaimOutcome.CLAIMED and result.lost is None
    assert result.claim is not None and result.claim.etag
    assert (result.claim.partition, result.claim.row, result.claim.claimed_at) == (PARTITION, ROW, T0)
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=T0 + LEASE)


def test_a_claim_retried_with_its_token_is_still_this_callers(claims: Claims) -> None:
    first = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    again = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    assert (first.outcome, again.outcome) == (ClaimOutcome.CLAIMED, ClaimOutcome.CLAIMED)
    assert again.claim is not None and first.claim is not None and again.claim.etag == first.claim.etag
    assert again.lost is None


def test_a_live_lease_keeps_other_workers_out(claims: Claims) -> None:
    claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    for later in (timedelta(0), timedelta(seconds=119)):
        other = claims.claim(PARTITION, ROW, "w2", T0 + later, LEASE, token="t2")
        assert other == ClaimResult(ClaimOutcome.BUSY, lease_until=T0 + LEASE)
    untokened = claims.claim(PARTITION, ROW, "w1", T0, LEASE)  # the same worker, another call
    assert untokened.outcome is ClaimOutcome.BUSY
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=T0 + LEASE)


def test_an_expired_lease_is_taken_over_and_the_lost_holder_named(claims: Claims) -> None:
    first = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    later = T0 + LEASE  # a lease that ends now has expired
    takeover = claims.claim(PARTITION, ROW, "w2", later, LEASE, token="t2")
    assert takeover.outcome is ClaimOutcome.CLAIMED
    assert takeover.lost == LostAttempt("w1", T0)
    assert takeover.claim is not None and first.claim is not None
    assert takeover.claim.claimed_at == later and takeover.claim.etag != first.claim.etag
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=later + LEASE)
    assert claims.claim(PARTITION, ROW, "w1", later, LEASE, token="t1").outcome is ClaimOutcome.BUSY


def test_of_late_comers_to_an_expired_lease_exactly_one_takes_it_over(claims: Claims) -> None:
    claims.claim(PARTITION, ROW, "dead", T0, LEASE)
    later = T0 + LEASE + timedelta(seconds=1)
    start = threading.Barrier(6)
    results: list[ClaimResult] = []

    def take(worker: str) -> None:
        start.wait()
        results.append(claims.claim(PARTITION, ROW, worker, later, LEASE))

    threads = [threading.Thread(target=take, args=(f"w{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [r for r in results if r.outcome is ClaimOutcome.CLAIMED]
    assert len(winners) == 1 and winners[0].lost == LostAttempt("dead", T0)
    assert all(r.outcome is ClaimOutcome.BUSY and r.lease_until is not None for r in results if r not in winners)


def test_a_completed_attempt_is_done_for_everyone(claims: Claims) -> None:
    result = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    assert result.claim is not None
    claims.complete(result.claim, T0 + timedelta(seconds=5))
    claims.complete(result.claim, T0 + timedelta(seconds=6))  # idempotent
    state = claims.state(PARTITION, ROW)
    assert state is not None and state.done
    for now in (T0, T0 + LEASE * 10):
        assert claims.claim(PARTITION, ROW, "w2", now, LEASE).outcome is ClaimOutcome.DONE


def test_release_gives_the_claim_back_only_while_it_is_this_holders(claims: Claims) -> None:
    first = claims.claim(PARTITION, ROW, "w1", T0, LEASE)
    assert first.claim is not None
    claims.release(first.claim)
    assert claims.state(PARTITION, ROW) is None
    claims.release(first.claim)  # already given back: fine
    again = claims.claim(PARTITION, ROW, "w2", T0, LEASE)
    assert again.outcome is ClaimOutcome.CLAIMED and again.lost is None

    later = T0 + LEASE
    takeover = claims.claim(PARTITION, ROW, "w3", later, LEASE)
    assert again.claim is not None and takeover.claim is not None
    claims.release(again.claim)  # w2 lost the claim: its release leaves w3's alone
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=later + LEASE)
    claims.complete(takeover.claim, later)
    claims.release(takeover.claim)  # a completed claim is another version: kept
    state = claims.state(PARTITION, ROW)
    assert state is not None and state.done


def test_delete_older_than_removes_a_jobs_claims_of_earlier_occurrences(claims: Claims) -> None:
    occurrences = [T0 + timedelta(minutes=m) for m in range(4)]
    for occurrence in occurrences:
        for attempt in range(2):
            claims.claim(PARTITION, claim_key(occurrence, "main", attempt, "schedule"), "w", T0, LEASE)
    other = "other|job"
    claims.claim(other, ROW, "w", T0, LEASE)
    assert claims.delete_older_than(PARTITION, occurrences[2]) == 4
    assert claims.state(PARTITION, claim_key(occurrences[1], "main", 1, "schedule")) is None
    assert claims.state(PARTITION, claim_key(occurrences[2], "main", 0, "schedule")) is not None
    assert claims.state(other, ROW) is not None
    assert claims.delete_older_than(PARTITION, occurrences[2]) == 0


def test_delete_all_removes_every_claim_of_one_job(claims: Claims) -> None:
    rows = [claim_key(T0 + timedelta(minutes=m), "main", 0, "schedule") for m in range(3)]
    for row in rows:
        claims.claim(PARTITION, row, "w", T0, LEASE)
    claims.claim("other|job", ROW, "w", T0, LEASE)
    claims.delete_all(PARTITION)
    assert [claims.state(PARTITION, row) for row in rows] == [None, None, None]
    assert claims.state("other|job", ROW) is not None
    claims.delete_all(PARTITION)


def test_completing_an_attempt_nobody_claimed_marks_it_done(claims: Claims) -> None:
    first = claims.claim(PARTITION, ROW, "w1", T0, LEASE)
    assert first.claim is not None
    claims.delete_all(PARTITION)
    claims.complete(first.claim, T0)
    assert claims.state(PARTITION, ROW) == ClaimState(done=True, lease_until=None)
    assert claims.claim(PARTITION, ROW, "w2", T0, LEASE).outcome is ClaimOutcome.DONE


# ------------------------------------------------------------------------------ completion with its entry


def entry_of(claimed: ClaimResult, execution_id: str = "exec-1", **changes: object) -> HistoryEntry:
    """The history entry of a claimed attempt (keyed by its claim time, as the executor keys it)."""
    assert claimed.claim is not None
    return history_entry(claimed.claim.claimed_at, execution_id, **changes)


def test_a_recorded_attempt_is_done_and_its_entry_is_in_the_jobs_history(backend: Backend) -> None:
    claims, history = backend.claims, backend.stores.history
    claimed = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    assert claimed.claim is not None
    entry = entry_of(claimed)
    older = history_entry(T0 - timedelta(hours=1), "exec-0")
    history.add(JOB, older)  # an entry written the other way (as rows written before this were)

    claims.record(claimed.claim, JOB, entry, T0 + timedelta(seconds=3))
    claims.record(claimed.claim, JOB, entry, T0 + timedelta(seconds=4))  # a retry after a lost answer

    state = claims.state(PARTITION, ROW)
    assert state is not None and state.done
    assert list(history.list(JOB)) == [entry, older]
    assert claims.claim(PARTITION, ROW, "w2", T0 + LEASE * 10, LEASE).outcome is ClaimOutcome.DONE
    assert history.add_if_absent(JOB, replace(older, message="again")) is False


def test_an_entry_recorded_by_a_holder_whose_claim_was_taken_over_is_kept_next_to_the_new_holders(
    backend: Backend,
) -> None:
    claims, history = backend.claims, backend.stores.history
    slow = claims.claim(PARTITION, ROW, "slow", T0, LEASE, token="t1")
    later = T0 + LEASE + timedelta(seconds=1)
    taker = claims.claim(PARTITION, ROW, "taker", later, LEASE, token="t2")
    assert slow.claim is not None and taker.claim is not None and taker.lost is not None

    claims.record(slow.claim, JOB, entry_of(slow, message="slow one"), later + timedelta(seconds=1))

    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=later + LEASE)  # still the taker's
    claims.record(taker.claim, JOB, entry_of(taker, message="taker"), later + timedelta(seconds=2))
    state = claims.state(PARTITION, ROW)
    assert state is not None and state.done
    assert [e.message for e in history.list(JOB)] == ["taker", "slow one"]  # newest claim first


def test_entries_recorded_with_claims_are_trimmed_and_deleted_with_the_history_and_their_claims_stay_done(
    backend: Backend,
) -> None:
    claims, history = backend.claims, backend.stores.history
    rows = []
    for minute in range(4):
        row = claim_key(T0 + timedelta(minutes=minute), "main", 0, "schedule")
        claimed = claims.claim(PARTITION, row, "w", T0 + timedelta(minutes=minute), LEASE)
        assert claimed.claim is not None
        claims.record(claimed.claim, JOB, entry_of(claimed, f"exec-{minute}"), T0 + timedelta(minutes=minute))
        rows.append(row)
    history.add(JOB, history_entry(T0 - timedelta(minutes=1), "exec-old"))

    keep_two = Keep(Duration(timedelta(days=60)), 2)  # the newest two, nothing by age
    assert history.trim(JOB, HistoryRetention(keep_two, keep_two, total=2), T0 + timedelta(days=59)) == 3
    assert [e.execution_id for e in history.list(JOB)] == ["exec-3", "exec-2"]
    for row in rows:  # a late delivery of any of them is still dropped
        assert claims.claim(PARTITION, row, "late", T0 + LEASE * 10, LEASE).outcome is ClaimOutcome.DONE

    history.delete_all(JOB)
    assert list(history.list(JOB)) == []
    assert all((claims.state(PARTITION, row) or ClaimState(False, None)).done for row in rows)


def test_entries_recorded_with_claims_outlive_the_claims(backend: Backend) -> None:
    claims, history = backend.claims, backend.stores.history
    entries = []
    for minute in range(3):
        row = claim_key(T0 + timedelta(minutes=minute), "main", 0, "schedule")
        claimed = claims.claim(PARTITION, row, "w", T0 + timedelta(minutes=minute), LEASE)
        assert claimed.claim is not None
        entries.append(entry_of(claimed, f"exec-{minute}"))
        claims.record(claimed.claim, JOB, entries[-1], T0 + timedelta(minutes=minute))

    assert claims.delete_older_than(PARTITION, T0 + timedelta(minutes=2)) == 2
    assert claims.state(PARTITION, claim_key(T0, "main", 0, "schedule")) is None
    claims.delete_all(PARTITION)
    assert list(history.list(JOB)) == entries[::-1]


def test_an_entry_recorded_with_its_claim_keeps_its_trigger_and_after_the_claim_goes(backend: Backend) -> None:
    claims, history = backend.claims, backend.stores.history
    claimed = claims.claim(PARTITION, ROW, "w1", T0, LEASE)
    assert claimed.claim is not None
    entry = entry_of(claimed, trigger=Trigger.BACKFILL)
    claims.record(claimed.claim, JOB, entry, T0 + timedelta(seconds=3))
    assert list(history.list(JOB)) == [entry]
    claims.delete_all(PARTITION)  # the entry moves to the job's history with its trigger
    assert [e.trigger for e in history.list(JOB)] == [Trigger.BACKFILL]


def test_an_entry_recorded_with_its_claim_keeps_its_due_time_after_the_claim_goes(backend: Backend) -> None:
    claims, history = backend.claims, backend.stores.history
    claimed = claims.claim(PARTITION, ROW, "w1", T0, LEASE)
    assert claimed.claim is not None
    entry = entry_of(claimed, retry_count=2, due_time=T0 - timedelta(seconds=1))
    claims.record(claimed.claim, JOB, entry, T0 + timedelta(seconds=3))
    assert list(history.list(JOB)) == [entry]
    claims.delete_all(PARTITION)  # the entry moves to the job's history with its due time
    assert [e.due_time for e in history.list(JOB)] == [T0 - timedelta(seconds=1)]


# ------------------------------------------------------------------ renewals, second looks and takeovers


def test_an_expired_lease_is_left_alone_by_a_first_look_and_taken_over_by_a_second(claims: Claims) -> None:
    claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    later = T0 + LEASE
    look = claims.claim(PARTITION, ROW, "w2", later, LEASE, token="t2", take_over=False)
    assert look == ClaimResult(ClaimOutcome.EXPIRED, lease_until=T0 + LEASE)
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=T0 + LEASE)  # nothing written
    again = claims.claim(PARTITION, ROW, "w2", later, LEASE, token="t2")
    assert again.outcome is ClaimOutcome.CLAIMED and again.lost == LostAttempt("w1", T0, takeovers=1)
    live = claims.claim(PARTITION, ROW, "w3", later, LEASE, token="t3", take_over=False)
    assert live == ClaimResult(ClaimOutcome.BUSY, lease_until=later + LEASE)  # a live lease is busy as ever


def test_a_first_look_at_an_attempt_nobody_claimed_claims_it(claims: Claims) -> None:
    result = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1", take_over=False)
    assert result.outcome is ClaimOutcome.CLAIMED and result.lost is None
    assert result.claim is not None and result.claim.token == "t1"


def test_each_takeover_of_a_claim_is_counted(claims: Claims) -> None:
    claims.claim(PARTITION, ROW, "w0", T0, LEASE)
    counts = []
    for n in range(1, 4):
        now = T0 + n * LEASE
        taken = claims.claim(PARTITION, ROW, f"w{n}", now, LEASE)
        assert taken.outcome is ClaimOutcome.CLAIMED and taken.lost is not None
        assert (taken.lost.worker, taken.lost.claimed_at) == (f"w{n - 1}", T0 + (n - 1) * LEASE)
        counts.append(taken.lost.takeovers)
    assert counts == [1, 2, 3]
    other = claims.claim(PARTITION, claim_key(T0, "main", 1, "retry"), "w", T0 + 9 * LEASE, LEASE)
    assert other.lost is None  # a retry is another attempt: a claim, and a count, of its own


def test_a_renewal_extends_the_lease_and_gives_the_claims_next_version(backend: Backend) -> None:
    claims, history = backend.claims, backend.stores.history
    claimed = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    assert claimed.claim is not None and claimed.claim.token == "t1"
    renewed = claims.renew(claimed.claim, T0 + timedelta(seconds=40), LEASE)
    assert renewed is not None and renewed.etag != claimed.claim.etag
    assert (renewed.partition, renewed.row, renewed.claimed_at, renewed.token) == (PARTITION, ROW, T0, "t1")
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=T0 + timedelta(seconds=40) + LEASE)
    past_first_lease = T0 + LEASE + timedelta(seconds=1)
    assert claims.claim(PARTITION, ROW, "w2", past_first_lease, LEASE).outcome is ClaimOutcome.BUSY

    entry = entry_of(claimed)
    claims.record(renewed, JOB, entry, past_first_lease)
    state = claims.state(PARTITION, ROW)
    assert state is not None and state.done
    assert list(history.list(JOB)) == [entry]


def test_a_renewal_or_record_over_an_outdated_version_of_the_holders_own_claim_still_lands(backend: Backend) -> None:
    """A renewal whose answer was lost changed the claim: the holder's next renewal and its record are made
    with the version before it, and still land (the claim is recognised by its token)."""
    claims, history = backend.claims, backend.stores.history
    claimed = claims.claim(PARTITION, ROW, "w1", T0, LEASE, token="t1")
    assert claimed.claim is not None
    assert claims.renew(claimed.claim, T0 + timedelta(seconds=20), LEASE) is not None  # its answer "lost"
    again = claims.renew(claimed.claim, T0 + timedelta(seconds=21), LEASE)
    assert again is not None
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=T0 + timedelta(seconds=21) + LEASE)
    claims.renew(again, T0 + timedelta(seconds=22), LEASE)  # and that one's answer "lost" too
    entry = entry_of(claimed)
    claims.record(again, JOB, entry, T0 + timedelta(seconds=30))
    state = claims.state(PARTITION, ROW)
    assert state is not None and state.done
    assert list(history.list(JOB)) == [entry]  # once


def test_a_renewal_of_a_claim_taken_over_done_or_gone_is_refused(claims: Claims) -> None:
    slow = claims.claim(PARTITION, ROW, "slow", T0, LEASE, token="t1")
    later = T0 + LEASE + timedelta(seconds=1)
    taker = claims.claim(PARTITION, ROW, "taker", later, LEASE, token="t2")
    assert slow.claim is not None and taker.claim is not None
    assert claims.renew(slow.claim, later, LEASE) is None  # the taker's now
    assert claims.state(PARTITION, ROW) == ClaimState(done=False, lease_until=later + LEASE)
    claims.complete(taker.claim, later)
    assert claims.renew(taker.claim, later, LEASE) is None  # done
    claims.delete_all(PARTITION)
    assert claims.renew(taker.claim, later, LEASE) is None  # gone
    assert claims.state(PARTITION, ROW) is None
