"""The storage clients' HTTP transport (``adapters/azure/clients.py``): its short path through requests
prepares every call exactly as requests would, round-trips tables and queues on the session's Azurite, and
fails the way azure-core's requests transport fails (so retries and the error mapping are unchanged)."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
import urllib3
from azure.core import MatchConditions
from azure.core.exceptions import (
    AzureError,
    ResourceModifiedError,
    ServiceRequestError,
    ServiceResponseError,
    ServiceResponseTimeoutError,
)
from azure.core.pipeline.transport import RequestsTransport
from azure.data.tables import TableClient, UpdateMode
from hypothesis import given, settings
from hypothesis import strategies as st

from local_host.azurite import DEV_ACCOUNT, DEV_KEY, free_port
from scheduler_core.adapters.azure import clients
from scheduler_core.adapters.azure.clients import queue_client, storage_transport, table_service
from scheduler_core.adapters.azure.errors import storage_error
from scheduler_core.errors import StorageError
from scheduler_core.settings import Settings
from tests.support.tls import TestCa, https_peer

#: Keys of the kinds the app writes (escaped names, due times, digests) and worse: quotes, non-ASCII, %, +.
AWKWARD_KEYS = ["a", "o'brien", "%41%2f", "é ü+x", "2026-11-24T07:00:00.000000Z|ab12|0000000000000001", "x" * 200]


class Captured(Exception):
    """Raised by the capturing ``send`` below, with the prepared request."""

    def __init__(self, prepared: requests.PreparedRequest, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.prepared = prepared
        self.kwargs = kwargs


def prepared_by_storage_session(method: str, url: str, headers: dict[str, str], data: Any) -> Captured:
    session = clients._StorageSession()
    session.trust_env = False

    def capture(prepared: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        raise Captured(prepared, kwargs)

    vars(session)["send"] = capture  # this instance's send only
    with pytest.raises(Captured) as caught:
        session.request(
            method, url, headers=headers, data=data, files=None, verify=True, timeout=(5, 20), cert=None,
            allow_redirects=False, proxies=None,
        )  # fmt: skip
    return caught.value


def prepared_by_requests(method: str, url: str, headers: dict[str, str], data: Any) -> requests.PreparedRequest:
    session = requests.Session()
    session.trust_env = False
    return session.prepare_request(requests.Request(method, url, headers=headers, data=data or {}))


URL_CHARACTERS = st.characters(codec="utf-8", exclude_categories=["Cs"])


@settings(max_examples=300, deadline=None)
@given(
    segments=st.lists(st.text(URL_CHARACTERS, max_size=12), min_size=1, max_size=3),
    query=st.one_of(st.none(), st.text(URL_CHARACTERS, max_size=12)),
    safe=st.sampled_from(["", "'()", "'(),=:@!$&*+;~", "/"]),
    raw=st.booleans(),
)
def test_a_url_on_the_short_path_is_the_url_requests_prepares(
    segments: list[str], query: str | None, safe: str, raw: bool
) -> None:
    """URLs as the SDKs build them (quoted with various safe sets) and raw ones: whichever the short path
    takes, requests would have prepared the same URL; the others go the ordinary way."""
    parts = segments if raw else [quote(s, safe=safe) for s in segments]
    url = "http://127.0.0.1:10002/devstoreaccount1/" + "/".join(parts)
    if query is not None:
        url += "?" + (query if raw else "$filter=" + quote(query, safe=safe))
    if clients._CANONICAL_URL.fullmatch(url) is None:
        return
    expected = prepared_by_requests("GET", url, {}, None)
    assert prepared_by_storage_session("GET", url, {}, None).prepared.url == expected.url


@pytest.mark.parametrize(
    ("method", "data"),
    [
        ("POST", '{"PartitionKey": "é", "RowKey": "x"}'),  # a str body: Content-Length in UTF-8 bytes
        ("PUT", b"<QueueMessage><MessageText>aGk=</MessageText></QueueMessage>"),
        ("MERGE", '{"a": 1}'),
        ("DELETE", None),  # no body: Content-Length 0
        ("DELETE", ""),
        ("GET", None),  # no Content-Length
        ("HEAD", None),
    ],
)
def test_a_call_on_the_short_path_is_prepared_as_requests_prepares_it(method: str, data: Any) -> None:
    url = "http://127.0.0.1:10002/devstoreaccount1/Jobs(PartitionKey='a%7Cb',RowKey='c')"
    headers = {"x-ms-version": "2019-02-02", "Content-Type": "application/json", "If-Match": "W/\"datetime'1'\""}
    captured = prepared_by_storage_session(method, url, headers, data)
    expected = prepared_by_requests(method, url, headers, data)
    got = captured.prepared
    assert (got.method, got.url, dict(got.headers), got.body) == (
        expected.method,
        expected.url,
        dict(expected.headers),
        expected.body,
    )
    assert captured.kwargs == {
        "timeout": (5, 20),
        "allow_redirects": False,
        "proxies": {},
        "stream": False,
        "verify": True,
        "cert": None,
    }


def test_a_header_with_a_line_break_is_refused_as_requests_refuses_it() -> None:
    url = "http://127.0.0.1:10002/devstoreaccount1/Tables"
    with pytest.raises(requests.exceptions.InvalidHeader):
        prepared_by_storage_session("GET", url, {"x-ms-test": "a\r\nInjected: 1"}, None)


@pytest.fixture
def ordinary_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """URLs of calls that took requests' ordinary path."""
    seen: list[str] = []
    original = requests.Session.request

    def spy(self: requests.Session, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:
        seen.append(url)
        return original(self, method, url, *args, **kwargs)

    monkeypatch.setattr(requests.Session, "request", spy)
    return seen


@pytest.mark.azurite
def test_tables_and_queues_round_trip_on_the_short_path(storage_env: Settings, ordinary_calls: list[str]) -> None:
    """Awkward keys written, read, queried and ETag-guarded; queue messages sent, received and deleted: all
    on the short path, every call still passing through the session's ``send`` (which the operation
    counters of the benchmarks wrap)."""
    sent: list[str] = []
    session = storage_transport().session
    assert isinstance(session, clients._StorageSession)
    original_send = session.send

    def counting(prepared: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        sent.append(str(prepared.method))
        return original_send(prepared, **kwargs)

    vars(session)["send"] = counting  # this instance's send only, as bench/capacity.py wraps it
    try:
        service = table_service(storage_env)
        table = service.create_table(f"transport{uuid.uuid4().hex[:8]}")
        for key in AWKWARD_KEYS:
            table.create_entity({"PartitionKey": key, "RowKey": key, "Text": f"{key} ✓"})
            table.upsert_entity({"PartitionKey": key, "RowKey": key, "N": 1}, mode=UpdateMode.MERGE)
            entity = table.get_entity(key, key)
            assert (entity["Text"], entity["N"]) == (f"{key} ✓", 1)
            rows = list(table.query_entities("PartitionKey eq @p", parameters={"p": key}))
            assert [r["RowKey"] for r in rows] == [key]
        etag = table.get_entity("a", "a").metadata["etag"]
        table.update_entity(
            {"PartitionKey": "a", "RowKey": "a", "N": 2}, etag=etag, match_condition=MatchConditions.IfNotModified
        )
        with pytest.raises(ResourceModifiedError):
            table.update_entity(
                {"PartitionKey": "a", "RowKey": "a", "N": 3}, etag=etag, match_condition=MatchConditions.IfNotModified
            )
        table.delete_entity("a", "a")
        assert [r["RowKey"] for r in table.list_entities()] == sorted(AWKWARD_KEYS[1:])

        queue = queue_client(storage_env, storage_env.scan_queue)
        queue.create_queue()
        queue.send_message("héllo")
        [message] = queue.receive_messages(max_messages=1)
        assert message.content == "héllo"
        queue.delete_message(message)
        assert list(queue.peek_messages()) == []
    finally:
        del vars(session)["send"]
    assert ordinary_calls == []
    # the table's creation, 4 calls per key, 5 more on the table, 5 on the queue: each one through send
    assert len(sent) == 1 + 4 * len(AWKWARD_KEYS) + 5 + 5


@contextmanager
def silent_server(answer: bool) -> Iterator[int]:
    """A port where a server accepts connections and reads the request, then says nothing and keeps the
    connection open (``answer`` False), or closes it without an answer (``answer`` True: a cut)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.recv(65536)
            if answer:
                connection.close()
            else:
                held.append(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def table_at(port: int, transport: Any) -> TableClient:
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )
    return TableClient.from_connection_string(connection, "t", transport=transport, retry_total=0)


def failure(port: int, transport: Any) -> AzureError:
    with pytest.raises(AzureError) as caught:
        table_at(port, transport).create_entity({"PartitionKey": "p", "RowKey": "r"}, read_timeout=0.5)
    return caught.value


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("refused", ServiceRequestError),  # nothing listens: surely not sent
        ("cut", ServiceResponseError),  # the connection closed after the request: it may have landed
        ("silent", ServiceResponseTimeoutError),  # no answer within the read timeout: it may have landed
    ],
)
def test_failures_are_the_errors_of_azure_cores_requests_transport(where: str, expected: type[Exception]) -> None:
    """The SDKs' retry policies tell a request that never left from one that may have landed by these
    types, and so does the error mapping: both transports raise the same one for each failure."""
    errors = []
    for transport in (storage_transport(), RequestsTransport()):
        if where == "refused":
            errors.append(failure(free_port(), transport))
        else:
            with silent_server(answer=where == "cut") as port:
                errors.append(failure(port, transport))
    ours, theirs = errors
    assert type(ours) is type(theirs)
    assert isinstance(ours, expected)
    mapped = storage_error(ours)
    assert isinstance(mapped, StorageError)
    assert mapped.storage_status is None and not mapped.surely_not_applied


def test_with_a_proxy_configured_the_storage_clients_take_requests_ordinary_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    transport = clients.storage_transport.__wrapped__()
    assert type(transport.session) is requests.Session
    assert transport.session.trust_env


class RecordingSocket:
    """A connected socket that records what is written to it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


@contextmanager
def echo_server() -> Iterator[tuple[int, list[bytes]]]:
    """A server that reads each request (head and Content-Length body), records its bytes and answers 200."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.settimeout(5)
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                while len(body) < length:
                    body += connection.recv(65536)
                received.append(data[: len(head) + 4] + body)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], received
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.parametrize(
    ("method", "body"),
    [("PUT", b'{"a": "b"}'), ("POST", '{"é": 1}'), ("GET", None), ("DELETE", b"")],
)
def test_a_request_leaves_in_one_write_with_the_bytes_urllib3_sends(method: str, body: Any) -> None:
    sent: dict[str, bytes] = {}
    for name, connection_class in (
        ("ours", clients._OneWriteConnection),
        ("urllib3", urllib3.connection.HTTPConnection),
    ):
        with echo_server() as (port, received):
            connection = connection_class("127.0.0.1", port)
            connection.connect()
            recording = RecordingSocket(connection.sock)
            connection.sock = recording
            headers = {"Content-Length": str(len(body.encode() if isinstance(body, str) else body))} if body else {}
            connection.request(method, "/devstoreaccount1/t", body=body, headers=headers)
            response = connection.getresponse()
            assert (response.status, response.data) == (200, b"ok")
            connection.close()
        [request] = received
        if name == "ours":
            assert recording.writes == [request]  # head and body in one write
        sent[name] = request.replace(f"127.0.0.1:{port}".encode(), b"127.0.0.1:PORT")
    assert sent["ours"] == sent["urllib3"]


def test_over_tls_a_request_with_a_body_arrives_whole(tmp_path: Path) -> None:
    """The one-write connection over TLS (Azure Storage is HTTPS): through the storage clients' session, a
    PUT with a body, the server's certificate checked against its CA."""
    ca = TestCa()
    with https_peer(ca, require_client_cert=False) as peer:
        url = f"{peer.base_url}/devstoreaccount1/Jobs(PartitionKey='p',RowKey='r')"
        session = storage_transport().session
        response = session.request(
            "PUT", url, data='{"é": 1}', headers={"Content-Type": "application/json"}, timeout=(5, 20),
            verify=str(ca.write_pem(tmp_path)), cert=None, allow_redirects=False, proxies=None,
        )  # fmt: skip
        assert (response.status_code, response.content) == (200, b"hello over mutual TLS")
        [seen] = peer.requests_to("RowKey='r')")
        assert (seen.method, seen.body) == ("PUT", '{"é": 1}'.encode())
        adapter = session.get_adapter(url)
        assert isinstance(adapter, requests.adapters.HTTPAdapter)
        assert type(adapter.poolmanager.connection_from_url(url)) is clients._OneWriteTlsPool
