"""Benchmark: the CPU one Table call costs the caller, through the Azure SDK, through the app's own Table client
(what the deployed app's stores use) and as the same request on a bare keep-alive connection, on a private
in-memory Azurite, in the same run.

    .venv/bin/python -m bench.storage_call [--calls 2000] [--rounds 3]

A fire spends most of its host CPU in storage calls (docs/benchmarks.md): this says how much of a call is the
client stack and how much any client must pay. Both sides make the same two calls on an entity shaped like a
job row (a point read, then an update guarded by the ETag it read), ``--calls`` times each, and the CPU is
the process's own (``time.process_time``: Azurite's is not counted):

- **sdk**: ``TableClient.get_entity`` and ``update_entity(match_condition=IfNotModified)`` through the app's
  storage transport (``scheduler_core.adapters.azure.clients.storage_transport``);
- **rest**: the same calls through :class:`scheduler_core.adapters.azure.rest.RestTableService` (the app's own
  client, with the SDK's retry rules, errors and typed values);
- **bare**: the same REST requests (``GET`` and ``MERGE`` with ``If-Match``) on one ``http.client``
  connection, signed with Shared Key Lite, the answer's JSON parsed. A floor, not a client: no retries, no
  error mapping, no typed values.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import http.client
import json
import time
import uuid
from email.utils import formatdate
from urllib.parse import quote, urlsplit

from azure.core import MatchConditions
from azure.core.credentials import AzureNamedKeyCredential
from azure.data.tables import TableServiceClient, UpdateMode

from bench.common import table
from local_host.azurite import Azurite
from scheduler_core.adapters.azure.clients import storage_transport
from scheduler_core.adapters.azure.rest import RestTableService
from scheduler_core.adapters.azure.rest._auth import SharedKeyLite

#: A job row's shape: a dozen columns of the kinds the app writes.
ROW = {
    "PartitionKey": "sub|rg|collection",
    "RowKey": "job-0001",
    "Definition": json.dumps({"action": {"type": "Http", "request": {"uri": "https://example.org/hook"}}}) * 4,
    "State": "Enabled",
    "Generation": "1764000000000000",
    "ExecutionCount": 0,
    "FailureCount": 0,
    "FaultedCount": 0,
    "NextExecutionTime": "2026-11-30T00:00:00Z",
    "DueShard": "07",
    "DueRow": "20261130T000000|sub|rg|collection|job-0001",
    "Counted": "",
}


class Bare:
    """One keep-alive connection to the Table endpoint, Shared Key Lite signing (the emulator's path style)."""

    def __init__(self, endpoint: str, account: str, key: str, table_name: str) -> None:
        parts = urlsplit(endpoint)
        self.connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80)
        self.prefix = parts.path.rstrip("/")
        self.account, self.key, self.table = account, base64.b64decode(key), table_name

    def _call(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, str, bytes]:
        date = formatdate(usegmt=True)
        signed = f"{date}\n/{self.account}{self.prefix}{path}".encode()
        signature = base64.b64encode(hmac.new(self.key, signed, hashlib.sha256).digest()).decode()
        headers = {
            **headers,
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "DataServiceVersion": "3.0",
            "MaxDataServiceVersion": "3.0;NetFx",
            "Accept": "application/json;odata=minimalmetadata",
            "Authorization": f"SharedKeyLite {self.account}:{signature}",
        }
        self.connection.request(method, self.prefix + path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        return response.status, response.getheader("ETag") or "", data

    def _path(self, partition: str, row: str) -> str:
        return f"/{self.table}(PartitionKey='{quote(partition)}',RowKey='{quote(row)}')"

    def get(self, partition: str, row: str) -> tuple[dict[str, object], str]:
        status, etag, data = self._call("GET", self._path(partition, row), None, {})
        assert status == 200, (status, data[:200])
        return json.loads(data), etag

    def merge(self, partition: str, row: str, values: dict[str, object], etag: str) -> str:
        body = json.dumps(values).encode()
        headers = {"Content-Type": "application/json", "If-Match": etag}
        status, new_etag, data = self._call("MERGE", self._path(partition, row), body, headers)
        assert status == 204, (status, data[:200])
        return new_etag


def measure(calls: int, rounds: int) -> list[list[object]]:
    azurite = Azurite()
    azurite.start()
    try:
        name = "bench" + uuid.uuid4().hex[:8]
        service = TableServiceClient.from_connection_string(azurite.connection_string, transport=storage_transport())
        client = service.create_table(name)
        client.upsert_entity(ROW)
        credential = service.credential
        assert isinstance(credential, AzureNamedKeyCredential)  # Azurite's account key
        bare = Bare(service.url, credential.named_key.name, credential.named_key.key, name)
        keys = (str(ROW["PartitionKey"]), str(ROW["RowKey"]))
        auth = SharedKeyLite(credential.named_key.name, credential.named_key.key)
        rest = RestTableService(service.url, auth, connect_timeout=5, read_timeout=20).get_table_client(name)
        results: dict[str, list[float]] = {"sdk": [], "rest": [], "bare": []}
        for _ in range(rounds):
            for side, through in (("sdk", client), ("rest", rest)):
                began = time.process_time()
                for i in range(calls):
                    entity = through.get_entity(*keys)
                    through.update_entity(
                        {"PartitionKey": keys[0], "RowKey": keys[1], "ExecutionCount": i},
                        mode=UpdateMode.MERGE,
                        etag=entity.metadata["etag"],
                        match_condition=MatchConditions.IfNotModified,
                    )
                results[side].append((time.process_time() - began) / (2 * calls) * 1000)
            began = time.process_time()
            for i in range(calls):
                _, etag = bare.get(*keys)
                bare.merge(*keys, {"ExecutionCount": i}, etag)
            results["bare"].append((time.process_time() - began) / (2 * calls) * 1000)
    finally:
        azurite.stop()
    best = {side: min(values) for side, values in results.items()}
    return [
        [side, ", ".join(f"{value:.3f}" for value in values), f"{best[side]:.3f}", f"{best[side] / best['bare']:.1f}x"]
        for side, values in results.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="point reads and guarded updates per side and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = measure(args.calls, args.rounds)
    print(table(["path", "CPU ms per call, each round", "best", "vs bare"], rows))


if __name__ == "__main__":
    main()
