"""The app's own Table client answers as the SDK's: every call the adapters make, made through both clients
on one Azurite table, returns the same values of the same types, the same metadata, the same errors; and a
scripted server on 127.0.0.1 sees both retry a failed call the same number of times.

(The port-level contract suite runs over the app's own client too: ``conftest.azurite_backend``.)
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from azure.core import MatchConditions
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.exceptions import AzureError, HttpResponseError, ResourceNotFoundError
from azure.data.tables import EdmType, EntityProperty, TableClient, TableServiceClient, UpdateMode

from scheduler_core.adapters.azure.clients import data_tables, storage_transport, table_service
from scheduler_core.adapters.azure.rest import RestTable, RestTableService
from scheduler_core.adapters.azure.rest._auth import SharedKeyLite
from scheduler_core.adapters.azure.tables import TableDueIndex, TableHistory
from scheduler_core.errors import StorageError
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.support.http_target import HttpTarget, http_target

pytestmark = pytest.mark.azurite

#: Keys with what a key may hold and a URL must escape: a quote, a space, %, +, non-ASCII, the app's separator.
PARTITION = "sub|rg 'q'%2B+é"


@pytest.fixture
def pair(storage_env: Settings) -> Iterator[tuple[TableClient, RestTable]]:
    name = "rest" + uuid.uuid4().hex[:10]
    sdk = table_service(storage_env).create_table(name)
    rest = data_tables(storage_env)
    assert isinstance(rest, RestTableService)
    yield sdk, rest.get_table_client(name)
    sdk.delete_table()


def _row(key: str, **values: Any) -> dict[str, Any]:
    return {"PartitionKey": PARTITION, "RowKey": key, **values}


def _typed(entity: Any) -> dict[str, tuple[str, Any]]:
    """An entity's values with their Python types (an ``EntityProperty``'s EDM type too)."""
    typed = {}
    for name, value in entity.items():
        kind = type(value).__name__
        if isinstance(value, EntityProperty):
            kind += f"[{value.edm_type}]"
        typed[name] = (kind, value)
    return typed


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gives: its result, or its error's class and status (the SDK sets ``error_code`` on some errors
    and not others; nothing of the app's reads a table error's code)."""
    try:
        return "ok", call()
    except HttpResponseError as error:
        return type(error).__name__, error.status_code
    except (AzureError, ValueError, TypeError) as error:
        return type(error).__name__, None


VALUES: dict[str, Any] = {
    "Text": "hé \"quoted\" 'single' \u2603",
    "Small": -(2**31),
    "Big": EntityProperty(2**40 + 7, EdmType.INT64),
    "Negative": EntityProperty(-(2**40), EdmType.INT64),
    "When": datetime(2026, 3, 29, 1, 30, 15, 123456, tzinfo=UTC),
    "Flag": True,
    "Ratio": 0.25,
    "Whole": 3.0,
    "Blob": b"\x00\xffbytes",
    "Id": uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
    "Json": json.dumps({"a": [1, 2, {"b": "c"}]}),
}


def test_an_entity_reads_back_the_same_through_both_clients(pair: tuple[TableClient, RestTable]) -> None:
    sdk, rest = pair
    sdk.create_entity(_row("by-sdk", **VALUES))
    rest.create_entity(_row("by-rest", **VALUES))
    for key in ("by-sdk", "by-rest"):
        through_sdk, through_rest = sdk.get_entity(PARTITION, key), rest.get_entity(PARTITION, key)
        assert _typed(through_rest) == _typed(through_sdk)
        assert through_rest.metadata == through_sdk.metadata
        assert set(through_rest.metadata) == {"etag", "timestamp"}
    assert _typed(sdk.get_entity(PARTITION, "by-rest")) == {
        name: value for name, value in _typed(sdk.get_entity(PARTITION, "by-sdk")).items() if name != "RowKey"
    } | {"RowKey": ("str", "by-rest")}
    chosen = rest.get_entity(PARTITION, "by-sdk", select=["Big", "When"])
    assert _typed(chosen) == _typed(sdk.get_entity(PARTITION, "by-sdk", select=["Big", "When"]))


STALE = "W/\"datetime'2000-01-01T00%3A00%3A00Z'\""


