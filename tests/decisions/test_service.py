"""The service's decisions: validation before any write, If-Match, the plans' rules and quotas, what a
collection's state and deletion do to its jobs, final jobs, lost write races and failed writes, and which
edits keep a job's series."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from scheduler_core.api import views
from scheduler_core.errors import (
    AlreadyExistsError,
    ConflictError,
    EtagMismatchError,
    NotFoundError,
    PreconditionFailedError,
    QuotaExceededError,
    StorageError,
    ValidationError,
)
from scheduler_core.model import JobState, Sku
from scheduler_core.model.job import first_generation
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.harness import COLLECTION, STANDARD, START, Deployment
from tests.support.http_target import HttpTarget
from tests.support.jobs import fixed_retries, http_action, job_body

LATER = START + timedelta(minutes=10)
HOURLY = {"frequency": "Hour", "interval": 1}
MINUTELY = {"frequency": "Minute", "interval": 1}
URL = "http://127.0.0.1:9/"  # never called by these tests unless a target is given


def hourly(url: str = URL, **action: Any) -> dict[str, Any]:
    return job_body(LATER, http_action(url, **action), HOURLY)


def job_count(deployment: Deployment, ref: CollectionRef = COLLECTION) -> int | None:
    record = deployment.storage.collections.get(ref)
    assert record is not None
    return record.job_count


def entries_of(deployment: Deployment, name: str) -> list[Any]:
    return [entry for entry in deployment.due_entries() if entry.job_row == name.lower()]


def collection_body(sku: str = "Standard", **quota: Any) -> dict[str, Any]:
    properties: dict[str, Any] = {"sku": {"name": sku}}
    if quota:
        properties["quota"] = quota
    return {"location": "westus", "properties": properties}


# ----------------------------------------------------------------------------------------- validation


def test_an_invalid_job_changes_nothing(deployment: Deployment) -> None:
    deployment.put_job("kept", hourly())
    kept = deployment.job("kept")
    entries = deployment.due_entries()

    with pytest.raises(ValidationError):
        deployment.put_job("new", {"properties": {"startTime": "2030-01-01T00:00:00Z"}})  # no action
    with pytest.raises(ValidationError):
        deployment.put_job("kept", hourly(retryPolicy={"retryType": "Fixed", "retryInterval": "PT1S"}))
    with pytest.raises(ValidationError):
        deployment.service.patch_job(deployment.ref("kept"), {"properties": {"recurrence": {"frequency": "Ever"}}})

    assert deployment.storage.jobs.get(deployment.ref("new")) is None
    assert deployment.job("kept") == kept
    assert deployment.due_entries() == entries
    assert job_count(deployment) == 1


def test_an_invalid_collection_changes_nothing(deployment: Deployment) -> None:
    before = deployment.storage.collections.get(COLLECTION)
    with pytest.raises(ValidationError):
        deployment.service.put_collection(COLLECTION, collection_body("Platinum"))
    with pytest.raises(ValidationError):
        deployment.service.put_collection(CollectionRef("sub1", "rg1", "other"), {"properties": {}})
    assert deployment.storage.collections.get(COLLECTION) == before
    assert [c.ref.name for c in deployment.service.list_collections("sub1")] == ["jc1"]


# ------------------------------------------------------------------------------------------- If-Match


def test_if_match_guards_every_job_write(deployment: Deployment) -> None:
    ref = deployment.ref("a")
    with pytest.raises(PreconditionFailedError):
        deployment.service.put_job(ref, hourly(), if_match="*")  # "*": only an existing job
    assert deployment.storage.jobs.get(ref) is None
    job = deployment.put_job("a", hourly())
    stale = job.version

    replaced, created = deployment.service.put_job(ref, hourly(URL + "v2"), if_match=stale)
    assert not created
    for write in (
        lambda: deployment.service.put_job(ref, hourly(URL + "v3"), if_match=stale),
        lambda: deployment.service.patch_job(ref, {"properties": {"state": "Disabled"}}, if_match=stale),
        lambda: deployment.service.delete_job(ref, if_match=stale),
    ):
        with pytest.raises(PreconditionFailedError):
            write()
    assert deployment.job("a") == replaced

    patched = deployment.service.patch_job(ref, {"properties": {"state": "Disabled"}}, if_match="*")
    assert patched.state is JobState.DISABLED
    deployment.service.delete_job(ref, if_match=f" {patched.version} ")
    assert deployment.storage.jobs.get(ref) is None


def test_if_match_guards_collection_writes(deployment: Deployment) -> None:
    stale = deployment.service.get_collection(COLLECTION).version
    deployment.service.patch_collection(COLLECTION, {"tags": {"a": "1"}}, if_match=stale)
    with pytest.raises(PreconditionFailedError):
        deployment.service.patch_collection(COLLECTION, {"tags": {"a": "2"}}, if_match=stale)
    with pytest.raises(PreconditionFailedError):
        deployment.service.delete_collection(COLLECTION, if_match=stale)
    with pytest.raises(PreconditionFailedError):
        deployment.service.put_collection(CollectionRef("sub1", "rg1", "new"), STANDARD, if_match="*")
    assert deployment.service.get_collection(COLLECTION).tags == {"a": "1"}


def test_a_collections_version_changes_with_what_its_writes_set_not_with_its_jobs(deployment: Deployment) -> None:
    """Creating and deleting jobs moves the collection's job counter (its row and row ETag change); the
    version clients see does not, so an edit of the collection started before them is made. A change of its
    tags, plan or state is a new version, and an edit started before it is a 412."""
    opened = deployment.service.get_collection(COLLECTION)
    for name in ("a", "b", "c"):
        deployment.put_job(name, hourly())
    deployment.service.delete_job(deployment.ref("b"))
    moved = deployment.service.get_collection(COLLECTION)
    assert moved.etag != opened.etag and moved.version == opened.version
    tagged = deployment.service.patch_collection(COLLECTION, {"tags": {"team": "ops"}}, if_match=opened.version)
    assert tagged.version != opened.version
    with pytest.raises(PreconditionFailedError):
        deployment.service.patch_collection(COLLECTION, {"tags": {"team": "dev"}}, if_match=opened.version)
    disabled = deployment.service.patch_collection(
        COLLECTION, {"properties": {"state": "Disabled"}}, if_match=f" {tagged.version} "
    )
    assert disabled.version not in (tagged.version, opened.version)
    assert deployment.service.get_collection(COLLECTION).tags == {"team": "ops"}


# ------------------------------------------------------------------------------- create, replace, delete


def test_create_replace_patch_and_delete_a_job(deployment: Deployment) -> None:
    ref, first = deployment.ref("Job1"), first_generation(deployment.clock.now)
    created_job, created = deployment.service.put_job(ref, hourly())
    assert created
    assert (created_job.generation, created_job.state, created_job.next_execution_time) == (first, "Enabled", LATER)
    [entry] = entries_of(deployment, "Job1")
    assert (entry.generation, entry.due) == (first, LATER)
    assert job_count(deployment) == 1

    replaced, created = deployment.service.put_job(JobRef(COLLECTION, "JOB1"), hourly(URL + "v2"))
    assert not created  # names are matched case-insensitively: a replace
    assert replaced.generation == first + 1
    assert [e.generation for e in entries_of(deployment, "Job1")] == [first + 1]  # the old entry went

    patched = deployment.service.patch_job(ref, {"properties": {"recurrence": {"interval": 2}}})
    assert patched.generation == first + 2
    assert views.job(patched)["properties"]["recurrence"] == {"frequency": "Hour", "interval": 2}
    assert views.job(patched)["properties"]["action"]["request"]["uri"] == URL + "v2"  # merged, not replaced
    assert job_count(deployment) == 1

    deployment.service.delete_job(ref)
    assert deployment.storage.jobs.get(ref) is None
    assert entries_of(deployment, "Job1") == []
    assert job_count(deployment) == 0
    with pytest.raises(NotFoundError):
        deployment.service.delete_job(ref)
    with pytest.raises(NotFoundError):
        deployment.service.patch_job(ref, {"properties": {"state": "Disabled"}})


def test_disabling_a_job_drops_its_entry_and_enabling_it_brings_one_back(deployment: Deployment) -> None:
    first = deployment.put_job("a", hourly()).generation
    deployment.service.patch_job(deployment.ref("a"), {"properties": {"state": "Disabled"}})
    assert entries_of(deployment, "a") == []
    assert deployment.service.get_job(deployment.ref("a")).next_execution_time is None
    deployment.service.patch_job(deployment.ref("a"), {"properties": {"state": "Enabled"}})
    [entry] = entries_of(deployment, "a")
    assert (entry.generation, entry.due) == (first + 2, LATER)


def test_a_finished_job_can_only_be_read_and_deleted(deployment: Deployment, target: HttpTarget) -> None:
    due = START + timedelta(seconds=20)
    deployment.put_job("once", job_body(due, http_action(target.base_url)))
    message = deployment.fire_at(due)
    assert deployment.executor.execute(message).outcome is Outcome.SUCCEEDED
    ref = deployment.ref("once")
    done = deployment.job("once")
    assert done.state is JobState.COMPLETED

    with pytest.raises(ConflictError, match="Completed"):
        deployment.service.put_job(ref, job_body(due + timedelta(hours=1), http_action(target.base_url)))
    with pytest.raises(ConflictError, match="Completed"):
        deployment.service.patch_job(ref, {"properties": {"state": "Enabled"}})
    deployment.service.set_collection_state(COLLECTION, "Disabled")
    assert deployment.job("once") == done  # a collection's state does not reach a finished job
    deployment.service.delete_job(ref)
    assert deployment.storage.jobs.get(ref) is None


# -------------------------------------------------------------------------------------------- quotas


def test_max_job_count_is_exact(deployment: Deployment) -> None:
    small = CollectionRef("sub1", "rg1", "small")
    deployment.service.put_collection(small, collection_body(maxJobCount=3))
    for i in range(3):
        deployment.service.put_job(JobRef(small, f"j{i}"), hourly())
    with pytest.raises(QuotaExceededError, match="maxJobCount"):
        deployment.service.put_job(JobRef(small, "j3"), hourly())
    assert deployment.storage.jobs.count(small) == 3
    assert job_count(deployment, small) == 3

    _, created = deployment.service.put_job(JobRef(small, "j0"), hourly(URL + "v2"))  # a replace takes no slot
    assert not created
    deployment.service.delete_job(JobRef(small, "j1"))
    deployment.service.put_job(JobRef(small, "j3"), hourly())
    with pytest.raises(QuotaExceededError):
        deployment.service.put_job(JobRef(small, "j4"), hourly())
    assert deployment.storage.jobs.count(small) == 3
    assert job_count(deployment, small) == 3


def test_a_collection_cannot_shrink_below_its_jobs_or_their_recurrence(deployment: Deployment) -> None:
    for i in range(3):
        deployment.put_job(f"j{i}", job_body(LATER, http_action(URL), MINUTELY))
    deployment.service.slots.give_back_ahead()  # now, not by a timer between the reads compared
    before = deployment.storage.collections.get(COLLECTION)

    with pytest.raises(QuotaExceededError, match="maxJobCount"):
        deployment.service.patch_collection(COLLECTION, {"properties": {"quota": {"maxJobCount": 2}}})
    hourly_quota = {"maxRecurrence": {"frequency": "Hour", "interval": 1}}
    with pytest.raises(QuotaExceededError, match="maxRecurrence"):
        deployment.service.patch_collection(COLLECTION, {"properties": {"quota": hourly_quota}})

    assert deployment.storage.collections.get(COLLECTION) == before
    deployment.service.patch_collection(COLLECTION, {"properties": {"quota": {"maxJobCount": 3}}})


def test_max_recurrence_refuses_a_job_that_recurs_more_often(deployment: Deployment) -> None:
    quota = {"maxRecurrence": {"frequency": "Minute", "interval": 30}}
    deployment.service.patch_collection(COLLECTION, {"properties": {"quota": quota}})

    with pytest.raises(QuotaExceededError, match="maxRecurrence"):
        deployment.put_job("often", job_body(LATER, http_action(URL), {"frequency": "Minute", "interval": 29}))
    deployment.put_job("ok", job_body(LATER, http_action(URL), {"frequency": "Minute", "interval": 30}))
    with pytest.raises(QuotaExceededError, match="maxRecurrence"):
        deployment.service.patch_job(deployment.ref("ok"), {"properties": {"recurrence": {"interval": 15}}})

    assert deployment.storage.jobs.get(deployment.ref("often")) is None
    assert views.job(deployment.job("ok"))["properties"]["recurrence"]["interval"] == 30
    assert job_count(deployment) == 1


# ---------------------------------------------------------------------------------------------- Free


FREE_A = CollectionRef("subfree", "rg", "free-a")
FREE_B = CollectionRef("subfree", "rg", "free-b")


def test_a_subscription_holds_one_free_collection(deployment: Deployment) -> None:
    service = deployment.service
    service.put_collection(FREE_A, collection_body("Free"))
    service.put_collection(FREE_A, collection_body("Free"))  # replacing the Free one is fine

    with pytest.raises(QuotaExceededError, match="Free"):
        service.put_collection(FREE_B, collection_body("Free"))
    service.put_collection(FREE_B, collection_body("Standard"))
    with pytest.raises(QuotaExceededError, match="Free"):
        service.patch_collection(FREE_B, {"properties": {"sku": {"name": "Free"}}})
    service.put_collection(CollectionRef("another-sub", "rg", "free"), collection_body("Free"))

    assert deployment.storage.collections.get(FREE_B).sku is Sku.STANDARD  # type: ignore[union-attr]
    service.delete_collection(FREE_A)
    service.patch_collection(FREE_B, {"properties": {"sku": {"name": "Free"}}})  # the place is free again


def test_a_free_collection_refuses_authentication_and_retries_more_often_than_hourly(
    deployment: Deployment,
) -> None:
    deployment.service.put_collection(FREE_A, collection_body("Free"))
    basic = {"type": "Basic", "username": "user", "password": "secret"}
    with_auth = job_body(LATER, {"type": "Http", "request": {"uri": URL, "method": "GET", "authentication": basic}})
    with pytest.raises(QuotaExceededError, match="authentication"):
        deployment.service.put_job(JobRef(FREE_A, "auth"), with_auth)
    with pytest.raises(QuotaExceededError, match="hourly"):
        deployment.service.put_job(JobRef(FREE_A, "fast"), hourly(retryPolicy=fixed_retries(2, "PT59M")))

    deployment.service.put_job(JobRef(FREE_A, "hourly"), hourly(retryPolicy=fixed_retries(2, "PT1H")))
    assert deployment.storage.jobs.count(FREE_A) == 1
    assert job_count(deployment, FREE_A) == 1


def test_a_free_collections_jobs_retry_hourly_unless_told_otherwise(deployment: Deployment) -> None:
    deployment.service.put_collection(FREE_A, collection_body("Free"))
    job, _ = deployment.service.put_job(JobRef(FREE_A, "default"), hourly())
    assert views.job(job)["properties"]["action"]["retryPolicy"]["retryInterval"] == "PT1H"
    # The same job in a Standard collection keeps the usual default.
    assert (
        views.job(deployment.put_job("std", hourly()))["properties"]["action"]["retryPolicy"]["retryInterval"]
        == "PT30S"
    )


def test_a_collection_becomes_free_only_if_its_jobs_keep_the_free_rules(deployment: Deployment) -> None:
    deployment.put_job("fast", hourly(retryPolicy=fixed_retries(2, "PT1M")))
    with pytest.raises(QuotaExceededError, match="hourly"):
        deployment.service.patch_collection(COLLECTION, {"properties": {"sku": {"name": "Free"}}})
    assert views.collection(deployment.service.get_collection(COLLECTION))["properties"]["sku"]["name"] == "Standard"


# ------------------------------------------------------------------------------- collection state


def test_disabling_a_collection_disables_its_jobs_and_enabling_it_enables_them(
    deployment: Deployment, target: HttpTarget
) -> None:
    due = START + timedelta(seconds=20)
    deployment.put_job("once", job_body(due, http_action(target.base_url)))
    deployment.executor.execute(deployment.fire_at(due))
    deployment.put_job("a", hourly())
    deployment.put_job("b", hourly())
    deployment.service.patch_job(deployment.ref("b"), {"properties": {"state": "Disabled"}})

    deployment.service.patch_collection(COLLECTION, {"properties": {"state": "Disabled"}})

    states = {job.ref.name: job.state for job in deployment.service.list_jobs(COLLECTION)}
    assert states == {"a": JobState.DISABLED, "b": JobState.DISABLED, "once": JobState.COMPLETED}
    assert deployment.occurrence_entries() == []

    deployment.service.set_collection_state(COLLECTION, "Enabled")

    states = {job.ref.name: job.state for job in deployment.service.list_jobs(COLLECTION)}
    assert states == {"a": JobState.ENABLED, "b": JobState.ENABLED, "once": JobState.COMPLETED}
    assert {entry.job_row for entry in deployment.occurrence_entries()} == {"a", "b"}


def test_deleting_a_collection_removes_its_jobs_their_entries_and_history(
    deployment: Deployment, target: HttpTarget
) -> None:
    deployment.put_job("a", hourly(target.base_url))
    deployment.put_job("b", hourly())
    deployment.service.run_job(deployment.ref("a"))
    assert [r.outcome for r in deployment.deliver()] == [Outcome.SUCCEEDED]
    assert len(deployment.history("a")) == 1
    assert len(deployment.occurrence_entries()) == 2

    deployment.service.delete_collection(COLLECTION)

    with pytest.raises(NotFoundError):
        deployment.service.get_collection(COLLECTION)
    assert deployment.storage.collections.get(COLLECTION) is None
    assert deployment.storage.jobs.count(COLLECTION) == 0
    assert deployment.occurrence_entries() == []
    assert list(deployment.storage.history.list(deployment.ref("a"))) == []
    with pytest.raises(NotFoundError):
        deployment.put_job("c", hourly())


def test_a_job_deleted_after_it_fired_and_created_again_fires_only_on_its_new_schedule(
    deployment: Deployment, target: HttpTarget
) -> None:
    due = START + timedelta(seconds=20)
    deployment.put_job("a", job_body(due, http_action(target.base_url + "/old"), HOURLY))
    assert deployment.executor.execute(deployment.fire_at(due)).outcome is Outcome.SUCCEEDED
    deployment.service.delete_job(deployment.ref("a"))
    new_start = START + timedelta(hours=3)
    deployment.put_job("a", job_body(new_start, http_action(target.base_url + "/new"), HOURLY))

    deployment.run_until(new_start - timedelta(minutes=1))

    assert [r.path for r in target.received] == ["/old"]  # the new job has not started yet


def test_the_time_windows_of_a_job_are_measured_from_the_services_clock(deployment: Deployment) -> None:
    """A start may be at most 18 months ahead and an end must be in the future, both as of the service's
    clock (here simulated, three years ahead of the real one), not the machine's."""
    deployment.clock.set(START + timedelta(days=3 * 365))
    now = deployment.clock.now
    job = deployment.put_job("later", job_body(now + timedelta(hours=1), http_action(URL), HOURLY))
    assert job.next_execution_time == now + timedelta(hours=1)
    with pytest.raises(ValidationError) as too_far:
        deployment.put_job("too-far", job_body(now + timedelta(days=19 * 31), http_action(URL), HOURLY))
    assert too_far.value.path == "properties.startTime"
    ended = {**HOURLY, "endTime": format_instant(now - timedelta(minutes=1))}
    with pytest.raises(ValidationError) as past:
        deployment.service.patch_job(deployment.ref("later"), {"properties": {"recurrence": ended}})
    assert past.value.path == "properties.recurrence.endTime"


