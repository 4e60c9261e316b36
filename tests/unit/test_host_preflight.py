"""What the local host checks before it serves: the ports it needs (real sockets), the settings that follow
them and its queue functions' thread count, and the management API's key and size before a body is read."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.data.tables import TableServiceClient

from local_host import azurite as azurite_module
from local_host.__main__ import KEY_FILE, check_ports, ensure_local_settings
from local_host.azurite import Azurite, AzuritePorts, free_port, free_ports
from local_host.http_server import HttpHost, RequestHead
from local_host.local_settings import STORAGE_QUEUE_ENDPOINT, follow_azurite, local_http_port
from local_host.ports import PortInUseError, ensure_free, is_free, suggest_azurite_ports, suggest_port
from local_host.preflight import api_key_preflight
from local_host.queues import DEFAULT_THREAD_COUNT, THREAD_COUNT_SETTING, worker_thread_count
from scheduler_core import auth
from scheduler_core.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]

KEY = auth.generate_key()
CHECK = api_key_preflight(auth.parse_keys(auth.hash_entry(KEY, ["sub"])), ["management_api"], 1024)


def head(
    function: str = "management_api", length: int | None = 10, headers: dict[str, str] | None = None
) -> RequestHead:
    return RequestHead(function, "PUT", "/subscriptions/sub/x", headers or {}, length, {})


def test_a_request_without_a_valid_key_is_refused_with_the_apis_401() -> None:
    for headers in ({}, {"Authorization": "Bearer sks_wrong"}, {"x-functions-key": "nope"}):
        answer = CHECK(head(headers=headers))
        assert answer is not None and answer.status_code == 401
        assert json.loads(answer.get_body())["error"]["code"] == "AuthenticationFailed"
        assert answer.headers["x-ms-request-id"]


def test_an_authenticated_request_declaring_too_large_a_body_is_a_413() -> None:
    answer = CHECK(head(length=1025, headers={"Authorization": f"Bearer {KEY}"}))
    assert answer is not None and answer.status_code == 413
    assert json.loads(answer.get_body())["error"]["code"] == "RequestEntityTooLarge"


def test_authenticated_requests_chunked_bodies_and_other_functions_pass() -> None:
    assert CHECK(head(length=1024, headers={"Authorization": f"Bearer {KEY}"})) is None
    assert CHECK(head(length=None, headers={"x-functions-key": KEY})) is None  # chunked: the host bounds what it reads
    assert CHECK(head(function="openapi_document", length=10**9)) is None
    # The key's subscription scope is the function's to judge (403 needs the API's path parsing).
    assert (
        CHECK(RequestHead("management_api", "GET", "/subscriptions/other/x", {"x-functions-key": KEY}, 0, {})) is None
    )


# ------------------------------------------------------------------------------------------------- ports


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on (a real listening socket) for the length of one test."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield int(listener.getsockname()[1])


def test_a_busy_port_is_refused_naming_the_port_and_what_it_was_for(busy_port: int) -> None:
    assert not is_free(busy_port)
    with pytest.raises(PortInUseError) as caught:
        ensure_free("127.0.0.1", busy_port, "Azurite queue")
    assert caught.value.message == f"port {busy_port} on 127.0.0.1 (Azurite queue) is already in use"
    assert (caught.value.port, caught.value.service) == (busy_port, "Azurite queue")
    assert isinstance(caught.value, ConfigurationError)  # the session's Azurite start retries on these


def test_a_free_port_passes_and_stays_free() -> None:
    port = free_port()
    ensure_free("127.0.0.1", port, "HTTP")
    ensure_free("127.0.0.1", port, "HTTP")  # the check closed what it bound
    assert is_free(port)


def test_the_http_server_on_a_busy_port_raises_the_same_error_not_an_oserror(busy_port: int) -> None:
    # The path taken when another program takes the port between the check and the bind.
    with pytest.raises(PortInUseError, match=rf"^port {busy_port} on 127.0.0.1 \(HTTP\) is already in use$"):
        HttpHost([], "", "127.0.0.1", busy_port)


def test_check_ports_finds_a_busy_http_or_azurite_port_and_a_port_given_twice(busy_port: int) -> None:
    http_port, blob, queue, table = free_ports(4)
    trio = AzuritePorts(blob, queue, table)
    check_ports("127.0.0.1", http_port, trio)  # all free: passes
    with pytest.raises(PortInUseError, match=r"\(HTTP\) is already in use"):
        check_ports("127.0.0.1", busy_port, trio)
    for service in ("blob", "queue", "table"):
        ports = AzuritePorts(**{**trio.by_service(), service: busy_port})
        with pytest.raises(PortInUseError, match=rf"\(Azurite {service}\) is already in use"):
            check_ports("127.0.0.1", http_port, ports)
    with pytest.raises(PortInUseError, match=r"\(HTTP\) is also the Azurite queue port"):
        check_ports("127.0.0.1", trio.queue, trio)


def test_suggested_ports_are_free_and_avoid_the_others(busy_port: int) -> None:
    suggested = suggest_port(busy_port)
    assert suggested != busy_port and is_free(suggested)
    assert suggest_port(busy_port, avoid=[suggested]) != suggested
    blob, queue, table = suggest_azurite_ports()
    assert (queue, table) == (blob + 1, blob + 2)
    assert all(is_free(p) for p in (blob, queue, table))
    assert blob not in suggest_azurite_ports(avoid=[queue])


def test_azurite_ports_are_three_different_tcp_ports() -> None:
    assert AzuritePorts.parse("20000,20001,20002") == AzuritePorts(20000, 20001, 20002)
    assert AzuritePorts.parse("20000,20001,20002").queue_endpoint() == "http://127.0.0.1:20001/{account}"
    for bad in ("20000,20001", "a,b,c", "20000,20000,20001", "0,1,2", "20000,20001,70000"):
        with pytest.raises(ConfigurationError, match="Azurite ports"):
            AzuritePorts.parse(bad)


# ---------------------------------------------------------------------------------- derived settings


@pytest.mark.parametrize(
    "value",
    [None, "", "http://127.0.0.1:10001/{account}", "http://localhost:20001/{account}/"],
    ids=["unset", "empty", "sample default", "another local azurite"],
)
def test_the_storage_queue_endpoint_follows_the_azurite_this_run_starts(value: str | None) -> None:
    env = {} if value is None else {STORAGE_QUEUE_ENDPOINT: value}
    follow_azurite(env, "http://127.0.0.1:30001/{account}", set_by_user=())
    assert env[STORAGE_QUEUE_ENDPOINT] == "http://127.0.0.1:30001/{account}"


@pytest.mark.parametrize(
    "value", ["core.windows.net", "https://{account}.queue.core.windows.net", "http://192.0.2.7:10001/{account}"]
)
def test_a_storage_queue_endpoint_elsewhere_is_kept(value: str) -> None:
    env = {STORAGE_QUEUE_ENDPOINT: value}
    follow_azurite(env, "http://127.0.0.1:30001/{account}", set_by_user=())
    assert env[STORAGE_QUEUE_ENDPOINT] == value


def test_a_storage_queue_endpoint_set_in_the_environment_is_kept() -> None:
    env = {STORAGE_QUEUE_ENDPOINT: "http://127.0.0.1:10001/{account}"}
    follow_azurite(env, "http://127.0.0.1:30001/{account}", set_by_user={STORAGE_QUEUE_ENDPOINT})
    assert env[STORAGE_QUEUE_ENDPOINT] == "http://127.0.0.1:10001/{account}"


def test_a_new_local_settings_file_has_this_runs_ports_and_the_key_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "local.settings.json"
    key = ensure_local_settings(path, ROOT / "local.settings.sample.json", 7123, AzuritePorts(30000, 30001, 30002))
    data = json.loads(path.read_text())
    assert data["Host"]["LocalHttpPort"] == 7123
    assert data["Values"][STORAGE_QUEUE_ENDPOINT] == "http://127.0.0.1:30001/{account}"
    assert key is not None and auth.parse_keys(data["Values"]["SCHEDULER_API_KEYS"])
    assert (tmp_path / KEY_FILE).read_text().strip() == key  # under the root it serves, not the project's
    assert local_http_port(path) == 7123
    assert ensure_local_settings(path, ROOT / "local.settings.sample.json", 9999) == key  # an existing file stays
    assert json.loads(path.read_text()) == data


def test_the_http_port_is_host_local_http_port_else_7071(tmp_path: Path) -> None:
    path = tmp_path / "local.settings.json"
    assert local_http_port(path) == 7071  # no file
    path.write_text(json.dumps({"Values": {}}))
    assert local_http_port(path) == 7071
    path.write_text(json.dumps({"Values": {}, "Host": {"LocalHttpPort": "7090"}}))
    assert local_http_port(path) == 7090
    for bad in ("x", 0, 70000):
        path.write_text(json.dumps({"Values": {}, "Host": {"LocalHttpPort": bad}}))
        with pytest.raises(ConfigurationError, match=r"Host\.LocalHttpPort"):
            local_http_port(path)


# ------------------------------------------------------------------------------------ worker threads


def test_queue_functions_get_python_threadpool_thread_count_threads_as_many_as_in_azure_by_default() -> None:
    bicep = (ROOT / "infra" / "main.bicep").read_text()
    match = re.search(r"^param pythonThreadpoolThreadCount int = (\d+)$", bicep, re.MULTILINE)
    assert match, "infra/main.bicep: param pythonThreadpoolThreadCount"
    assert DEFAULT_THREAD_COUNT == int(match.group(1)) == 40
    assert worker_thread_count({}) == 40
    assert worker_thread_count({THREAD_COUNT_SETTING: ""}) == 40
    assert worker_thread_count({THREAD_COUNT_SETTING: " 3 "}) == 3
    assert worker_thread_count({THREAD_COUNT_SETTING: "64"}) == 64
    for bad in ("0", "-2", "many", "2.5"):
        with pytest.raises(ConfigurationError, match=THREAD_COUNT_SETTING):
            worker_thread_count({THREAD_COUNT_SETTING: bad})


def test_free_ports_are_different_ports_each_free() -> None:
    """What CI once tripped on: two separate free_port() calls returned the same port for HTTP and Azurite."""
    ports = free_ports(64)
    assert len(set(ports)) == 64
    assert all(is_free(port) for port in ports)
    trio = AzuritePorts.free()
    assert len(set(trio.by_service().values())) == 3


@pytest.mark.azurite
def test_azurite_is_ready_only_when_it_listens_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """A port taken by another process after the check and before Azurite binds it (another worker's Azurite)
    answers connections: Azurite's start must fail there, not return as if ready over the other's service. Without
    ports, the kernel picks them as Azurite binds them, and every one is Azurite's own."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        blob, queue = free_ports(2)
        taken = AzuritePorts(blob, queue, other.getsockname()[1])
        monkeypatch.setattr(azurite_module, "ensure_free", lambda *args: None)  # taken after the check
        with pytest.raises(PortInUseError, match=str(taken.table)):
            Azurite(taken).start()
    with Azurite() as own:
        assert own.requested is None and len(set(own.ports.by_service().values())) == 3
        assert all(not is_free(port) for port in own.ports.by_service().values())
        tables = TableServiceClient.from_connection_string(own.connection_string)
        assert [table.name for table in tables.list_tables()] == []
