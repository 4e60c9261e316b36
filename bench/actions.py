"""Benchmark: each action type through the executor's action path, next to the peer's raw rate.

    .venv/bin/python -m bench.actions [--count 300] [--executor-count 60]

Local peers, all in this process or on loopback: an HTTP server (``tests/support/http_target.py``), a
private Azurite queue with a SAS token, and the AMQP test broker (``tests/support/amqp_broker.py``).
For each action type it times, sequentially:

* **raw**: the peer's own client from this process (``requests`` session, and a session per call as the
  HTTP sender uses one, so that no connection is shared between calls; ``QueueClient.send_message``,
  one open azure-servicebus sender's ``send_messages``);
* **runner**: ``ActionRunner.run`` from ``default_runner`` (what ``Executor.execute`` calls for the
  action: payload mapping, authentication, cached clients and senders, the history message);
* **executor**: ``Executor.execute`` of on-demand execution messages end to end (job reload, claim,
  action, history row, counters: about six Azurite table round trips per execution).

Service Bus also shows what a sender per message would cost (``new sender each``), i.e. why senders are
reused, and the number of AMQP connections the broker saw during the runner run.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from azure.core.credentials import AzureNamedKeyCredential
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.storage.queue import QueueClient, QueueSasPermissions, generate_queue_sas

from bench.common import azurite_settings, table
from local_host.azurite import DEV_ACCOUNT, DEV_KEY
from scheduler_core import wiring
from scheduler_core.actions import ActionContext, ActionRunner
from scheduler_core.actions.registry import default_runner
from scheduler_core.definitions import read_action
from scheduler_core.pipeline.messages import Cause, ExecutionMessage
from scheduler_core.recurrence import format_instant
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.amqp_broker import amqp_broker
from tests.support.http_target import http_target

SB_KEY = "bench-key"


def rate(fn: Callable[[int], None], count: int) -> float:
    fn(-1)  # warm up (connections, senders, tokens)
    started = time.perf_counter()
    for i in range(count):
        fn(i)
    return count / (time.perf_counter() - started)


def ctx(i: int) -> ActionContext:
    now = datetime.now(UTC)
    return ActionContext("/jobs/bench", "/jobCollections/bench", now, f"bench-{i}-{uuid.uuid4().hex[:6]}", 0)


def runner_call(runner: ActionRunner, action: dict[str, Any]) -> Callable[[int], None]:
    typed = read_action(action)

    def call(i: int) -> None:
        result = runner.run(typed, ctx(i))
        if not result.succeeded:
            raise RuntimeError(result.message)

    return call


def executor_rate(action: dict[str, Any], name: str, count: int) -> float:
    services = wiring.services()
    collection = CollectionRef("bench", "rg", "actions")
    services.service.put_collection(collection, {"location": "westus", "properties": {"sku": {"name": "P10Premium"}}})
    ref = JobRef(collection, name)
    services.service.put_job(
        ref, {"properties": {"action": action, "recurrence": {"frequency": "Hour", "interval": 1}}}
    )
    job = services.service.get_job(ref)
    base = datetime.now(UTC).replace(microsecond=0)

    def run(i: int) -> None:
        message = ExecutionMessage(
            job_partition=job.ref.partition_key,
            job_row=job.ref.row_key,
            generation=job.generation,
            occurrence=format_instant(base - timedelta(seconds=i + 2)),  # past: no early wait
            cause=Cause.MANUAL,
        )
        report = services.executor.execute(message)
        if report.outcome.value != "succeeded":
            raise RuntimeError(report.message)

    return rate(run, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--executor-count", type=int, default=60)
    args = parser.parse_args()
    rows: list[list[object]] = []
    with amqp_broker(["orders"]) as broker, http_target() as target:
        extra = {"SCHEDULER_SERVICE_BUS_ENDPOINT": broker.endpoint, "SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT": "text"}
        with azurite_settings(**extra) as loaded:
            queue_name = f"bench-{uuid.uuid4().hex[:8]}"
            connection = loaded.storage_connection_string or ""
            QueueClient.from_connection_string(connection, queue_name).create_queue()
            queue_port = connection.split("QueueEndpoint=http://127.0.0.1:")[1].split("/")[0]
            endpoint = f"http://127.0.0.1:{queue_port}/{{account}}"
            config = dataclasses.replace(loaded, storage_queue_endpoint=endpoint)
            runner = default_runner(config)
            wiring.install(wiring.build(config, runner=runner, send_execution=lambda text, delay: None))
            sas = generate_queue_sas(
                DEV_ACCOUNT,
                queue_name,
                DEV_KEY,
                permission=QueueSasPermissions(add=True),
                expiry=datetime.now(UTC) + timedelta(hours=1),
            )

            # ---- HTTP
            http_action = {"type": "Http", "request": {"uri": target.base_url + "/hook", "method": "POST", "body": "x"}}
            session = requests.Session()
            raw = rate(
                lambda i: session.post(target.base_url + "/raw", data=b"x", timeout=10).raise_for_status(), args.count
            )

            def unpooled(i: int) -> None:
                with requests.Session() as own:  # a connection of its own per call, as the sender makes them
                    own.post(target.base_url + "/raw", data=b"x", timeout=10).raise_for_status()

            raw_unpooled = rate(unpooled, args.count)
            via_runner = rate(runner_call(runner, http_action), args.count)
            via_executor = executor_rate(http_action, "http", args.executor_count)
            rows.append(
                [
                    "Http (local server)",
                    f"{raw:.0f}",
                    f"{via_runner:.0f}",
                    f"{via_runner / raw:.0%}",
                    f"{via_executor:.0f}",
                    f"raw with a connection per call (what the sender does, so that no connection is shared "
                    f"between calls): {raw_unpooled:.0f}/s, {raw_unpooled / raw:.0%} of raw; runner "
                    f"{via_runner / raw_unpooled:.0%} of it",
                ]
            )

            # ---- Storage queue
            sq_action = {
                "type": "StorageQueue",
                "queueMessage": {
                    "storageAccount": DEV_ACCOUNT,
                    "queueName": queue_name,
                    "sasToken": sas,
                    "message": "x",
                },
            }
            raw_client = QueueClient(endpoint.replace("{account}", DEV_ACCOUNT), queue_name, credential=sas)

            def raw_send(i: int) -> None:
                raw_client.send_message("x")

            raw = rate(raw_send, args.count)
            via_runner = rate(runner_call(runner, sq_action), args.count)
            via_executor = executor_rate(sq_action, "storage", args.executor_count)
            rows.append(
                [
                    "StorageQueue (Azurite, SAS)",
                    f"{raw:.0f}",
                    f"{via_runner:.0f}",
                    f"{via_runner / raw:.0%}",
                    f"{via_executor:.0f}",
                    "",
                ]
            )

            # ---- Service Bus
            sb_payload = {
                "namespace": "bench",
                "queueName": "orders",
                "message": "x",
                "authentication": {"type": "SharedAccessKey", "sasKeyName": "Root", "sasKey": SB_KEY},
                "customMessageProperties": {"k": "v"},
            }
            sb_action = {"type": "ServiceBusQueue", "serviceBusQueueMessage": sb_payload}
            host = broker.endpoint.split("://")[1]
            client = ServiceBusClient(host, AzureNamedKeyCredential("Root", SB_KEY), use_tls=False)
            sdk_sender = client.get_queue_sender("orders")
            raw = rate(lambda i: sdk_sender.send_messages(ServiceBusMessage("x")), args.count)
            sdk_sender.close()
            client.close()

            def fresh(i: int) -> None:
                one = ServiceBusClient(host, AzureNamedKeyCredential("Root", SB_KEY), use_tls=False)
                with one, one.get_queue_sender("orders") as once:
                    once.send_messages(ServiceBusMessage("x"))

            per_message = rate(fresh, 3)
            before = broker.stats()[0]
            via_runner = rate(runner_call(runner, sb_action), args.count)
            connections = broker.stats()[0] - before
            via_executor = executor_rate(sb_action, "servicebus", args.executor_count)
            rows.append(
                [
                    "ServiceBusQueue (AMQP broker)",
                    f"{raw:.0f}",
                    f"{via_runner:.0f}",
                    f"{via_runner / raw:.0%}",
                    f"{via_executor:.0f}",
                    f"{connections} connection(s) for {args.count + 1} sends; new sender each: {per_message:.1f}/s",
                ]
            )
            runner.close()
    print(table(["action (peer)", "raw /s", "runner /s", "runner vs raw", "executor /s", "notes"], rows))


if __name__ == "__main__":
    main()