# ------------------------------------------------------------------------------------ races and failures


def test_a_lost_write_race_is_retried_and_the_operation_succeeds(deployment: Deployment) -> None:
    first = deployment.put_job("a", hourly()).generation
    deployment.storage.jobs.fail_next("save", EtagMismatchError("changed by another request"))

    patched = deployment.service.patch_job(deployment.ref("a"), {"properties": {"state": "Disabled"}})

    assert patched.state is JobState.DISABLED
    assert deployment.job("a").generation == first + 1  # decided again on a fresh read: one new generation


def test_a_create_that_lost_a_race_is_retried_and_takes_one_slot(deployment: Deployment) -> None:
    deployment.storage.jobs.fail_next("save", AlreadyExistsError("created by another request"))
    first = first_generation(deployment.clock.now)

    job, created = deployment.service.put_job(deployment.ref("a"), hourly())

    assert created
    assert job.generation == first_generation(job.created_at) >= first
    assert job_count(deployment) == 1
    assert [entry.generation for entry in entries_of(deployment, "a")] == [job.generation]


def test_a_lost_collection_race_is_retried(deployment: Deployment) -> None:
    deployment.storage.collections.fail_next("save", EtagMismatchError("changed by another request"))
    deployment.service.patch_collection(COLLECTION, {"tags": {"k": "v"}})
    assert deployment.service.get_collection(COLLECTION).tags == {"k": "v"}


