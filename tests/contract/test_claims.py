"""Claims (:class:`scheduler_core.ports.Claims`) on every adapter: the lease rule of
:mod:`scheduler_core.model.claim`."""

from __future__ import annotations

import threading
from datetime import timedelta

from scheduler_core.model import ClaimOutcome, ClaimResult, ClaimState, LostAttempt, claim_key
from scheduler_core.ports import Claims
from tests.contract.records import JOB, T0

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
