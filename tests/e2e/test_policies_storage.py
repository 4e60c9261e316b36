"""The policies' state on a job row (``Job.running``, ``waiting``, ``paused``) reads back as written on both
adapters (the in-memory one and the Azure one on Azurite), and a row written before them reads as having
none: the same rule the contract suite (``tests/contract``) holds every port to."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler_core.model import JobState
from scheduler_core.ports import Stores
from scheduler_core.storage.keys import JobRef
from tests.contract.conftest import BACKENDS
from tests.contract.records import JOB, job

pytestmark = [pytest.mark.e2e]


@pytest.fixture(params=["memory", pytest.param("azurite", marks=pytest.mark.azurite)])
def stores(request: pytest.FixtureRequest) -> Stores:
    return BACKENDS[str(request.param)](request).stores


def test_the_policies_state_reads_back_and_is_cleared_by_a_write(stores: Stores) -> None:
    saved = stores.jobs.save(job(), create=True)
    assert (saved.running, saved.waiting, saved.paused) == ("", "", "")
    busy = replace(saved, running=f"{saved.generation}|2030-01-01T12:00:00Z", waiting='{"v":1}')
    written = stores.jobs.save(busy, create=False, etag=saved.etag)
    got = stores.jobs.get(JOB)
    assert got == written and got.running_occurrence() is not None
    assert got.waiting == '{"v":1}'
    paused = stores.jobs.save(
        replace(got, running="", waiting="", state=JobState.DISABLED, paused="Disabled after 2"),
        create=False,
        etag=got.etag,
    )
    again = stores.jobs.get(JOB)
    assert again == paused and (again.running, again.waiting, again.paused) == ("", "", "Disabled after 2")
    assert stores.jobs.get_many(JOB.partition_key, [JOB.row_key])[JOB.row_key] == paused
    listed = [item for item in stores.jobs.list(JOB.collection) if item.ref.name == JOB.name]
    assert listed == [paused]


def test_an_unfinished_occurrence_of_another_generation_is_none(stores: Stores) -> None:
    saved = stores.jobs.save(job(generation=2, running="1|2030-01-01T12:00:00Z"), create=True)
    assert isinstance(saved.ref, JobRef) and saved.running_occurrence() is None