def test_with_if_match_a_race_lost_to_a_write_of_the_same_version_is_retried(deployment: Deployment) -> None:
    """The row changed between the read and the write, the job's version did not (as when a fire writes its
    counters): the write starts over from a fresh read and is made."""
    job = deployment.put_job("a", hourly())
    deployment.storage.jobs.fail_next("save", EtagMismatchError("changed by another request"))
    patched = deployment.service.patch_job(
        deployment.ref("a"), {"properties": {"state": "Disabled"}}, if_match=job.version
    )
    assert patched.state is JobState.DISABLED and deployment.job("a").state is JobState.DISABLED


def test_a_fire_does_not_change_the_version_an_edit_names_and_an_edit_does(
    deployment: Deployment, target: HttpTarget
) -> None:
    """The ETag clients see covers the definition and the state, not what a fire writes (counters, next
    execution time, last outcome): an edit started before a run saves after it; one started before another
    edit, or before the service ended the job, is a 412 and changes nothing."""
    due = START + timedelta(seconds=20)
    opened = deployment.put_job("a", job_body(due, http_action(target.base_url), HOURLY))
    deployment.executor.execute(deployment.fire_at(due))
    fired = deployment.job("a")
    assert fired.execution_count == 1 and fired.etag != opened.etag
    assert fired.version == opened.version
    saved, created = deployment.service.put_job(deployment.ref("a"), hourly(URL + "v2"), if_match=opened.version)
    assert not created and saved.version != opened.version
    with pytest.raises(PreconditionFailedError):
        deployment.service.put_job(deployment.ref("a"), hourly(URL + "v3"), if_match=opened.version)
    assert deployment.job("a").definition == saved.definition

    once = deployment.put_job("once", job_body(due, http_action(target.base_url)))
    deployment.executor.execute(deployment.fire_at(due))
    assert deployment.job("once").state is JobState.COMPLETED
    with pytest.raises(PreconditionFailedError):
        deployment.service.delete_job(deployment.ref("once"), if_match=once.version)
    assert deployment.job("once").state is JobState.COMPLETED


