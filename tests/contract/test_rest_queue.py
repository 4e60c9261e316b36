"""The app's own Queue client answers as the SDK's: messages sent, received, peeked, released and deleted
through both clients on one Azurite queue carry the same fields of the same types, failures raise the same
errors, and a scripted server on 127.0.0.1 sees both retry a failed call the same number of times."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.queue import ExponentialRetry, QueueClient, QueueMessage

from scheduler_core.adapters.azure.clients import queue_client, rest_queue, storage_transport
from scheduler_core.adapters.azure.queues import message_queue
from scheduler_core.adapters.azure.rest import RestQueue
from scheduler_core.settings import Settings
from tests.support.http_target import http_target

pytestmark = pytest.mark.azurite

FIELDS = ("id", "inserted_on", "expires_on", "pop_receipt", "next_visible_on", "dequeue_count", "content")


@pytest.fixture
def pair(storage_env: Settings) -> Iterator[tuple[QueueClient, RestQueue]]:
    sdk = queue_client(storage_env, f"rest-{uuid.uuid4().hex[:10]}", decoded=False)
    sdk.create_queue()
    rest = rest_queue(sdk)
    assert rest is not None
    yield sdk, rest
    sdk.delete_queue()


def _shape(message: QueueMessage) -> dict[str, str]:
    return {name: type(getattr(message, name)).__name__ for name in FIELDS}


def _outcome(call: Any) -> tuple[str, int | None]:
    try:
        call()
        return "ok", None
    except HttpResponseError as error:
        return type(error).__name__, error.status_code
    except ValueError:
        return "ValueError", None


def test_messages_go_and_come_back_the_same_through_both_clients(pair: tuple[QueueClient, RestQueue]) -> None:
    sdk, rest = pair
    text = "<job name='a&b'>\u2603</job> " + "x" * 3000
    sent = [sdk.send_message(text), rest.send_message(text)]
    assert _shape(sent[1]) == _shape(sent[0])
    assert sent[1].content == sent[0].content == text
    peeked = [sdk.peek_messages(max_messages=5), rest.peek_messages(max_messages=5)]
    assert [(m.id, m.content, m.dequeue_count, m.inserted_on) for m in peeked[1]] == [
        (m.id, m.content, m.dequeue_count, m.inserted_on) for m in peeked[0]
    ]
    taken = list(rest.receive_messages(messages_per_page=1, max_messages=1, visibility_timeout=30))
    assert len(taken) == 1 and taken[0].content == text and taken[0].dequeue_count == 1
    assert _shape(taken[0]) == _shape(next(iter(sdk.receive_messages(max_messages=1, visibility_timeout=30))))
    released = rest.update_message(taken[0].id, taken[0].pop_receipt, visibility_timeout=0)
    assert released.pop_receipt != taken[0].pop_receipt and released.next_visible_on is not None
    again = list(sdk.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=30))
    assert {m.id for m in again} == {taken[0].id}  # the other one is still hidden by the SDK's receive
    assert again[0].dequeue_count == 2
    rest.delete_message(again[0].id, again[0].pop_receipt)
    outcomes = [
        [
            _outcome(lambda c=client: c.delete_message(again[0].id, again[0].pop_receipt)),
            _outcome(lambda c=client: c.delete_message(taken[0].id, "AAAAAAAAAAAAAAAA")),
            _outcome(lambda c=client: c.update_message(taken[0].id, None, visibility_timeout=0)),
        ]
        for client in (sdk, rest)
    ]
    assert outcomes[1] == outcomes[0]
    assert outcomes[0][0] == ("ResourceNotFoundError", 404)


def test_a_receive_takes_what_it_asks_for_page_by_page(pair: tuple[QueueClient, RestQueue]) -> None:
    sdk, rest = pair
    for i in range(40):
        sdk.send_message(f"m{i}")
    first = list(rest.receive_messages(messages_per_page=16, max_messages=16, visibility_timeout=60))
    assert len(first) == 16
    rest_of_them = list(rest.receive_messages(messages_per_page=32, visibility_timeout=60))
    assert len(rest_of_them) == 24
    assert sorted(m.content for m in first + rest_of_them) == sorted(f"m{i}" for i in range(40))
    assert list(rest.receive_messages(messages_per_page=32, max_messages=32)) == []


def test_the_apps_queue_sends_base64_as_the_sdk_encodes_it(storage_env: Settings) -> None:
    name = f"rest-{uuid.uuid4().hex[:10]}"
    raw = queue_client(storage_env, name, decoded=False)
    raw.create_queue()
    queue = message_queue(queue_client(storage_env, name))
    assert queue.sender is not None
    queue.send('{"v": 1, "name": "é"}', visibility=0)
    queue.client.send_message('{"v": 1, "name": "é"}')
    texts = [m.content for m in raw.receive_messages(messages_per_page=2, max_messages=2)]
    assert texts == [base64.b64encode('{"v": 1, "name": "é"}'.encode()).decode()] * 2
    raw.delete_queue()


@pytest.mark.parametrize(
    ("statuses", "call"),
    [
        ([503, 503, 503, 503, 503], "send"),  # a send retried three times after 5xx, then the 503 is the answer
        ([408, 408, 408, 408, 408], "send"),
        ([501, 501], "send"),  # 501 and 505 are not retried
        ([429, 429], "send"),  # nor is a 429 (the Storage SDKs' rule, unlike azure-core's)
        ([408, 204], "delete"),
        ([501, 204], "delete"),  # 501 and 505 are not retried
        ([505, 204], "delete"),
        ([404, 204], "delete"),
        ([429, 204], "delete"),
        ([502, 204], "update"),
        ([500, 500, 500, 500, 500], "update"),
    ],
)
def test_a_failed_call_is_retried_as_the_sdk_retries_it(statuses: list[int], call: str) -> None:
    answer = (
        b"<?xml version='1.0' encoding='utf-8'?><Error><Code>InternalError</Code><Message>scripted</Message></Error>"
    )
    headers = {"x-ms-popreceipt": "r2", "x-ms-error-code": "InternalError"}  # read only from failures
    counts = []
    for which in ("sdk", "rest"):
        with http_target() as target:
            target.answer(statuses, headers=headers, body=answer, content_type="application/xml")
            account = "devstoreaccount1"
            connection = (
                f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey=a2V5;"
                f"QueueEndpoint={target.base_url}/{account};"
            )
            sdk = QueueClient.from_connection_string(
                connection,
                "q",
                transport=storage_transport(),
                retry_policy=ExponentialRetry(initial_backoff=0, increment_base=0, random_jitter_range=0),
            )
            client: Any = sdk if which == "sdk" else rest_queue(sdk, initial=0, base=0, jitter=0)
            if call == "send":
                kind = _outcome(lambda c=client: c.send_message("hello"))
            elif call == "delete":
                kind = _outcome(lambda c=client: c.delete_message("m", "r"))
            else:
                kind = _outcome(lambda c=client: c.update_message("m", "r", visibility_timeout=5))
            counts.append((kind, len(target.received)))
    assert counts[1] == counts[0]