def _write_steps(client: TableClient | RestTable) -> list[tuple[str, Any]]:
    """Every kind of write against one row, and what each gave (the last: the row read back)."""
    key = f"w-{type(client).__name__}"
    etag = client.create_entity(_row(key, N=1))["etag"]
    guard = {"etag": etag, "match_condition": MatchConditions.IfNotModified}
    steps: list[Callable[[], Any]] = [
        lambda: client.create_entity(_row(key, N=2)),
        lambda: client.update_entity(_row(key, N=3), etag=STALE, match_condition=MatchConditions.IfNotModified),
        lambda: client.update_entity(_row("absent", N=3), **guard),
        lambda: client.update_entity(_row(key, N=4), mode=UpdateMode.REPLACE, **guard),
        lambda: client.update_entity(_row(key, N=5), etag=etag),
        lambda: client.update_entity(_row(key, N=5), match_condition=MatchConditions.IfNotModified),
        lambda: client.upsert_entity(_row(key, M=6)),
        lambda: client.upsert_entity(_row(key, M=7), mode=UpdateMode.REPLACE),
        lambda: client.update_entity(_row("absent", N=8)),
        lambda: client.delete_entity(PARTITION, key, **guard),
        lambda: client.delete_entity(PARTITION, "absent"),
        lambda: client.get_entity(PARTITION, "absent"),
        lambda: client.get_entity(PARTITION, key),
    ]
    return [_outcome(step) for step in steps]


def test_writes_answer_the_same_and_guard_the_same(pair: tuple[TableClient, RestTable]) -> None:
    sdk, rest = pair
    outcomes = []
    for client in (sdk, rest):
        steps = _write_steps(client)
        outcomes.append([(kind, sorted(value) if isinstance(value, dict) else value) for kind, value in steps[:-1]])
        kind, row = steps[-1]
        assert kind == "ok"
        assert _typed(row) == {"PartitionKey": ("str", PARTITION), "RowKey": ("str", row["RowKey"]), "M": ("int", 7)}
    assert outcomes[1] == outcomes[0]
    assert [kind for kind, _ in outcomes[0]] == [
        "ResourceExistsError", "ResourceModifiedError", "ResourceNotFoundError", "ok", "ValueError", "ValueError",
        "ok", "ok", "ResourceNotFoundError", "ResourceModifiedError", "ok", "ResourceNotFoundError",
    ]  # fmt: skip


def test_queries_page_filter_and_select_the_same(pair: tuple[TableClient, RestTable]) -> None:
    sdk, rest = pair
    for i in range(7):
        sdk.create_entity(_row(f"q{i}", N=i, Note=f"it's {i}"))
    sdk.create_entity({"PartitionKey": "other", "RowKey": "q9", "N": 9})
    queries: list[tuple[str, dict[str, Any]]] = [
        ("PartitionKey eq @p", {"parameters": {"p": PARTITION}}),
        (
            "PartitionKey eq @p and RowKey gt @a and RowKey lt @b",
            {"parameters": {"p": PARTITION, "a": "q1", "b": "q5"}},
        ),
        ("PartitionKey eq @p", {"parameters": {"p": PARTITION}, "results_per_page": 2}),
        ("PartitionKey ne ''", {"select": ["RowKey", "N"], "results_per_page": 3}),
        ("Note eq @n", {"parameters": {"n": "it's 3"}}),
        ("PartitionKey eq @p", {"parameters": {"p": "nobody"}}),
    ]
    for query, options in queries:
        through_sdk = [(_typed(row), row.metadata) for row in sdk.query_entities(query, **options)]
        through_rest = [(_typed(row), row.metadata) for row in rest.query_entities(query, **options)]
        assert through_rest == through_sdk, query
    assert len(list(rest.query_entities("PartitionKey ne ''", results_per_page=2))) == 8


