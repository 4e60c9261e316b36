"""History messages start with the outcome, for every action type (issue 27: "failure first"): a truncated view
(the CLI's history, the dashboard's "Last outcome", a history row) shows what happened, not the response
headers. Real targets: HTTP servers on 127.0.0.1, queues on the session's Azurite, the AMQP test broker.

And what a hostile target answers cannot make the message unbounded, unreadable, a terminal's command, or
a copy of the job's credentials: a huge body is cut with a marker, a binary one is named, control
characters and escape sequences are written as visible escapes, and an echoed ``Authorization`` header, SAS
signature or password is masked in the body and the headers alike."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from azure.storage.queue import AccountSasPermissions, ResourceTypes, generate_account_sas

from local_host.azurite import DEV_ACCOUNT, DEV_KEY
from scheduler_core.actions import ActionRunner
from scheduler_core.actions.base import MAX_BODY_IN_HISTORY
from scheduler_core.actions.http import MAX_HEADERS_IN_HISTORY, HttpSender
from scheduler_core.actions.outcome import MAX_REASON, SEPARATOR, outcome_message, reason, shown
from scheduler_core.actions.service_bus import ServiceBusSender
from scheduler_core.actions.storage_queue import StorageQueueSender
from scheduler_core.cli.output import visible
from scheduler_core.model.actions import (
    BasicAuthentication,
    HttpAction,
    Secret,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    SharedAccessKeyAuthentication,
    StorageQueueAction,
)
from tests.actions.conftest import AzuriteQueue, action_context
from tests.support.amqp_broker import AmqpBroker
from tests.support.outbound_net import Reply, Request, ScriptedServer, scripted_server

PW = "hunter2-correct-horse"
BEARER = "eyJ0eXAiOiJKV1QiLCJhbGciOi.secret-bearer-token"
SIG = "c2lnbmF0dXJlLXZhbHVlLTEyMw%3D"
SB_KEY = "c2VjcmV0LXNhcy1rZXktdmFsdWU="
#: Characters a terminal acts on: ESC (colours, clear screen, OSC title), CR, BS, BEL, C1 CSI, RLO, LS.
HOSTILE = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J over\rwrite\x08 \x9b31m \u202eevil\u202c \u2028"
HOUR = timedelta(hours=1)
RAW = ("\x1b", "\r", "\x08", "\x07", "\x9b", "\u202e", "\u2028")


def answering(status: int, body: bytes, headers: dict[str, str] | None = None) -> Iterator[ScriptedServer]:
    def respond(_: Request) -> Reply:
        return status, {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}, body

    with scripted_server(respond) as server:
        yield server


@pytest.fixture
def failing() -> Iterator[ScriptedServer]:
    yield from answering(500, b"boom: database unavailable\n(retry later)")


def get(server: ScriptedServer, path: str = "/hook", **extra: object) -> HttpAction:
    return HttpAction(server.base_url + path, "GET", **extra)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- the shape


def test_an_http_answer_starts_with_its_status_and_body_and_ends_with_its_headers(failing: ScriptedServer) -> None:
    result = HttpSender(timeout=5).send(get(failing), action_context())
    assert (result.succeeded, result.status_code) == (False, 500)
    head, action, headers = result.message.split(SEPARATOR)
    assert head == "500 Internal Server Error: boom: database unavailable\n(retry later)"
    assert action == "Http Action - Response from host '127.0.0.1'"
    assert headers.startswith("Response Headers: ") and "Content-Type: text/plain; charset=utf-8" in headers
    cut_view = result.message[:60]  # what the dashboard's excerpt shows
    assert cut_view == "500 Internal Server Error: boom: database unavailable\n(retry"


def test_an_answer_without_a_body_is_its_status_alone() -> None:
    for server in answering(204, b""):
        result = HttpSender(timeout=5).send(get(server), action_context())
    assert result.succeeded and result.message.startswith("204 No Content | Http Action - Response from host ")


def test_a_call_without_an_answer_starts_with_what_happened() -> None:
    for server in answering(200, b"ok"):
        closed = server.base_url
    result = HttpSender(timeout=5).send(HttpAction(closed + "/gone?sig=" + SIG, "GET"), action_context())
    assert result.message == (
        "Request failed: Connection refused (ConnectionError) | Http Action - Request to host '127.0.0.1'"
    )


def test_a_storage_queue_message_starts_with_its_outcome(azurite_queue: AzuriteQueue) -> None:
    sender = StorageQueueSender(endpoint=azurite_queue.endpoint, message_format="text")
    token = azurite_queue.sas()
    sent = sender.send(StorageQueueAction(DEV_ACCOUNT, azurite_queue.name, "m", Secret(token)), action_context())
    assert sent.succeeded and sent.message.startswith("Message added (message id '"), sent.message
    where = f"| StorageQueue Action - queue '{azurite_queue.name}' of storage account '{DEV_ACCOUNT}'"
    assert sent.message.endswith(where)
    account_sas = generate_account_sas(  # a queue SAS is bound to its queue's name
        DEV_ACCOUNT, DEV_KEY, ResourceTypes(object=True), AccountSasPermissions(add=True), datetime.now(UTC) + HOUR
    )
    missing = sender.send(StorageQueueAction(DEV_ACCOUNT, "nope", "m", Secret(account_sas)), action_context())
    assert missing.message.startswith("Queue not found (QueueNotFound): The specified queue does not exist. |")
    expired = azurite_queue.sas(expiry=-HOUR)
    denied = sender.send(StorageQueueAction(DEV_ACCOUNT, azurite_queue.name, "m", Secret(expired)), action_context())
    assert denied.message.startswith("Access denied: the SAS token is invalid, expired"), denied.message
    assert expired.split("sig=")[1] not in denied.message and account_sas.split("sig=")[1] not in missing.message


@pytest.mark.parametrize("kind", ["ServiceBusQueue", "ServiceBusTopic"])
def test_a_service_bus_message_starts_with_its_outcome(broker: AmqpBroker, kind: str) -> None:
    action_class = ServiceBusQueueAction if kind == "ServiceBusQueue" else ServiceBusTopicAction
    entity, missing = ("orders", "no-such-queue") if kind == "ServiceBusQueue" else ("events", "no-such-topic")
    auth = SharedAccessKeyAuthentication("RootManageSharedAccessKey", Secret(SB_KEY))
    sender = ServiceBusSender(endpoint=broker.endpoint, timeout=10)
    try:
        sent = sender.send(action_class("contoso", entity, "m", authentication=auth), action_context())
        failed = sender.send(action_class("contoso", missing, "m", authentication=auth), action_context())
    finally:
        sender.close()
    broker.deny_key_names.add("RootManageSharedAccessKey")
    refused = ServiceBusSender(endpoint=broker.endpoint, timeout=10)  # a new connection, refused
    try:
        denied = refused.send(action_class("contoso", entity, "m", authentication=auth), action_context("e2"))
    finally:
        refused.close()
    noun = "queue" if kind == "ServiceBusQueue" else "topic"
    assert sent.message == (
        f"Message sent (message id 'exec-1') | {kind} Action - {noun} '{entity}' in namespace 'contoso'"
    )
    assert failed.message.startswith("Could not send: ") and failed.message.endswith(
        f"| {kind} Action - {noun} '{missing}' in namespace 'contoso'"
    )
    assert denied.message.startswith("Access denied: the shared access key was refused"), denied.message
    assert all(SB_KEY not in r.message for r in (sent, failed, denied))


def test_the_runners_own_failures_start_with_the_outcome() -> None:
    unsupported = ActionRunner().run(StorageQueueAction("acct", "q", "m"), action_context())
    assert unsupported.message == "Not supported: this action type is not sent here | StorageQueue Action"


# ----------------------------------------------------------------------------------------- hostile answers


def test_a_huge_body_is_cut_with_a_marker_and_the_message_stays_bounded() -> None:
    many = {f"X-Big-{i}": "h" * 10_000 for i in range(12)}  # 120 KB of headers
    for server in answering(502, b"upstream failed: " + b"z" * 5_000_000, many):
        result = HttpSender(timeout=10).send(get(server), action_context())
    assert result.message.startswith("502 Bad Gateway: upstream failed: zzz")
    assert "zzz… (body cut at 2,048 bytes) | Http Action" in result.message
    assert result.message.count("z") <= MAX_BODY_IN_HISTORY
    assert result.message.endswith(f"… (headers cut at {MAX_HEADERS_IN_HISTORY:,} characters)")
    assert len(result.message) < MAX_BODY_IN_HISTORY + MAX_HEADERS_IN_HISTORY + 300


def test_a_character_cut_by_the_limit_is_dropped_not_garbled() -> None:
    body = ("x" * (MAX_BODY_IN_HISTORY - 1) + "東京").encode()  # 東 straddles byte 2,048
    for server in answering(500, body):
        result = HttpSender(timeout=5).send(get(server), action_context())
    assert "\ufffd" not in result.message and "東" not in result.message
    assert f"{'x' * (MAX_BODY_IN_HISTORY - 1)}… (body cut at 2,048 bytes)" in result.message


def test_a_binary_body_is_named_not_shown() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    for server in answering(500, png, {"Content-Type": "image/png"}):
        result = HttpSender(timeout=5).send(get(server), action_context())
    assert result.message.startswith("500 Internal Server Error: (binary body, 1,040 bytes) | Http Action")


def test_a_body_with_some_invalid_utf8_is_still_read() -> None:
    for server in answering(500, b"caf\xe9 closed: database \xff unavailable"):
        result = HttpSender(timeout=5).send(get(server), action_context())
    assert result.message.startswith("500 Internal Server Error: caf\ufffd closed: database \ufffd unavailable |")


def test_control_characters_and_escape_sequences_never_reach_a_console_raw() -> None:
    reason_phrase_server = HOSTILE.encode()
    for server in answering(500, reason_phrase_server, {"X-Trap": "\x1b[2Jcleared"}):
        result = HttpSender(timeout=5).send(get(server), action_context())
    for char in RAW:
        assert char not in result.message, repr(char)
    assert result.message.startswith("500 Internal Server Error: \\x1b[31mred\\x1b[0m \\x1b]0;pwned\\x07 \\x1b[2J")
    assert "over\\rwrite\\x08 \\x9b31m \\u202eevil\\u202c \\u2028" in result.message
    assert "X-Trap: \\x1b[2Jcleared" in result.message
    assert visible(result.message) == result.message.replace("\n", "\\n").replace("\t", "\\t")


def echo_everything(request: Request) -> Reply:
    """A careless target: it answers with every header it got, in its headers and in its body."""
    echoed = "\n".join(f"{name}: {value}" for name, value in request.headers.items())
    headers = {f"X-Echo-{name}": value for name, value in request.headers.items()}
    return 401, {"Content-Type": "text/plain", **headers}, f"denied for {request.path}\n{echoed}".encode()


def test_an_echoed_authorization_header_sas_signature_or_password_is_masked() -> None:
    with scripted_server(echo_everything) as server:
        basic = HttpSender(timeout=5).send(
            get(
                server,
                f"/hook?sig={SIG}&code=fn-key-123456",
                authentication=BasicAuthentication("ops", Secret(PW)),
            ),
            action_context(),
        )
        bearer = HttpSender(timeout=5).send(
            get(server, "/api", headers={"Authorization": f"Bearer {BEARER}", "x-api-key": "key-0123456789"}),
            action_context(),
        )
    basic_header = base64.b64encode(f"ops:{PW}".encode()).decode()
    for result in (basic, bearer):
        assert result.message.startswith("401 Unauthorized: denied for /"), result.message
        for secret in (PW, basic_header, BEARER, SIG, "fn-key-123456", "key-0123456789"):
            assert secret not in result.message, (secret, result.message)
    assert "Authorization: ***" in bearer.message and "X-Echo-Authorization: ***" in bearer.message
    assert "/hook?sig=***&code=***" in basic.message


# --------------------------------------------------------------------------------------- the console rules


def test_shown_escapes_exactly_what_the_command_line_escapes() -> None:
    """The deployed app cannot import the command line; its rule (:func:`visible`) and this one agree on
    every character either could escape."""
    for code in range(0x2100):
        char = chr(code)
        assert shown(char, one_line=True) == visible(char), hex(code)
        assert shown(char) == (char if char in "\n\t" else visible(char)), hex(code)
    assert shown(shown(HOSTILE)) == shown(HOSTILE) and shown("a\r\nb") == "a\nb"


def test_a_reason_is_one_bounded_masked_line() -> None:
    message = outcome_message("Http", "500 Internal Server Error", "line one\nsig=abcdef " + "y" * 500, "host 'h'")
    why = reason(message)
    assert why.startswith("500 Internal Server Error: line one\\nsig=*** yyy") and "\n" not in why
    assert len(why) == MAX_REASON and why.endswith("…")
    # the outcome and its detail only: the log line names the action and its target itself
    assert reason("Access denied: Bearer abc.def \x1b[2J | StorageQueue Action - queue 'q' of account 'a'") == (
        "Access denied: Bearer *** \\x1b[2J"
    )
    assert reason("200 OK | Http Action - Response from host 'h' | Response Headers: A: b") == "200 OK"
    given_up = "the worker running this attempt was lost 3 times; not run again"  # not a sender's: kept whole
    assert reason(given_up) == given_up
