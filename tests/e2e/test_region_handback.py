"""The hand-back (docs/regions.md, "Hand-back"): region ``a`` back after an outage that ``b`` took over, three
Azurites (``a``'s storage, ``b``'s, the witness's) and two host processes.

The outage is set up as it ends: ``a`` was active in epoch 1 (its jobs and due index in its storage), ``b`` copied
its jobs and, with ``a`` out of reach (the fault proxy refuses ``b``'s reads of ``a``'s tables), took the lease in
epoch 2 and built its index from its copy. During the outage ``b`` takes a new job and an edit. Then ``a``'s host
starts: it is the standby, and its copy brings the outage's writes from ``b``. ``a`` is the primary
(``SCHEDULER_REGION_PRIMARY``), so once its copy has been current for the wait (10 s here, 10 minutes by default)
``b`` hands the lease back by itself: ``a`` takes it once it has run out, waits the hand-over (what ``b`` dispatched
has run), builds its index from a copy made then, and dispatches; ``b`` does not take it again. One-shot jobs due
every few seconds across the hand-back each fire exactly once; the job written in ``b`` fires from ``a``; each
region's history of what it ran is readable in it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from local_host.azurite import Azurite
from scheduler_core import wiring
from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.replica import TableBookmarks, TableReplica
from scheduler_core.model import JobState
from scheduler_core.regions import BEAT, LEASE, Replicator
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.harness import STANDARD_PLAN
from tests.support.http_target import http_target
from tests.support.jobs import every, http_action, job_body
from tests.support.regions import header, two_regions, wait_for_jobs
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(165)]

COLLECTION = CollectionRef("sub-regions", "rg", "jc")
#: Jobs due this many seconds after ``a``'s host starts: ``b`` fires the first, ``a`` the others (late while it takes
#: over).
OFFSETS = tuple(range(10, 131, 8))


def test_the_hand_back_happens_once_and_runs_every_occurrence_once(azurite: Azurite, tmp_path: Path) -> None:
    handback = {
        "SCHEDULER_LOOKAHEAD_SECONDS": "10",
        "SCHEDULER_REGION_PRIMARY": "a",
        "SCHEDULER_REGION_HANDBACK_SECONDS": "10",
    }
    with two_regions(azurite, tmp_path, **handback) as regions, http_target() as target:
        witness, configs, link = regions.witness, regions.configs, regions.link
        a, b = regions.services["a"], regions.services["b"]

        # Before the outage: a active in epoch 1 with its jobs; b's copy of them.
        assert witness.acquire("a") == 1
        witness.release("a", 1)
        TableBookmarks(table_service(configs["a"]), configs["a"]).set_due_epoch(1)
        a_starts = (datetime.now(UTC) + timedelta(seconds=25)).replace(microsecond=0)
        due = {f"job{index}": a_starts + timedelta(seconds=offset) for index, offset in enumerate(OFFSETS)}
        a.service.put_collection(COLLECTION, STANDARD_PLAN)
        for name, when in due.items():
            a.service.put_job(JobRef(COLLECTION, name), job_body(when, http_action(f"{target.base_url}/{name}")))
        tomorrow = a_starts + timedelta(days=1)
        a.service.put_job(
            JobRef(COLLECTION, "edited"), job_body(tomorrow, http_action(f"{target.base_url}/e"), every("Hour"))
        )
        own_b = table_service(configs["b"])
        copy = Replicator(
            TableReplica(table_service(configs["a"]), configs["a"]),
            TableReplica(own_b, configs["b"]),
            TableBookmarks(own_b, configs["b"]),
            lambda: datetime.now(UTC),
        )
        assert copy.sweep().error == ""

        link.set_mode("refuse")  # a is out of reach: b takes the free lease and builds its index at once
        regions.start("b")
        wait_until(lambda: witness.read().held_by("b"), timeout=30, what="region b taking the lease")
        wait_until(b.active, timeout=30, what="region b's due index built")
        assert witness.read().epoch == 2

        # The outage's writes, in b
        written = a_starts + timedelta(seconds=135)  # a's, after the hand-back
        b.service.put_job(JobRef(COLLECTION, "written-in-b"), job_body(written, http_action(f"{target.base_url}/w")))
        b.service.patch_job(JobRef(COLLECTION, "edited"), {"properties": {"state": "Disabled"}})

        # a back: the standby, copying from b
        time.sleep(max(0.0, (a_starts - datetime.now(UTC)).total_seconds()))
        link.set_mode("pass")
        regions.start("a")
        wait_until(
            lambda: a.stores.jobs.get(JobRef(COLLECTION, "written-in-b")) is not None,
            timeout=30,
            what="a's copy of the outage's writes",
        )
        current = time.monotonic()
        edited = a.stores.jobs.get(JobRef(COLLECTION, "edited"))
        assert edited is not None and edited.state is JobState.DISABLED
        assert witness.read().held_by("b")

        # b hands back by itself: its wait (10 s, checked every 10 s), its lease running out, a's beat
        bound = 10 + 2 * 10 + LEASE.total_seconds() + BEAT + 20  # checks every 10 s; a loaded machine
        wait_until(lambda: witness.read().held_by("a"), timeout=bound, what="the hand-back to a")
        handed_back = time.monotonic() - current
        assert witness.read().epoch == 3 and not witness.read().demoted

        wait_for_jobs(target, {*due, "w"}, written, 60)
        time.sleep(3)  # a second call of any job would come now
        calls: dict[str, list[float]] = {}
        for call in target.received:
            calls.setdefault(call.path.lstrip("/"), []).append(call.at)
            assert header(call, "x-ms-scheduler-expected-execution-time")
        assert sorted(calls) == sorted([*due, "w"]), sorted(calls)
        assert all(len(times) == 1 for times in calls.values()), calls  # nothing twice, nothing lost
        lateness = {name: calls[name][0] - when.timestamp() for name, when in due.items()}
        by_b = {name for name in due if ran(b, name)}
        by_a = {name for name in due if ran(a, name)}
        assert by_a and by_b and by_a | by_b == set(due), (by_a, by_b)  # each region's history, in it
        assert not by_a & by_b
        assert ran(a, "written-in-b")  # the outage's write ran in a
        assert witness.read().held_by("a") and witness.read().epoch == 3  # once: b did not take it again
        print(
            f"a took the lease {handed_back:.1f} s after its copy was current; "
            f"fired by b: {sorted(by_b)}; by a: {sorted(by_a)}; "
            f"lateness: {', '.join(f'{n} {lateness[n]:+.1f} s' for n in due)}"
        )


def ran(services: wiring.Services, name: str) -> bool:
    """Whether the region's own history records a run of job ``name``."""
    return any(True for _ in services.stores.history.list(JobRef(COLLECTION, name)))