def test_transactions_answer_and_fail_the_same(pair: tuple[TableClient, RestTable]) -> None:
    sdk, rest = pair
    for client in (sdk, rest):
        prefix = type(client).__name__
        written = client.submit_transaction(
            [("create", _row(f"{prefix}-{i}", N=i)) for i in range(3)]
            + [("upsert", _row(f"{prefix}-u", N=9), {"mode": UpdateMode.REPLACE})]
        )
        assert [sorted(part) for part in written] == [["etag"]] * 4
        etag = written[0]["etag"]
        assert client.get_entity(PARTITION, f"{prefix}-0").metadata["etag"] == etag
        client.submit_transaction(
            [
                ("update", _row(f"{prefix}-0", N=10), {"etag": etag, "match_condition": MatchConditions.IfNotModified}),
                ("delete", _row(f"{prefix}-1")),
                ("upsert", _row(f"{prefix}-2", M=1)),
            ]
        )
        assert client.get_entity(PARTITION, f"{prefix}-0")["N"] == 10
        assert client.get_entity(PARTITION, f"{prefix}-2")["M"] == 1
    assert rest.submit_transaction([]) == []  # the SDK's answer to the service's 400 for an empty batch, unsent
    failures = []
    for client in (sdk, rest):
        prefix = type(client).__name__
        attempts = [
            [("create", _row(f"{prefix}-new")), ("create", _row(f"{prefix}-0"))],
            [("delete", _row(f"{prefix}-1"))],
            [
                (
                    "update",
                    _row(f"{prefix}-0", N=1),
                    {
                        "etag": "W/\"datetime'2000-01-01T00%3A00%3A00Z'\"",
                        "match_condition": MatchConditions.IfNotModified,
                    },
                )
            ],
            [("create", _row(f"{prefix}-x")), ("create", {"PartitionKey": "elsewhere", "RowKey": "x"})],
            [("frobnicate", _row(f"{prefix}-x"))],
        ]
        for operations in attempts:
            try:
                client.submit_transaction(operations)
                failures.append(("ok", None, None))
            except HttpResponseError as error:
                failures.append((type(error).__name__, error.status_code, getattr(error, "index", None)))
            except ValueError:
                failures.append(("ValueError", None, None))
        with pytest.raises(ResourceNotFoundError):
            client.get_entity(PARTITION, f"{prefix}-new")  # the failed transaction wrote nothing
    half = len(failures) // 2
    assert failures[half:] == failures[:half]
    assert failures[:half] == [
        ("TableTransactionError", 409, 1), ("TableTransactionError", 404, 0), ("TableTransactionError", 412, 0),
        ("ValueError", None, None), ("ValueError", None, None),
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------- retries


def _clients(target: HttpTarget, table: str = "t") -> tuple[TableClient, RestTable]:
    key = AzureNamedKeyCredential("devstoreaccount1", "a2V5")
    endpoint = f"{target.base_url}/devstoreaccount1"
    sdk = TableServiceClient(endpoint, credential=key, transport=storage_transport()).get_table_client(table)
    rest = RestTableService(endpoint, SharedKeyLite("devstoreaccount1", "a2V5"), connect_timeout=5, read_timeout=20)
    return sdk, rest.get_table_client(table)


ENTITY = json.dumps({"PartitionKey": "p", "RowKey": "r", "odata.etag": 'W/"x"'}).encode()


def _call(client: TableClient | RestTable, call: str) -> Any:
    if call == "get":
        return client.get_entity("p", "r")
    if call == "create":
        return client.create_entity({"PartitionKey": "p", "RowKey": "r"})
    if call == "merge":
        return client.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
    if call == "replace":
        return client.update_entity({"PartitionKey": "p", "RowKey": "r"}, mode=UpdateMode.REPLACE)
    return client.delete_entity("p", "r")


@pytest.mark.parametrize(
    ("statuses", "headers", "call"),
    [
        ([503, 503, 200], {}, "get"),  # a read retried after 503s, twice
        ([500, 500, 500, 500, 500], {}, "get"),  # three retries, then the 500 is the answer
        ([429, 200], {}, "get"),
        ([429, 204], {}, "create"),  # an insert is not retried after a 429...
        ([503, 204], {}, "create"),  # ...but is after a 503
        ([429, 204], {"Retry-After": "0"}, "create"),  # ...and after any answer naming Retry-After
        ([429, 204], {"x-ms-retry-after-ms": "10"}, "create"),  # ...but not one naming only a wait in ms
        ([503, 200], {"x-ms-retry-after-ms": "1500"}, "get"),  # which a retried answer waits for
        ([502, 204], {}, "merge"),  # a merge (PATCH) after a 502: not retried
        ([504, 204], {}, "merge"),
        ([408, 204], {}, "delete"),
        ([404], {}, "delete"),
        ([412, 204], {}, "replace"),
        ([501, 200], {}, "get"),
        ([507, 200], {}, "get"),
    ],
)
def test_a_failed_call_is_retried_as_the_sdk_retries_it(
    statuses: list[int], headers: dict[str, str], call: str
) -> None:
    counts = []
    for which in (0, 1):
        with http_target() as target:
            target.answer(statuses, headers=headers, body=ENTITY, content_type="application/json")
            client = _clients(target)[which]
            began = time.monotonic()
            kind, _ = _outcome(functools.partial(_call, client, call))
            counts.append((kind, len(target.received), round(time.monotonic() - began)))
    assert counts[1] == counts[0]


@pytest.mark.parametrize("which", [0, 1], ids=["sdk", "own"])
@pytest.mark.parametrize("store", ["due index", "history"])
def test_a_read_once_is_one_request_where_a_plain_read_retries(which: int, store: str) -> None:
    """``DueIndex.due_before(once=True)`` and ``History.list(once=True)`` (the health probe's reads) are one
    request, none of the client's retries, through either client; a plain read of the same answers is retried."""
    requests_made = []
    for once in (True, False):
        with http_target() as target:
            target.answer([503, 200], body=b'{"value": []}', content_type="application/json")
            try:
                rows: list[Any] | None = _read(store, _clients(target)[which], once)
            except StorageError:
                rows = None
            requests_made.append((rows, len(target.received)))
    assert requests_made == [(None, 1), ([], 2)]


def _read(store: str, client: TableClient | RestTable, once: bool) -> list[Any]:
    if store == "due index":
        return list(TableDueIndex(client).due_before("shard", "~", once=once))
    return list(TableHistory(client).list(JobRef(CollectionRef("s", "g", "c"), "j"), once=once))
