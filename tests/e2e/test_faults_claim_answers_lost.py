"""Faults: the answer to one of an attempt's own storage writes is lost (the write landed; the connection
broke before its answer came back). The real executor over Azurite's tables reached through
:mod:`tests.support.answer_loss_proxy`, a real TCP proxy that lets the chosen request reach Azurite and then
resets the connection instead of passing its answer on; simulated time (``tests/support/harness.py``) and a
real HTTP target on 127.0.0.1.

The promise: a lost answer costs no lease and no second count. The claim's insert is retried (by the
storage client, then :mod:`scheduler_core.pipeline.durable`) and answered "already exists": the executor
recognises the claim as its own (its token) and runs the attempt at once, instead of taking it for another
worker's and waiting for the claim's lease to end. A retried counters write or history record lands once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core.pipeline.execute import Outcome
from scheduler_core.settings import Settings
from scheduler_core.storage.names import CLAIMS_TABLE, JOBS_TABLE
from tests.support.answer_loss_proxy import answer_loss_proxy
from tests.support.harness import near_now
from tests.support.http_target import HttpTarget
from tests.support.jobs import job_body

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

WRITES = ("POST", "PUT", "PATCH", "MERGE")


def writes_to(table: str, methods: tuple[str, ...]) -> Callable[[str, str], bool]:
    """Requests that write one entity of ``table`` (or insert into it) with one of ``methods``."""

    def accepts(method: str, target: str) -> bool:
        last = urlsplit(target).path.rstrip("/").rsplit("/", 1)[-1]
        return method in methods and (last == table or last.startswith(f"{table}("))

    return accepts


@pytest.mark.parametrize(
    ("write", "table", "methods"),
    [
        ("the claim's insert", CLAIMS_TABLE, ("POST",)),
        ("the counters' write", JOBS_TABLE, WRITES),
        ("the history record (the claim completed)", CLAIMS_TABLE, ("PUT", "PATCH", "MERGE")),
    ],
)
def test_a_lost_answer_to_an_attempts_own_write_costs_no_lease_and_no_second_count(
    storage_env: Settings,
    azurite: Azurite,
    target: HttpTarget,
    write: str,
    table: str,
    methods: tuple[str, ...],
) -> None:
    with answer_loss_proxy(("127.0.0.1", azurite.ports.table)) as proxy:
        ports = AzuritePorts(blob=azurite.ports.blob, queue=azurite.ports.queue, table=proxy.port)
        settings = dataclasses.replace(storage_env, storage_connection_string=ports.connection_string())
        start = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1, seconds=5)
        pipeline = near_now(settings, azurite=True, start=start)
        due = start + timedelta(seconds=20)
        action = {"type": "Http", "request": {"uri": target.base_url, "method": "POST", "body": "ping"}}
        pipeline.put_job("once", job_body(due, action))
        pipeline.clock.set(due)
        [message] = pipeline.take()

        proxy.lose(writes_to(settings.table_name(table), methods), times=1)
        report = pipeline.services.executor.execute(message)

        [lost] = proxy.lost
        assert lost.answer.split()[1] in ("201", "204"), (write, lost)  # it landed; its answer was lost
        assert report.outcome is Outcome.SUCCEEDED, (write, report)  # not BUSY: no lease to wait out
        assert len(target.received) == 1
        assert pipeline.services.executor.execute(message).outcome is Outcome.STALE  # the one-shot job ended
        ref = pipeline.ref("once")
        job = pipeline.services.service.get_job(ref)
        assert (job.state, job.execution_count, job.failure_count) == ("Completed", 1, 0), write
        history = pipeline.services.service.list_history(ref)
        assert [(h.status, h.execution_id) for h in history] == [("Completed", report.execution_id)], write
