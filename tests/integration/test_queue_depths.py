"""Queue depths split into due and staged, on Azurite: an idle, healthy deployment shows the messages it sent
ahead of their second as *staged*, not as a backlog (``/health`` and the dispatch tick's gauges).

Real Storage queues: messages sent visible now and messages sent with a visibility delay (as the dispatcher
sends an occurrence ahead of its second); the probe is the one the app wires
(``adapters/azure/depths.py``), and ``/health``'s body is the one ``health.check`` answers over the real
services."""

from __future__ import annotations

import pytest

from scheduler_core import health, wiring
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.adapters.azure.depths import azure_execution_depths
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.queue_depths import DUE_PEEK
from scheduler_core.settings import Settings

pytestmark = pytest.mark.azurite


def test_a_queue_holding_messages_sent_ahead_shows_them_staged_not_due(storage_env: Settings) -> None:
    provision(storage_env)
    queue = queue_client(storage_env, storage_env.execution_queue)
    for n in range(3):
        queue.send_message(f"due-{n}")
    for n in range(5):
        queue.send_message(f"later-{n}", visibility_timeout=600)

    [depth] = azure_execution_depths(storage_env)()
    assert (depth.depth, depth.due, depth.staged, depth.poison) == (8, 3, 5, 0)

    status, body = health.check(lambda: wiring.build(storage_env))
    assert status == 200, body
    assert (body["execution_queue_depth"], body["execution_queue_due"], body["execution_queue_staged"]) == (8, 3, 5)
    assert body["execution_queues"] == [
        {"name": storage_env.execution_queue, "depth": 8, "due": 3, "staged": 5, "poison": 0}
    ]


def test_a_backlog_beyond_one_peek_counts_that_many_due_at_least_and_staged_as_unknown(storage_env: Settings) -> None:
    provision(storage_env)
    queue = queue_client(storage_env, storage_env.execution_queue)
    for n in range(DUE_PEEK + 3):
        queue.send_message(f"due-{n}")
    [depth] = azure_execution_depths(storage_env)()
    assert (depth.depth, depth.due, depth.staged) == (DUE_PEEK + 3, DUE_PEEK, None)  # due: a floor; staged unknown