def test_a_job_save_the_store_refused_leaves_no_entry_and_gives_the_slot_back(deployment: Deployment) -> None:
    deployment.storage.jobs.fail_next("save", StorageError("storage answered 400", 400))

    with pytest.raises(StorageError):
        deployment.put_job("a", hourly())

    assert deployment.storage.jobs.get(deployment.ref("a")) is None
    assert deployment.due_entries() == []
    assert job_count(deployment) == 0


def test_a_job_save_that_failed_transiently_and_did_not_land_leaves_nothing(deployment: Deployment) -> None:
    deployment.put_job("kept", hourly())
    kept = deployment.job("kept")
    deployment.storage.jobs.fail_next("save", StorageError("connection reset"))

    with pytest.raises(StorageError):
        deployment.service.patch_job(deployment.ref("kept"), {"properties": {"recurrence": {"interval": 2}}})

    assert deployment.job("kept") == kept
    assert [entry.generation for entry in entries_of(deployment, "kept")] == [kept.generation]


def test_a_job_save_that_failed_transiently_but_landed_is_reported_as_done(deployment: Deployment) -> None:
    deployment.storage.jobs.fail_next("save", StorageError("connection reset"), landed=True)

    job, created = deployment.service.put_job(deployment.ref("a"), hourly())

    assert created
    assert job == deployment.job("a")
    assert [entry.due for entry in entries_of(deployment, "a")] == [LATER]
    assert job_count(deployment) == 1


