"""The examples of docs/placeholders.md, docs/managed-identity.md and docs/signing.md, as written there:

* every job marked ``<!-- doc-test: job NAME -->`` is parsed from the page and PUT through the management API
  of the local host with api-version 2026-12-01-preview: accepted (201) and answered with its feature, no
  secret in the answer;
* what placeholders.md says its job sends (``<!-- doc-test: sent NAME -->``) is what the real HTTP sender
  sends for that job to a real server on 127.0.0.1, with the example values of the page's table;
* the receiver of signing.md (``<!-- doc-test: receiver -->``), run as written inside a real HTTP server on
  127.0.0.1, accepts the page's job's signed call from the real HTTP sender and refuses a tampered one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from scheduler_core.actions import ActionContext
from scheduler_core.actions.http import HttpSender
from scheduler_core.definitions import Wire, parse_job
from scheduler_core.model.actions import HttpAction
from tests.e2e.conftest import ROOT, Api
from tests.support.http_target import http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
JC = "subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/reporting"
DOCS = {name: ROOT / "docs" / f"{name}.md" for name in ("placeholders", "managed-identity", "signing")}
BLOCK = re.compile(r"<!-- doc-test: (?P<marker>[^>]*?) -->\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.DOTALL)
#: What each page's jobs must show in the answer's ``properties.action``.
FEATURES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "placeholders": lambda action: action.get("expandPlaceholders") is True,
    "managed-identity": lambda action: action["request"]["authentication"]["type"] == "ManagedServiceIdentity",
    "signing": lambda action: action["request"]["signing"] == {"scheme": "StandardWebhooks"},
}


def blocks(page: Path) -> dict[str, str]:
    """The marked blocks of a page, by marker (``job NAME``, ``sent NAME``, ``receiver``)."""
    found = {match["marker"].strip(): match["body"] for match in BLOCK.finditer(page.read_text(encoding="utf-8"))}
    assert found, f"{page.name} has no doc-test block"
    return found


def jobs(page: Path) -> dict[str, dict[str, Any]]:
    return {
        marker.split(" ", 1)[1]: json.loads(body) for marker, body in blocks(page).items() if marker.startswith("job ")
    }


@pytest.fixture
def collection(api: Api) -> Api:
    body = {"location": "westus", "properties": {"sku": {"name": "Standard"}}}
    created = api.call("PUT", JC, body, query={"api-version": PREVIEW})
    assert created.status_code == 201, created.text
    return api


@pytest.mark.parametrize("page", sorted(DOCS))
def test_each_example_job_is_accepted_by_the_service_and_shows_its_feature(collection: Api, page: str) -> None:
    examples = jobs(DOCS[page])
    assert examples
    for name, body in examples.items():
        put = collection.call("PUT", f"{JC}/jobs/{name}", body, query={"api-version": PREVIEW})
        assert put.status_code == 201, f"{page}.md, job {name}: {put.text}"
        assert FEATURES[page](put.json()["properties"]["action"]), put.text
        assert "whsec_" not in put.text and "sig=Zm9vYmFy" not in put.text
        got = collection.call("GET", f"{JC}/jobs/{name}", query={"api-version": PREVIEW})
        assert got.status_code == 200 and got.json()["properties"]["action"] == put.json()["properties"]["action"]


def example_action(page: str, name: str) -> HttpAction:
    action = parse_job(jobs(DOCS[page])[name], wire=Wire.PREVIEW).definition.action.main
    assert isinstance(action, HttpAction)
    return action


def at(action: HttpAction, base_url: str) -> HttpAction:
    """The action pointed at a local server: its URI's scheme and host replaced, path and query kept."""
    origin = re.match(r"https?://[^/]+", action.uri)
    assert origin is not None
    return HttpAction(
        base_url + action.uri[origin.end() :],
        action.method,
        headers=action.headers,
        body=action.body,
        authentication=action.authentication,
        signing=action.signing,
    )


def test_the_placeholders_example_sends_what_the_page_shows() -> None:
    shown = blocks(DOCS["placeholders"])["sent report-daily"]
    head, _, body = shown.partition("\n\n")
    request_line, *header_lines = head.splitlines()
    method, path = request_line.split(" ")
    context = ActionContext(
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/reporting/jobs/report-daily",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/reporting",
        datetime(2026, 12, 24, 6, 0, 0, tzinfo=UTC),
        "3b1f0c2e9a7d4e5f8a6b0c1d2e3f4a5b",
        1,
        started_at=datetime(2026, 12, 24, 6, 0, 31, 500000, tzinfo=UTC),
        expand_placeholders=parse_job(
            jobs(DOCS["placeholders"])["report-daily"], wire=Wire.PREVIEW
        ).definition.action.expand_placeholders,
    )
    with http_target() as target:
        result = HttpSender(timeout=5).send(
            at(example_action("placeholders", "report-daily"), target.base_url), context
        )
        assert result.succeeded, result.message
        [received] = target.received
    assert (received.method, received.path) == (method, path)
    for line in header_lines:
        name, value = line.split(": ", 1)
        assert received.headers[name] == value
    assert received.body.decode() == body
    json.loads(body)  # the page shows a valid JSON body


@dataclass
class Served:
    base_url: str
    statuses: list[int]


@contextmanager
def serving(handle: Callable[[bytes, dict[str, str]], int], tamper: bool = False) -> Iterator[Served]:
    """A real HTTP server on 127.0.0.1 answering with the status ``handle`` returns for each request (its
    body changed by one byte first when ``tamper``)."""
    served = Served("", [])

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if tamper:
                body = body.replace(b"sync-orders", b"sync-0rders")
            status = handle(body, dict(self.headers))
            served.statuses.append(status)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    served.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def test_the_signing_pages_receiver_verifies_its_jobs_calls(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(blocks(DOCS["signing"])["receiver"], "docs/signing.md", "exec"), namespace)
    handle = namespace["handle"]
    action = example_action("signing", "order-sync")
    context = ActionContext(
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/shop/jobs/order-sync",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/shop",
        datetime.now(UTC),
        "exec-1",
        0,
    )
    with serving(handle) as honest:
        result = HttpSender(timeout=5).send(at(action, honest.base_url), context)
    assert result.succeeded, result.message
    assert honest.statuses == [204]
    assert "verified call exec-1 {'task': 'sync-orders'}" in capsys.readouterr().out
    with serving(handle, tamper=True) as tampered:
        refused = HttpSender(timeout=5).send(at(action, tampered.base_url), context)
    assert tampered.statuses == [401] and not refused.succeeded
