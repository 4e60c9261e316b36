"""A Table client of the app's own for the calls of its hot path: the subset of ``azure-data-tables``'
``TableClient`` the adapters use, with the same arguments, answers and errors, on kept-alive connections.

Why: a storage call through the SDK costs its caller about 1.1 ms of CPU on the test machine, the same request
on a kept-alive ``http.client`` connection about 0.2 ms (``bench/storage_call.py``); a fire makes six or so.
What it keeps of the SDK: its entity (de)serialisers (``_add_entity_properties``, ``_convert_to_entity``: values
typed exactly as the SDK types them), its filter parameter substitution, its errors (:mod:`._errors`), its retry
rules (:mod:`._retry`) and its timeouts. ``tests/contract/test_rest_table.py`` runs every call through both
clients on Azurite and compares what comes back.

Not here: table management (``create_table``, ``list_tables``: the SDK's clients provision), Cosmos DB
endpoints, secondary-region reads, proxies (a deployment with proxy settings uses the SDK's clients,
:func:`~scheduler_core.adapters.azure.clients.table_service`).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from azure.core import MatchConditions
from azure.data.tables import TableEntity, TableTransactionError, UpdateMode
from azure.data.tables._deserialize import _convert_to_entity
from azure.data.tables._error import RequestTooLargeError
from azure.data.tables._serialize import _add_entity_properties, _parameter_filter_substitution

from scheduler_core.adapters.azure.rest._auth import Auth
from scheduler_core.adapters.azure.rest._batch import Operation, batch_answers, batch_body
from scheduler_core.adapters.azure.rest._endpoint import Endpoint
from scheduler_core.adapters.azure.rest._errors import service_error
from scheduler_core.adapters.azure.rest._http import Answer
from scheduler_core.adapters.azure.rest._retry import Tries

__all__ = ["RestTable", "RestTableService"]

#: The SDK's own reading of an entity's JSON (values typed as the SDK types them, the ETag and timestamp as
#: its metadata).
_entity: Callable[[dict[str, Any]], TableEntity] = _convert_to_entity

#: The Table service version the SDK speaks (``azure-data-tables``' default).
API_VERSION = "2019-02-02"
_JSON = "application/json"
_ENTITY_ACCEPT = "application/json;odata=minimalmetadata"


class RestTableService:
    """The Table endpoint ``endpoint`` (``https://account.table.core.windows.net``, or the emulator's
    ``http://host:port/account``) signed by ``auth``; :meth:`get_table_client` as the SDK's. ``tls``: how an
    HTTPS endpoint's certificate is verified (None: certifi's CAs, as the SDK's)."""

    def __init__(
        self,
        endpoint: str,
        auth: Auth,
        *,
        connect_timeout: float,
        read_timeout: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.endpoint = Endpoint(
            endpoint,
            auth,
            {"x-ms-version": API_VERSION, "DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0;NetFx"},
            lambda options: Tries(total=int(options.get("retry_total", 10))),
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            tls=tls,
        )
        self.url = self.endpoint.url

    def get_table_client(self, table_name: str) -> RestTable:
        return RestTable(self.endpoint, table_name)

    def close(self) -> None:
        self.endpoint.close()


def _key(value: str) -> str:
    try:
        return quote(value.replace("'", "''"), safe="")
    except AttributeError as exc:
        raise TypeError("PartitionKey or RowKey must be of type string.") from exc


def _etag_header(etag: str | None, match_condition: MatchConditions | None) -> str:
    """``If-Match`` as the SDK sets it: the ETag for ``IfNotModified``, ``*`` for an unconditional write."""
    match_condition = match_condition or MatchConditions.Unconditionally
    if match_condition == MatchConditions.IfNotModified:
        if not etag:
            raise ValueError("IfNotModified must be specified with etag.")
        return etag
    if match_condition == MatchConditions.Unconditionally:
        if etag:
            raise ValueError("Etag is not supported for an Unconditional operation.")
        return "*"
    raise ValueError(f"Unsupported match condition: {match_condition}")


def _written(answer: Answer) -> dict[str, Any]:
    """What the SDK answers for a write: the answer's date, ETag and service version."""
    return {
        "date": answer.headers.get("date"),
        "etag": answer.headers.get("etag"),
        "version": answer.headers.get("x-ms-version"),
    }


class RestTable:
    """One table: ``get_entity``, ``query_entities``, ``create_entity``, ``upsert_entity``, ``update_entity``,
    ``delete_entity`` and ``submit_transaction`` as ``azure.data.tables.TableClient``'s."""

    def __init__(self, service: Endpoint, table_name: str) -> None:
        self.service = service
        self.table_name = table_name
        self._table = quote(table_name, safe="")

    def _entity_path(self, partition_key: str, row_key: str) -> str:
        return f"/{self._table}(PartitionKey='{_key(partition_key)}',RowKey='{_key(row_key)}')"

    def _failed(self, answer: Answer, *ok: int, by_status: bool = False) -> None:
        if answer.status not in ok:
            raise service_error(answer, by_status=by_status)

    def get_entity(
        self, partition_key: str, row_key: str, *, select: list[str] | None = None, **options: Any
    ) -> TableEntity:
        query = f"$select={quote(','.join(select), safe='')}" if select else ""
        answer = self.service.call(
            "GET",
            self._entity_path(partition_key, row_key),
            query=query,
            headers={"Accept": _ENTITY_ACCEPT},
            options=options,
        )
        self._failed(answer, 200)
        entity: TableEntity = _entity(json.loads(answer.body))
        return entity

    def query_entities(
        self,
        query_filter: str,
        *,
        parameters: dict[str, Any] | None = None,
        select: list[str] | None = None,
        results_per_page: int | None = None,
        **options: Any,
    ) -> Iterator[TableEntity]:
        """The entities matching ``query_filter``, page after page (read lazily, as the SDK's pager)."""
        fixed = [f"$filter={quote(_parameter_filter_substitution(parameters, query_filter), safe='')}"]
        if select:
            fixed.append(f"$select={quote(','.join(select), safe='')}")
        if results_per_page:
            fixed.append(f"$top={int(results_per_page)}")
        return self._pages(fixed, options)

    def _pages(self, fixed: list[str], options: Mapping[str, Any]) -> Iterator[TableEntity]:
        after: list[str] = []
        while True:
            answer = self.service.call(
                "GET",
                f"/{self._table}()",
                query="&".join(fixed + after),
                headers={"Accept": _ENTITY_ACCEPT},
                options=options,
            )
            self._failed(answer, 200)
            for row in json.loads(answer.body).get("value", []):
                yield _entity(row)
            partition = answer.headers.get("x-ms-continuation-nextpartitionkey")
            row_key = answer.headers.get("x-ms-continuation-nextrowkey")
            if not partition:
                return
            after = [f"NextPartitionKey={quote(partition, safe='')}"]
            if row_key:
                after.append(f"NextRowKey={quote(row_key, safe='')}")

    def create_entity(self, entity: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        body = json.dumps(_add_entity_properties(entity)).encode()
        headers = {"Content-Type": _JSON, "Accept": _ENTITY_ACCEPT, "Prefer": "return-no-content"}
        answer = self.service.call("POST", f"/{self._table}", headers=headers, body=body, options=options)
        self._failed(answer, 201, 204, by_status=True)
        return _written(answer)

    def _put(
        self, method: str, entity: Mapping[str, Any], if_match: str | None, options: Mapping[str, Any]
    ) -> dict[str, Any]:
        body = json.dumps(_add_entity_properties(entity)).encode()
        headers = {"Content-Type": _JSON, "Accept": _JSON}
        if if_match is not None:
            headers["If-Match"] = if_match
        path = self._entity_path(entity["PartitionKey"], entity["RowKey"])
        answer = self.service.call(method, path, headers=headers, body=body, options=options)
        self._failed(answer, 204)
        return _written(answer)

    def upsert_entity(
        self, entity: Mapping[str, Any], mode: UpdateMode = UpdateMode.MERGE, **options: Any
    ) -> dict[str, Any]:
        return self._put(_method(mode), entity, None, options)

    def update_entity(
        self,
        entity: Mapping[str, Any],
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        etag: str | None = None,
        match_condition: MatchConditions | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        if match_condition and not etag and isinstance(entity, TableEntity):
            etag = entity.metadata.get("etag")
        return self._put(_method(mode), entity, _etag_header(etag, match_condition), options)

    def delete_entity(
        self,
        partition_key: str,
        row_key: str,
        *,
        etag: str | None = None,
        match_condition: MatchConditions | None = None,
        **options: Any,
    ) -> None:
        """Delete the entity; one that is not there is not an error (as the SDK's)."""
        headers = {"Accept": _ENTITY_ACCEPT, "If-Match": _etag_header(etag, match_condition)}
        answer = self.service.call(
            "DELETE", self._entity_path(partition_key, row_key), headers=headers, options=options
        )
        if answer.status != 404:
            self._failed(answer, 204)

    def submit_transaction(self, operations: Iterable[tuple[Any, ...]], **options: Any) -> list[Mapping[str, Any]]:
        """Run ``operations`` (``(kind, entity[, options])``: ``create``, ``upsert``, ``update``, ``delete``) as one
        transaction; a failure raises ``TableTransactionError`` for the first operation that failed."""
        requests = [self._operation(*operation) for operation in operations]
        if not requests:
            return []
        partitions = {partition for _, partition in requests}
        if len(partitions) > 1:
            raise ValueError("Partition Keys in the batch must all be the same.")
        content_type, body = batch_body([request for request, _ in requests])
        headers = {"Content-Type": content_type, "Accept": _JSON}
        answer = self.service.call("POST", "/$batch", headers=headers, body=body, options=options)
        if answer.status == 413:
            raise service_error(answer, RequestTooLargeError)
        if answer.status != 202:
            raise service_error(answer)
        parts = batch_answers(answer.headers.get("content-type", ""), answer.body)
        for part in parts:
            if not 200 <= part.status < 300:
                raise service_error(part, RequestTooLargeError if part.status == 413 else TableTransactionError)
        return [{"etag": part.headers["etag"]} if "etag" in part.headers else {} for part in parts]

    def _operation(
        self, kind: str, entity: Mapping[str, Any], options: Mapping[str, Any] | None = None
    ) -> tuple[Operation, str]:
        if "PartitionKey" not in entity or "RowKey" not in entity:
            raise ValueError("PartitionKey and/or RowKey were not provided in entity")
        options = dict(options or {})
        url = f"{self.service.url}{self._entity_path(entity['PartitionKey'], entity['RowKey'])}"
        headers = {"Accept": _ENTITY_ACCEPT, "DataServiceVersion": "3.0"}
        body: bytes | None = None
        kind = str(getattr(kind, "value", kind)).lower()
        if kind in ("create", "upsert", "update"):
            headers["Content-Type"] = _JSON
            body = json.dumps(_add_entity_properties(entity)).encode()
        if kind == "create":
            headers["Prefer"] = "return-no-content"
            return Operation("POST", f"{self.service.url}/{self._table}", headers, body), entity["PartitionKey"]
        if kind == "upsert":
            return Operation(_method(options.get("mode", UpdateMode.MERGE)), url, headers, body), entity["PartitionKey"]
        if kind in ("update", "delete"):
            etag, condition = options.get("etag"), options.get("match_condition")
            if condition and not etag and isinstance(entity, TableEntity):
                etag = entity.metadata.get("etag")
            headers["If-Match"] = _etag_header(etag, condition)
            method = _method(options.get("mode", UpdateMode.MERGE)) if kind == "update" else "DELETE"
            return Operation(method, url, headers, body), entity["PartitionKey"]
        raise ValueError(f"Unrecognized operation: {kind}")


def _method(mode: UpdateMode | str) -> str:
    if mode == UpdateMode.REPLACE:
        return "PUT"
    if mode == UpdateMode.MERGE:
        return "PATCH"
    raise ValueError(f"Mode type '{mode}' is not supported.")
