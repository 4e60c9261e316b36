"""K execution queues (SCHEDULER_EXECUTION_QUEUE_COUNT): the setting, the names, the router that spreads
messages by job, and the functions function_app.py declares for them (as the local host indexes them; the
same file as Microsoft's worker indexes it is in test_worker_indexing.py)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import azure.functions as func
import pytest

from local_host.app_index import index_app, resolve_setting_references
from local_host.queues import DEFAULT_THREAD_COUNT
from scheduler_core import settings, triggers
from scheduler_core.errors import ConfigurationError, StorageError
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.queue_router import BEHIND_FOR, ExecutionRouter, queue_index, queue_index_of_message
from scheduler_core.storage.keys import CollectionRef, JobRef, shard_of
from scheduler_core.storage.names import queue_names
from tests.support.function_apps import fresh_function_app

ROOT = Path(__file__).resolve().parents[2]
BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def load_function_app(monkeypatch: pytest.MonkeyPatch, count: int | str) -> func.FunctionApp:
    """function_app.py imported afresh with SCHEDULER_EXECUTION_QUEUE_COUNT set, as the Functions worker imports it
    in a deployment with that app setting."""
    monkeypatch.setenv("SCHEDULER_EXECUTION_QUEUE_COUNT", str(count))
    return fresh_function_app()


def message(job: JobRef, attempt: int = 0, cause: Cause = Cause.SCHEDULE, action: str = "main") -> str:
    return ExecutionMessage(
        job_partition=job.partition_key,
        job_row=job.row_key,
        generation=7,
        occurrence="2030-01-01T00:00:00Z",
        attempt=attempt,
        cause=cause,
        action=action,  # type: ignore[arg-type]
    ).to_json()


def jobs(count: int) -> list[JobRef]:
    return [JobRef(CollectionRef("sub", "rg", f"c{i % 7}"), f"job-{i}") for i in range(count)]


# ------------------------------------------------------------------------------------------------ settings


def test_one_queue_by_default_with_todays_name() -> None:
    loaded = settings.load(BASE)
    assert loaded.execution_queue_count == 1
    assert loaded.execution_queues == ("scheduler-executions",)
    assert loaded.execution_queue == "scheduler-executions"


def test_k_queues_are_named_after_the_first() -> None:
    loaded = settings.load({**BASE, "SCHEDULER_EXECUTION_QUEUE": "exec-ab12", "SCHEDULER_EXECUTION_QUEUE_COUNT": "3"})
    assert loaded.execution_queues == ("exec-ab12", "exec-ab12-1", "exec-ab12-2")
    assert settings.load({**BASE, "SCHEDULER_EXECUTION_QUEUE_COUNT": "32"}).execution_queues[-1] == (
        "scheduler-executions-31"
    )


@pytest.mark.parametrize("bad", ["0", "-1", "33", "three", "1.5", "2 queues"])
def test_a_bad_queue_count_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="SCHEDULER_EXECUTION_QUEUE_COUNT") as raised:
        settings.load({**BASE, "SCHEDULER_EXECUTION_QUEUE_COUNT": bad})
    assert "between 1 and 32" in raised.value.message or "integer" in raised.value.message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SCHEDULER_EXECUTION_QUEUE", "Exec-Upper"),
        ("SCHEDULER_EXECUTION_QUEUE", "exec--double"),
        ("SCHEDULER_EXECUTION_QUEUE", "x" * 54),  # with "-31-poison" it would pass 63 characters
        ("SCHEDULER_SCAN_QUEUE", "scan_underscore"),
    ],
)
def test_queue_names_that_storage_refuses_are_clear_errors(name: str, value: str) -> None:
    environ = {**BASE, name: value, "SCHEDULER_EXECUTION_QUEUE_COUNT": "32"}
    with pytest.raises(ConfigurationError, match=name):
        settings.load(environ)


def test_the_longest_base_name_that_fits_every_suffix_loads() -> None:
    longest = "x" * (63 - len("-31-poison"))
    loaded = settings.load({**BASE, "SCHEDULER_EXECUTION_QUEUE": longest, "SCHEDULER_EXECUTION_QUEUE_COUNT": "32"})
    assert max(len(q) + len("-poison") for q in loaded.execution_queues) == 63


def test_python_threadpool_thread_count_is_declared_with_the_value_infra_sets() -> None:
    spec = {s.name: s for s in settings.SETTINGS}["PYTHON_THREADPOOL_THREAD_COUNT"]
    assert spec.default == "40" == str(DEFAULT_THREAD_COUNT)
    assert settings.load(BASE).python_threadpool_thread_count == 40
    assert settings.load({**BASE, "PYTHON_THREADPOOL_THREAD_COUNT": "8"}).python_threadpool_thread_count == 8
    for bad in ("0", "many"):
        with pytest.raises(ConfigurationError, match="PYTHON_THREADPOOL_THREAD_COUNT"):
            settings.load({**BASE, "PYTHON_THREADPOOL_THREAD_COUNT": bad})


def test_bindings_resolve_to_the_names_the_settings_give() -> None:
    environ = {**BASE, "SCHEDULER_EXECUTION_QUEUE": "exec-q", "SCHEDULER_EXECUTION_QUEUE_COUNT": "4"}
    loaded = settings.load(environ)
    resolved = tuple(resolve_setting_references(settings.execution_queue_binding(i), environ) for i in range(4))
    assert resolved == loaded.execution_queues


# ------------------------------------------------------------------------------------------------ the router


def test_every_attempt_of_a_job_goes_to_one_queue() -> None:
    for job in jobs(200):
        texts = [
            message(job),
            message(job, attempt=1, cause=Cause.RETRY),
            message(job, attempt=3, cause=Cause.RETRY),
            message(job, action="error"),
            message(job, cause=Cause.MANUAL),
        ]
        indexes = {queue_index_of_message(text, 5) for text in texts}
        assert indexes == {queue_index(job.partition_key, job.row_key, 5)}


def test_jobs_spread_evenly_over_the_queues() -> None:
    counts = Counter(queue_index(job.partition_key, job.row_key, 3) for job in jobs(6000))
    assert set(counts) == {0, 1, 2}
    assert all(1800 <= n <= 2200 for n in counts.values()), counts  # 2,000 each, within 10%


def test_the_queue_does_not_follow_the_due_index_shard() -> None:
    """Jobs of one shard (dispatched by one scan) spread over every queue, also when K divides the shards."""
    by_shard: dict[str, set[int]] = {}
    for job in jobs(2000):
        by_shard.setdefault(shard_of(job.identity, 16), set()).add(queue_index(job.partition_key, job.row_key, 4))
    assert all(queues == {0, 1, 2, 3} for queues in by_shard.values()), by_shard


def test_one_queue_takes_everything_and_needs_no_parsing() -> None:
    assert queue_index_of_message("not json at all", 1) == 0
    assert queue_index("p", "r", 1) == 0
    with pytest.raises(ValueError, match="count"):
        queue_index("p", "r", 0)


def test_a_message_without_a_job_goes_to_queue_zero() -> None:
    for text in ("not json", "[]", '{"v": 1}', '{"job_partition": 3, "job_row": "x"}'):
        assert queue_index_of_message(text, 4) == 0


def test_the_router_sends_each_message_to_its_jobs_queue() -> None:
    sent: list[list[tuple[str, int]]] = [[], [], []]
    router = ExecutionRouter([lambda text, visibility, box=box: box.append((text, visibility)) for box in sent])
    texts = [message(job) for job in jobs(60)]
    for n, text in enumerate(texts):
        router(text, n)
    router.send(texts[0])
    assert sum(len(box) for box in sent) == 61
    for index, box in enumerate(sent):
        assert box, f"queue {index} got nothing"
        assert all(router.queue_of(text) == index for text, _ in box)
    assert (texts[0], 0) in sent[router.queue_of(texts[0])]
    assert (texts[5], 5) in sent[router.queue_of(texts[5])]
    with pytest.raises(ValueError, match="at least one"):
        ExecutionRouter([])


def test_the_router_asks_the_queue_of_a_messages_job_whether_it_is_behind_at_most_once_per_few_seconds() -> None:
    asked: list[tuple[int, timedelta, datetime]] = []
    answers = [True, False, True]

    def probe(index: int) -> Callable[[timedelta, datetime], bool]:
        def behind(older_than: timedelta, now: datetime) -> bool:
            asked.append((index, older_than, now))
            return answers[index]

        return behind

    router = ExecutionRouter([lambda text, visibility: None] * 3, [probe(0), probe(1), probe(2)])
    texts = {router.queue_of(text): text for text in (message(job) for job in jobs(60))}
    lease, now = timedelta(seconds=120), datetime(2031, 1, 1, tzinfo=UTC)
    assert [router.behind(texts[i], lease, now) for i in range(3)] == answers
    assert [index for index, _, _ in asked] == [0, 1, 2]
    assert asked[0][1:] == (lease, now)
    # Within BEHIND_FOR of the pipeline's clock the answer stands (a scan looking at a burst's watches peeks once).
    assert router.behind(texts[0], lease, now + BEHIND_FOR - timedelta(milliseconds=1)) is True
    assert len(asked) == 3
    answers[0] = False
    assert router.behind(texts[0], lease, now + BEHIND_FOR) is False
    assert len(asked) == 4
    # A clock that moved back (simulated time set earlier) asks again.
    assert router.behind(texts[0], lease, now - timedelta(seconds=1)) is False
    assert len(asked) == 5


def test_a_queue_without_a_probe_or_whose_probe_fails_is_taken_as_keeping_up() -> None:
    def failing(older_than: timedelta, now: datetime) -> bool:
        raise StorageError("storage answered 503", 503)

    now = datetime(2031, 1, 1, tzinfo=UTC)
    text = message(jobs(1)[0])
    assert ExecutionRouter([lambda text, visibility: None]).behind(text, timedelta(0), now) is False
    assert ExecutionRouter([lambda text, visibility: None], [failing]).behind(text, timedelta(0), now) is False
    with pytest.raises(ValueError, match="one backlog probe per queue"):
        ExecutionRouter([lambda text, visibility: None] * 2, [failing])


# ------------------------------------------------------------------------------------------------ function_app


def test_function_app_declares_one_function_per_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    index = index_app(load_function_app(monkeypatch, 3))
    execution = {q.name: q.queue_name for q in index.queues if q.name not in ("scan_shard", "cleanup_collections")}
    assert execution == {
        "execute_occurrence": "%SCHEDULER_EXECUTION_QUEUE%",
        "execute_occurrence_1": "%SCHEDULER_EXECUTION_QUEUE%-1",
        "execute_occurrence_2": "%SCHEDULER_EXECUTION_QUEUE%-2",
    }
    assert {q.connection for q in index.queues} == {"AzureWebJobsStorage"}
    assert len({id(q.handler) for q in index.queues}) == len(index.queues)  # a function each
    environ = {**BASE, "SCHEDULER_EXECUTION_QUEUE": "exec-x", "SCHEDULER_EXECUTION_QUEUE_COUNT": "3"}
    names = [resolve_setting_references(execution[f.name], environ) for f in triggers.execution_functions()]
    assert tuple(names) == settings.load(environ).execution_queues
    others = {f.name for f in index.http} | {t.name for t in index.timers} | {"scan_shard"}
    assert others == {
        "management_api",
        "openapi_document",
        "dashboard",
        "health",
        "home",
        "dispatch_tick",
        "cleanup",
        "scan_shard",
    }


def test_function_app_with_one_queue_is_todays_app(monkeypatch: pytest.MonkeyPatch) -> None:
    index = index_app(load_function_app(monkeypatch, 1))
    assert {q.name: q.queue_name for q in index.queues} == {
        "scan_shard": "%SCHEDULER_SCAN_QUEUE%",
        "execute_occurrence": "%SCHEDULER_EXECUTION_QUEUE%",
        "cleanup_collections": "%SCHEDULER_CLEANUP_QUEUE%",
    }


def test_a_bad_count_still_indexes_queue_zero_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="scheduler_core.triggers"):
        index = index_app(load_function_app(monkeypatch, "40"))
    assert [q.name for q in index.queues if q.name.startswith("execute")] == ["execute_occurrence"]
    assert any("SCHEDULER_EXECUTION_QUEUE_COUNT must be between 1 and 32" in r.getMessage() for r in caplog.records)
    monkeypatch.setenv("AzureWebJobsStorage", "UseDevelopmentStorage=true")
    with pytest.raises(ConfigurationError, match="SCHEDULER_EXECUTION_QUEUE_COUNT"):
        settings.load()  # what the first invocation (and /health) then meets


def test_provisioning_names_every_execution_queue_and_its_poison_queue() -> None:
    loaded = settings.load({**BASE, "SCHEDULER_EXECUTION_QUEUE_COUNT": "3"})
    names = queue_names(loaded)
    for queue in loaded.execution_queues:
        assert queue in names and queue + "-poison" in names
    assert len(loaded.execution_queues) == 3 and len(set(names)) == len(names) == 10
    assert {loaded.cleanup_queue, loaded.cleanup_queue + "-poison"} <= set(names)
