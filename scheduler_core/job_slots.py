"""The job counter of each collection: how ``maxJobCount`` stays exact under concurrent creates.

The counter lives on the collection row (``JobCount``) and moves only by ETag-guarded merges, so two
creates can never both take the last slot, on one instance or on many. A create reserves its slot before
its job is written; a crash between the two leaves the counter one too high, which is repaired (the jobs
are counted) when the counter says the collection is full and the row has been quiet for
:data:`COUNTER_SETTLE`, so that no reservation can still be in flight.

Two things keep the counter off the hot path of a create:

- **Group commit.** Creates of one collection on this instance share reservation writes: while one write
  is in flight the next creates join a :class:`_SlotRound`, and its first member reserves a slot for
  every member with one write once the previous write is done.
- **Prefetch.** While the collection has ample room, a reservation write also takes up to
  :data:`PREFETCH` slots ahead (never more than a quarter of the room left, none when fewer than
  :data:`PREFETCH_MIN_ROOM` remain), which the next creates on this instance use without a write. Such
  slots are only used for :data:`PREFETCH_TTL` after the write that took them, and only by creates that
  validated against the same plan, state and quota of the collection; unused ones are given back when
  they expire. A create that uses one has therefore seen the collection as it was at most
  :data:`PREFETCH_TTL` ago (a create without one proves the collection unchanged with its own write).

Near the limit every create makes its own guarded write, so the count is exact there; far from it, the
most another instance can see taken but unused is a quarter of the room, for at most
:data:`PREFETCH_TTL`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler_core.errors import ConflictError, EtagMismatchError, WriteRaceError
from scheduler_core.model import CollectionState, JobCollection, Quota, Sku
from scheduler_core.ports import CollectionStore, Stores
from scheduler_core.races import Bound, RacesLost, StartOver, race
from scheduler_core.storage.keys import CollectionRef

log = logging.getLogger("scheduler_core.job_slots")

#: Attempts of an ETag-guarded counter update under contention.
COUNTER_ATTEMPTS = 50
#: A job counter untouched this long has no reservation in flight, so it may be repaired from a count.
COUNTER_SETTLE = timedelta(seconds=60)
#: At most this many slots are reserved ahead of the creates that need them.
PREFETCH = 16
#: No slots are reserved ahead when fewer than this many remain under ``maxJobCount``.
PREFETCH_MIN_ROOM = 8
#: Slots reserved ahead are used for this many seconds after the write that took them, then given back.
PREFETCH_TTL = 2.0

Clock = Callable[[], datetime]
#: What a create validates a job against: the collection's plan, state and quota.
_Terms = tuple[Sku, CollectionState, Quota]


def _terms(collection: JobCollection) -> _Terms:
    """The collection as a create validates against: two rows with equal terms accept the same jobs."""
    return collection.sku, collection.state, collection.quota


def subtract_jobs(
    collections: CollectionStore, ref: CollectionRef, count: int, attempts: int = COUNTER_ATTEMPTS
) -> bool:
    """Take ``count`` off a collection's job counter (never below 0; jobs removed, or reserved slots given
    back) by ETag-guarded writes retried under contention. False when the counter could not be moved in
    ``attempts`` (it is repaired from an exact count when it next says the collection is full); True also
    when the collection or its counter does not exist."""

    def attempt() -> bool:
        current = collections.get(ref)
        if current is None or current.job_count is None:
            return True
        collections.set_job_count(current, max(0, current.job_count - count))
        return True

    try:
        return race(attempt, Bound(tries=attempts), _etag_mismatch)
    except RacesLost:
        return False


def _etag_mismatch(error: WriteRaceError) -> bool:
    """A lost race of a counter write: the collection row changed since it was read."""
    return isinstance(error, EtagMismatchError)


@dataclass(eq=False)
class _SlotRound:
    """Creates of one collection that share one reservation write. Member ``i`` got a slot when
    ``i < granted``; ``changed`` means the collection is no longer the one they validated against."""

    collection: JobCollection
    members: int = 0
    granted: int = 0
    changed: bool = False
    error: Exception | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class _Prefetched:
    """Slots reserved ahead by this instance for creates in ``ref`` validated against ``terms``."""

    ref: CollectionRef
    terms: _Terms
    free: int
    expires: float  # time.monotonic()


class JobSlots:
    """Reserves and releases job slots of collections (see the module docstring for the rules)."""

    def __init__(self, stores: Stores, clock: Clock) -> None:
        self.stores = stores
        self.clock = clock
        self._records: dict[str, JobCollection] = {}  # the last collection row this instance wrote
        self._prefetched: dict[str, _Prefetched] = {}
        self._rounds: dict[str, _SlotRound] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def known(self, ref: CollectionRef) -> JobCollection | None:
        """The collection as this instance last wrote its counter (creates may start from it unread: the
        reservation write proves it current, or a prefetched slot bounds its age)."""
        return self._records.get(ref.identity)

    def reserve(self, collection: JobCollection) -> bool | None:
        """Take a slot for one new job of ``collection`` (validated against its plan and quota): True when
        taken, False when the collection is full (``quota.max_job_count``), None when the collection changed
        (re-read it, check again)."""
        key = collection.ref.identity
        with self._guard:
            ahead = self._prefetched.get(key)
            if (
                ahead is not None
                and ahead.free > 0
                and time.monotonic() < ahead.expires
                and ahead.terms == _terms(collection)
            ):
                ahead.free -= 1
                return True
            round_ = self._rounds.get(key)
            if round_ is None or _terms(round_.collection) != _terms(collection):
                round_ = _SlotRound(collection)
                self._rounds[key] = round_
            member = round_.members
            round_.members += 1
        if member == 0:
            with self._lock(key):  # one reservation write per collection at a time
                with self._guard:
                    if self._rounds.get(key) is round_:
                        del self._rounds[key]  # sealed: later creates start the next round
                try:
                    round_.granted, round_.changed = self._reserve(round_.collection, round_.members)
                except Exception as exc:
                    round_.error = exc
                finally:
                    round_.done.set()
        else:
            round_.done.wait()
        if round_.error is not None:
            raise round_.error
        if round_.changed:
            return None
        return member < round_.granted

    def release(self, ref: CollectionRef, count: int = 1) -> None:
        """Give back ``count`` slots (a job was deleted, or a reserved job was never written)."""
        with self._lock(ref.identity):
            self._records.pop(ref.identity, None)
            self._give_back(ref, count)

    def forget(self, ref: CollectionRef, *, give_back: bool = True) -> None:
        """This instance changed the collection (or, ``give_back`` False, is deleting it): drop what it
        knew of it and give back unused slots reserved ahead."""
        with self._lock(ref.identity):
            self._records.pop(ref.identity, None)
            with self._guard:
                ahead = self._prefetched.pop(ref.identity, None)
            if give_back and ahead is not None and ahead.free > 0:
                self._give_back(ref, ahead.free)

    def give_back_ahead(self) -> None:
        """Give back now, rather than when they expire, every collection's unused slots reserved ahead, so
        that no counter write of this instance is still to come (for a caller that needs the rows settled)."""
        with self._guard:
            refs = [ahead.ref for ahead in self._prefetched.values()]
        for ref in refs:
            self.forget(ref)

    # ----------------------------------------------------------------------------------------- internals

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def _reserve(self, collection: JobCollection, wanted: int) -> tuple[int, bool]:
        """One guarded write that takes ``wanted`` slots (or what is left) plus any prefetch, and returns
        unused prefetched slots: (slots granted to the round, whether the collection changed)."""
        key = collection.ref.identity
        limit = collection.quota.max_job_count
        with self._guard:
            stale = self._prefetched.pop(key, None)
        returned = stale.free if stale is not None else 0
        current: JobCollection | None = self._records.get(key, collection)
        fresh = False  # whether ``current`` was read just now (a cached row may be behind other instances)

        def attempt() -> tuple[int, bool]:
            nonlocal current, fresh, returned
            if current is None:
                current, fresh = self.stores.collections.get(collection.ref), True
                if current is None or _terms(current) != _terms(collection):  # the caller re-reads it
                    self._records.pop(key, None)
                    if returned:
                        self._give_back(collection.ref, returned)
                    return 0, True
            try:
                count = current.job_count
                taken = None if count is None else count - returned
                if taken is None or taken + wanted > limit:
                    quiet = current.modified_at is None or self.clock() - current.modified_at > COUNTER_SETTLE
                    if taken is None or quiet:
                        # Repair from an exact count: no reservation of anyone can still be in flight.
                        exact = self.stores.jobs.count(current.ref)
                        if exact != count:
                            current = self.stores.collections.set_job_count(current, exact)
                        taken, count, returned = exact, exact, 0
                room = limit - taken
                granted = min(wanted, room)
                if granted <= 0 and count == taken:
                    if not fresh:  # "full" is only ever answered from the row as it is now
                        current = None
                        raise StartOver
                    return 0, False
                ahead = min(PREFETCH, (room - granted) // 4) if room - granted >= PREFETCH_MIN_ROOM else 0
                self._records[key] = self.stores.collections.set_job_count(current, taken + max(granted, 0) + ahead)
            except EtagMismatchError:
                current = None
                raise
            returned = 0
            if ahead:
                with self._guard:
                    self._prefetched[key] = _Prefetched(
                        collection.ref, _terms(collection), ahead, time.monotonic() + PREFETCH_TTL
                    )
                self._expire_later(collection.ref)
            return max(granted, 0), False

        try:
            return race(attempt, Bound(tries=COUNTER_ATTEMPTS), _etag_mismatch)
        except RacesLost:
            raise ConflictError(
                f"job collection '{collection.ref.name}' is being changed by many requests; retry"
            ) from None

    def _expire_later(self, ref: CollectionRef) -> None:
        timer = threading.Timer(PREFETCH_TTL, self._expire, args=(ref,))
        timer.daemon = True
        timer.start()

    def _expire(self, ref: CollectionRef) -> None:
        """Give back prefetched slots that were not used in time (if no later round has netted them)."""
        with self._lock(ref.identity):
            with self._guard:
                ahead = self._prefetched.get(ref.identity)
                if ahead is None or time.monotonic() < ahead.expires:
                    return
                del self._prefetched[ref.identity]
            if ahead.free > 0:
                self._records.pop(ref.identity, None)
                try:
                    self._give_back(ref, ahead.free)
                except Exception:  # a timer thread: log, the quiet-counter repair covers what is not given back
                    log.warning("job collection %s: %d unused job slots not given back", ref, ahead.free, exc_info=True)

    def _give_back(self, ref: CollectionRef, count: int) -> None:
        if not subtract_jobs(self.stores.collections, ref, count, COUNTER_ATTEMPTS):
            log.warning("job collection %s: job counter not decremented (repaired when the quota is reached)", ref)
