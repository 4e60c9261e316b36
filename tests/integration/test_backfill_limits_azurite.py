"""The plans' backfill limits under racing requests, on Azurite: two instances of the app (``wiring.build``
twice over the same tables and queue: each its own service, slots and races) and real threads posting backfills
at the same instant. The limits hold across them: the backfills accepted never hold more occurrences than the
limit, each refused one is a 409 naming the limit, and no more messages are sent than the limit allows.

(What the accepted occurrences then do, and that the calls never exceed the limit, is shown in simulated time
with the real executor in ``tests/decisions/policies/test_backfill_limits.py``.)"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_core import wiring
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.errors import QuotaExceededError
from scheduler_core.ledger import OCCURRENCE_KIND, ledger_partition
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.jobs import http_action, job_body

pytestmark = pytest.mark.azurite

COLLECTION = CollectionRef("sub", "rg", "jc")


def instances(config: Settings, sku: str, jobs: dict[str, str]) -> tuple[wiring.Services, wiring.Services, datetime]:
    """Two instances over the same storage, a collection of plan ``sku`` and its jobs (name: frequency), each
    started a day ago (so the day is their past). Returns the instances and the jobs' start."""
    provision(config)
    first, second = wiring.build(config), wiring.build(config)
    first.service.put_collection(COLLECTION, {"location": "westus", "properties": {"sku": {"name": sku}}})
    start = (datetime.now(UTC) - timedelta(days=1)).replace(second=0, microsecond=0)
    for name, frequency in jobs.items():
        body = job_body(start, http_action("http://127.0.0.1:9/never", body=None), {"frequency": frequency})
        first.service.put_job(JobRef(COLLECTION, name), body)
    return first, second, start


def race(posts: list[tuple[wiring.Services, str, dict[str, Any]]]) -> list[int | str]:
    """Each backfill from a thread of its own, all released at once: the count sent, or the refusal's message."""
    barrier = threading.Barrier(len(posts))
    answers: list[int | str] = [""] * len(posts)

    def run(index: int) -> None:
        services, name, body = posts[index]
        barrier.wait()
        try:
            answers[index] = services.service.backfill_job(JobRef(COLLECTION, name), body)
        except QuotaExceededError as refused:
            answers[index] = f"{refused.status} {refused.code}: {refused.message}"

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(posts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return answers


def sent(config: Settings) -> int:
    """Messages in the execution queue (visible or not: a backfill's later ones wait for their slots)."""
    return int(queue_client(config, config.execution_queue).get_queue_properties().approximate_message_count or 0)


def ledger_occurrences(services: wiring.Services) -> int:
    rows = services.stores.due.due_before(ledger_partition(COLLECTION.identity), "~")
    return sum(1 for row in rows if row.kind == OCCURRENCE_KIND)


def window(start: datetime, first: int, count: int, unit: timedelta) -> dict[str, str]:
    return {
        "startTime": format_instant(start + first * unit),
        "endTime": format_instant(start + (first + count) * unit),
    }


def test_racing_backfills_of_one_job_on_two_instances_never_take_more_than_1000(storage_env: Settings) -> None:
    first, second, start = instances(storage_env, "Standard", {"m": "Minute"})
    before = sent(storage_env)
    minute = timedelta(minutes=1)
    answers = race([(first if n % 2 else second, "m", window(start, 280 * n, 280, minute)) for n in range(5)])
    accepted = [answer for answer in answers if answer == 280]
    refused = [answer for answer in answers if isinstance(answer, str)]
    assert len(accepted) + len(refused) == 5
    assert 1 <= len(accepted) <= 3  # 3 x 280 <= 1000 < 4 x 280
    assert all(
        "409 QuotaExceeded" in text and "maxOutstandingPerJob (1000 on the Standard plan)" in text for text in refused
    )
    assert first.service.jobs.backfills.outstanding(COLLECTION, "m") == 280 * len(accepted)
    assert second.service.jobs.backfills.outstanding(COLLECTION) == 280 * len(accepted) == ledger_occurrences(first)
    assert sent(storage_env) - before == 280 * len(accepted) <= 1000


def test_racing_backfills_of_a_free_collection_never_take_more_than_10(storage_env: Settings) -> None:
    first, second, start = instances(storage_env, "Free", {"a": "Hour", "b": "Hour"})
    before = sent(storage_env)
    hour = timedelta(hours=1)
    posts = [(first if n % 2 else second, name, window(start, 3 * n, 3, hour)) for n in range(4) for name in "ab"]
    answers = race(posts)
    accepted = [answer for answer in answers if answer == 3]
    refused = [answer for answer in answers if isinstance(answer, str)]
    assert len(accepted) + len(refused) == 8 and 1 <= len(accepted) <= 3  # 3 x 3 <= 10 < 4 x 3
    assert all("409 QuotaExceeded" in text and "(10 on the Free plan)" in text for text in refused)
    assert first.service.jobs.backfills.outstanding(COLLECTION) == 3 * len(accepted) == ledger_occurrences(second)
    assert sent(storage_env) - before == 3 * len(accepted) <= 10
