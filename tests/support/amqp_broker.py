"""A small AMQP 1.0 broker on 127.0.0.1 for the Service Bus tests: a **test peer**, never product code.

Built on python-qpid-proton, it implements what the official ``azure-servicebus`` client's *sender* needs
(see ``shared/reference/servicebus-azurite-notes.md``, part B):

* SASL ANONYMOUS (proton's default for a server transport) over plain TCP; the client is given a
  ``UseDevelopmentEmulator``-style endpoint (``use_tls=False``) with this broker's port;
* claims-based security: the ``put-token`` request on ``$cbs`` is answered on the connection's ``$cbs``
  reply link with ``correlation-id`` = the request's ``message-id`` and ``status-code``/``status-description``
  (202 unless the token names a key this broker was told to deny, which gets 401);
* entity sender links (target ``amqps://host:port/<entity>``): credit is granted, each transfer is
  recorded, **accepted and settled**; batch transfers (one transfer of N encoded messages in ``data``
  sections) are split into their messages; an entity the broker does not know is refused with
  ``amqp:not-found``, as Service Bus does.

What it records (under a lock, for the test thread): every message with its entity, every CBS token,
and the number of connections and entity links opened, so tests can prove that senders are reused.
Left out on purpose: TLS, token validation, receiving, ``$management``, scheduling, TTL, sessions.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from proton import Condition, Data, Delivery, Endpoint, Handler, Link, Message
from proton.reactor import ApplicationEvent, Container, EventInjector

CBS = "$cbs"
#: Descriptor of an AMQP ``data`` body section (``amqp:data:binary``).
DATA_SECTION = 0x75


@dataclass(frozen=True)
class ReceivedMessage:
    """One message as the broker received it (the decoded AMQP message and the entity it was sent to)."""

    entity: str
    message: Message
    batch: bool  # arrived inside a batch transfer

    @property
    def body(self) -> bytes:
        value = self.message.body
        if isinstance(value, memoryview):
            return value.tobytes()
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, bytes):
            return value
        raise TypeError(f"unexpected body type {type(value).__name__}")

    @property
    def application_properties(self) -> dict[str, Any]:
        properties: dict[Any, Any] = self.message.properties or {}
        return {str(k): v for k, v in properties.items()}

    @property
    def annotations(self) -> dict[str, Any]:
        annotations: dict[Any, Any] = self.message.annotations or {}
        return {str(k): v for k, v in annotations.items()}


@dataclass(frozen=True)
class CbsToken:
    audience: str
    token_type: str
    token: str


@dataclass
class AmqpBroker:
    """State of the running broker. ``entities`` (lower case) are the queues and topics it accepts."""

    entities: set[str]
    deny_key_names: set[str] = field(default_factory=set)
    port: int = 0
    messages: list[ReceivedMessage] = field(default_factory=list)
    tokens: list[CbsToken] = field(default_factory=list)
    connections_opened: int = 0
    entity_links_opened: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        """The namespace endpoint for the app's ``SCHEDULER_SERVICE_BUS_ENDPOINT`` setting (no TLS)."""
        return f"amqp://127.0.0.1:{self.port}"

    def add_entity(self, name: str) -> None:
        with self.lock:
            self.entities.add(name.lower())

    def received(self, entity: str | None = None) -> list[ReceivedMessage]:
        with self.lock:
            return [m for m in self.messages if entity is None or m.entity.lower() == entity.lower()]

    def wait_for(self, count: int, entity: str | None = None, timeout: float = 10.0) -> list[ReceivedMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.received(entity)
            if len(found) >= count:
                return found
            time.sleep(0.01)
        raise AssertionError(f"expected {count} messages, the broker has {len(self.received(entity))}")

    def clear(self) -> None:
        with self.lock:
            self.messages.clear()
            self.tokens.clear()

    def stats(self) -> tuple[int, int]:
        """(connections opened, entity links opened) so far."""
        with self.lock:
            return self.connections_opened, self.entity_links_opened


def _entity_of(address: str | None) -> str:
    """``amqps://127.0.0.1:5673/queue`` (the SDK keeps the amqps scheme even without TLS) -> ``queue``."""
    text = address or ""
    if "://" in text:
        text = urlsplit(text).path
    return text.lstrip("/")


def _sections(payload: bytes) -> Iterator[tuple[int | None, Any]]:
    """The sections of an encoded message: (descriptor code or None, value), values copied to bytes."""
    data = Data()
    offset = 0
    while offset < len(payload):
        data.clear()
        used = data.decode(payload[offset:])
        if used <= 0:
            return
        offset += used
        data.rewind()
        data.next()
        value = data.get_object()
        descriptor = getattr(value, "descriptor", None)
        inner = getattr(value, "value", value)
        if isinstance(inner, memoryview):
            inner = inner.tobytes()  # get_object returns views into a reused buffer
        yield (int(descriptor) if descriptor is not None else None), inner


def decode_transfer(payload: bytes) -> tuple[list[Message], bool]:
    """The messages of one transfer: a single message, or each message of a batch (message-format
    0x80013700: an envelope followed by ``data`` sections that each hold an encoded message)."""
    sections = list(_sections(payload))
    bodies = [value for code, value in sections if code == DATA_SECTION]
    is_batch = len(bodies) > 0 and all(
        isinstance(body, bytes) and len(body) > 2 and body[:2] == b"\x00\x53" for body in bodies
    )
    if is_batch:
        messages = []
        for body in bodies:
            message = Message()
            message.decode(body)
            messages.append(message)
        return messages, True
    message = Message()
    message.decode(payload)
    return [message], False


def _cbs_reply_link(connection: Any) -> Any:
    """The connection's link on which CBS replies go (its source is ``$cbs``), or None."""
    link = connection.link_head(Endpoint.LOCAL_ACTIVE)
    while link is not None:
        if link.is_sender and link.remote_source.address == CBS:
            return link
        link = link.next(Endpoint.LOCAL_ACTIVE)
    return None


class _BrokerHandler(Handler):
    def __init__(self, state: AmqpBroker) -> None:
        self.state = state
        self.container: Container | None = None

    # ------------------------------------------------------------------------------- endpoints

    def on_connection_remote_open(self, event: Any) -> None:
        event.connection.open()
        with self.state.lock:
            self.state.connections_opened += 1

    def on_session_remote_open(self, event: Any) -> None:
        event.session.open()

    def on_link_remote_open(self, event: Any) -> None:
        link: Link = event.link
        link.source.copy(link.remote_source)
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = link.remote_rcv_settle_mode
        if link.is_sender:  # the client receives: only the CBS reply link is served
            link.target.copy(link.remote_target)
            link.open()
            return
        address = link.remote_target.address
        entity = _entity_of(address)
        if address != CBS:
            with self.state.lock:
                known = entity.lower() in self.state.entities
                if known:
                    self.state.entity_links_opened += 1
            if not known:  # as Service Bus: an attach with a null target, then a detach with the error
                link.open()
                link.condition = Condition(
                    "amqp:not-found", f"The messaging entity '{entity}' could not be found (test broker)."
                )
                link.close()
                return
        link.target.copy(link.remote_target)
        link.open()
        link.flow(1000)

    def on_link_remote_close(self, event: Any) -> None:
        if event.link.state & Endpoint.LOCAL_ACTIVE:
            event.link.close()

    def on_session_remote_close(self, event: Any) -> None:
        if event.session.state & Endpoint.LOCAL_ACTIVE:
            event.session.close()

    def on_connection_remote_close(self, event: Any) -> None:
        if event.connection.state & Endpoint.LOCAL_ACTIVE:
            event.connection.close()

    # ------------------------------------------------------------------------------- transfers

    def on_delivery(self, event: Any) -> None:
        delivery: Delivery = event.delivery
        link = delivery.link
        if link.is_sender:  # our CBS replies being settled by the client
            if delivery.remote_state or delivery.settled:
                delivery.settle()
            return
        if not delivery.readable or delivery.partial:
            return
        payload = link.recv(delivery.pending) or b""
        link.advance()
        if link.remote_target.address == CBS:
            self._put_token(link, payload)
        else:
            messages, batch = decode_transfer(payload)
            with self.state.lock:
                self.state.messages.extend(
                    ReceivedMessage(_entity_of(link.remote_target.address), m, batch) for m in messages
                )
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        if link.credit < 500:
            link.flow(1000 - link.credit)

    def _put_token(self, link: Any, payload: bytes) -> None:
        request = Message()
        request.decode(payload)
        properties: dict[Any, Any] = request.properties or {}
        props = {str(k): v for k, v in properties.items()}
        token = request.body if isinstance(request.body, str) else str(request.body)
        with self.state.lock:
            self.state.tokens.append(CbsToken(str(props.get("name", "")), str(props.get("type", "")), token))
            denied = any(f"skn={name}" in token for name in self.state.deny_key_names)
        status, description = (401, "Unauthorized: the key is not valid (test broker)") if denied else (202, "OK")
        reply = Message(
            correlation_id=request.id,
            properties={"status-code": status, "status-description": description},
        )
        sender = _cbs_reply_link(link.connection)
        if sender is not None:
            sender.send(reply, tag=uuid.uuid4().hex)

    def on_stop_broker(self, event: Any) -> None:
        if self.container is not None:
            self.container.stop()


@contextmanager
def amqp_broker(entities: Iterable[str] = ()) -> Iterator[AmqpBroker]:
    """Run a broker on a free loopback port in a background thread for the duration of the block."""
    state = AmqpBroker({name.lower() for name in entities})
    handler = _BrokerHandler(state)
    container = Container(handler)
    handler.container = container
    injector = EventInjector()
    container.selectable(injector)
    for _ in range(20):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            state.port = int(probe.getsockname()[1])
        try:
            container.listen(f"127.0.0.1:{state.port}")
            break
        except Exception:  # the port was taken meanwhile: try another
            continue
    thread = threading.Thread(target=container.run, name="amqp-test-broker", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        injector.trigger(ApplicationEvent("stop_broker"))
        thread.join(timeout=5)
