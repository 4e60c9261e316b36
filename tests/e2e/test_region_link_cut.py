"""Split brain (docs/regions.md, "Split brain"): the link between the regions cut with both up. Three Azurites
(``a``'s storage, ``b``'s, the witness's) and two host processes; ``b`` reads ``a``'s tables through the fault proxy,
and the proxy drops that traffic (a partition: packets go unanswered) for longer than the witness's lease.

Both regions still reach the witness, so ``a`` keeps the lease and dispatches, ``b`` stays the standby: one-shot jobs
due every few seconds through the partition fire once each, all from ``a``; ``b``'s ``/health`` says its copy is
behind; once the link is back, ``b``'s copy has the jobs ``a`` took meanwhile."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from local_host.azurite import Azurite
from scheduler_core import health
from scheduler_core.pipeline.ticks import last_tick
from scheduler_core.regions import BEAT, LEASE
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.harness import STANDARD_PLAN
from tests.support.http_target import http_target
from tests.support.jobs import http_action, job_body
from tests.support.regions import two_regions, wait_for_jobs
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e, pytest.mark.long(95)]

COLLECTION = CollectionRef("sub-regions", "rg", "jc")
#: How long the link stays cut: past the lease and a beat, when a standby could take a lease that ran out.
CUT = LEASE + timedelta(seconds=BEAT + 5)


def test_with_the_link_cut_the_lease_holder_alone_dispatches_and_the_standby_says_it_is_behind(
    azurite: Azurite, tmp_path: Path
) -> None:
    with two_regions(azurite, tmp_path) as regions, http_target() as target:
        witness, a, b = regions.witness, regions.services["a"], regions.services["b"]
        regions.start("a")
        wait_until(lambda: witness.read().held_by("a"), timeout=30, what="region a holding the witness")
        regions.start("b")
        a.service.put_collection(COLLECTION, STANDARD_PLAN)
        assert b.replicator is not None
        copied = b.replicator.bookmarks
        wait_until(
            lambda: b.stores.collections.get(COLLECTION) is not None and copied.replication().swept_at is not None,
            timeout=30,
            what="b's first copy, finished",
        )

        regions.link.set_mode("blackhole")
        cut = datetime.now(UTC).replace(microsecond=0)
        due = {f"job{index}": cut + timedelta(seconds=15 + 10 * index) for index in range(6)}
        for name, when in due.items():
            a.service.put_job(JobRef(COLLECTION, name), job_body(when, http_action(f"{target.base_url}/{name}")))
        time.sleep(max(0.0, (cut + CUT - datetime.now(UTC)).total_seconds()))

        state = witness.read()
        assert state.holder == "a" and state.epoch == 1, state  # b never took the lease
        assert last_tick(b.stores) is None  # and never ticked
        status, report = health.check(lambda: b)
        assert status == 200 and report["region"]["active"] is False, report
        assert any(warning.startswith("replication: behind") for warning in report["warnings"]), report
        assert report["region"]["replication"]["age_seconds"] > 60, report
        assert all(b.stores.jobs.get(JobRef(COLLECTION, name)) is None for name in due)  # not copied

        regions.link.set_mode("pass")
        wait_until(
            lambda: all(b.stores.jobs.get(JobRef(COLLECTION, name)) is not None for name in due),
            timeout=30,
            what="b's copy once the link is back",
        )
        wait_for_jobs(target, set(due), max(due.values()), 15)
        time.sleep(2)
        fired = [call.path.lstrip("/") for call in target.received]
        assert sorted(fired) == sorted(due), fired  # each once
        late = [call.at - due[call.path.lstrip("/")].timestamp() for call in target.received]
        assert max(late) < 5, late  # by a, on time
        status, report = health.check(lambda: b)
        assert not any(warning.startswith("replication") for warning in report["warnings"]), report
        print(f"link cut for {CUT.total_seconds():.0f} s: a kept the lease, b stood by; lateness {late}")