def test_a_job_save_whose_outcome_cannot_be_read_keeps_its_entry_and_its_slot_for_repair(
    deployment: Deployment,
) -> None:
    deployment.storage.jobs.fail_next("save", StorageError("connection reset"))
    deployment.storage.jobs.fail_next("get", StorageError("connection reset"))

    with pytest.raises(StorageError):
        deployment.put_job("a", hourly())

    assert deployment.storage.jobs.get(deployment.ref("a")) is None
    assert len(entries_of(deployment, "a")) == 1  # the dispatcher removes it once abandoned
    assert job_count(deployment) == 1  # repaired from a count when the collection seems full


# ------------------------------------------------------------------------------------------- series


def test_an_edit_that_keeps_the_series_keeps_its_count_progress(deployment: Deployment, target: HttpTarget) -> None:
    due = START + timedelta(seconds=20)
    deployment.put_job("m", job_body(due, http_action(target.base_url + "/v1"), {**MINUTELY, "count": 3}))
    deployment.executor.execute(deployment.fire_at(due))
    defined_at = deployment.job("m").defined_at

    edit = {"properties": {"action": {"request": {"uri": target.base_url + "/v2"}}}}
    edited = deployment.service.patch_job(deployment.ref("m"), edit)

    assert edited.defined_at == defined_at
    assert edited.next_execution_time == due + timedelta(minutes=1)
    deployment.run_until(due + timedelta(minutes=10))
    assert [r.path for r in target.received] == ["/v1", "/v2", "/v2"]  # three in all
    assert deployment.job("m").state is JobState.COMPLETED
    assert deployment.job("m").execution_count == 3


def test_an_edit_of_the_recurrence_starts_a_new_series(deployment: Deployment, target: HttpTarget) -> None:
    due = START + timedelta(seconds=20)
    deployment.put_job("m", job_body(due, http_action(target.base_url), {**MINUTELY, "count": 3}))
    deployment.executor.execute(deployment.fire_at(due))
    deployment.clock.advance(1)  # (at the very instant of the run, the new series would start with it)

    edit = {"properties": {"recurrence": {"interval": 2}}}
    edited = deployment.service.patch_job(deployment.ref("m"), edit)

    assert edited.defined_at == deployment.clock.now
    deployment.run_until(due + timedelta(minutes=20))
    assert len(target.received) == 1 + 3  # the new series counts three of its own
    times = [r.headers["x-ms-scheduler-expected-execution-time"] for r in target.received[1:]]
    assert len(set(times)) == 3
    assert deployment.job("m").state is JobState.COMPLETED
