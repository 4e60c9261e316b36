"""A Queue client of the app's own for the calls made per fire: the subset of ``azure-storage-queue``'s
``QueueClient`` that sends, receives, deletes, releases and peeks messages, with the same arguments, answers
(``QueueMessage``) and retry rules (the SDK's ``ExponentialRetry``), on kept-alive connections.

Message content goes as given (no encoding: the caller encodes, as
:class:`~scheduler_core.adapters.azure.queues.MessageQueue` does base64). Queue management (create, delete,
properties) stays with the SDK's clients.
``tests/contract/test_rest_queue.py`` runs every call through both clients on Azurite.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from azure.storage.queue import QueueMessage

from scheduler_core.adapters.azure.rest._auth import Auth
from scheduler_core.adapters.azure.rest._endpoint import Endpoint
from scheduler_core.adapters.azure.rest._errors import service_error
from scheduler_core.adapters.azure.rest._http import Answer
from scheduler_core.adapters.azure.rest._retry import StorageTries

__all__ = ["RestQueue"]

#: The Queue service version the SDK speaks (``azure-storage-queue``'s newest).
API_VERSION = "2021-02-12"
#: The most messages one receive or peek returns.
MAX_PAGE = 32


class RestQueue:
    """Queue ``name`` at ``endpoint`` (``https://account.queue.core.windows.net``, or the emulator's
    ``http://host:port/account``) signed by ``auth``. ``retries``: the SDK's ``retry_total`` (3 by default),
    ``initial``/``base``/``jitter``: its ``ExponentialRetry``'s back-off (15 s, 3, 3 s by default)."""

    def __init__(
        self,
        endpoint: str,
        name: str,
        auth: Auth,
        *,
        connect_timeout: float,
        read_timeout: float,
        retries: int = 3,
        initial: float = 15.0,
        base: float = 3.0,
        jitter: float = 3.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.queue_name = name
        self._endpoint = Endpoint(
            endpoint,
            auth,
            {"x-ms-version": API_VERSION},
            lambda options: StorageTries(
                total=int(options.get("retry_total", retries)), initial=initial, base=base, jitter=jitter
            ),
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            tls=tls,
        )
        self._path = f"/{quote(name, safe='')}/messages"

    def _call(self, method: str, path: str, query: dict[str, Any], body: bytes | None = None, **options: Any) -> Answer:
        headers = {"Content-Type": "application/xml"} if body is not None else {}
        given = "&".join(f"{key}={quote(str(value), safe='')}" for key, value in query.items() if value is not None)
        answer = self._endpoint.call(method, path, query=given, headers=headers, body=body, options=options)
        if not 200 <= answer.status < 300:
            raise service_error(answer, by_status=True)
        return answer

    def send_message(
        self, content: str, *, visibility_timeout: int | None = None, time_to_live: int | None = None, **options: Any
    ) -> QueueMessage:
        query = {"visibilitytimeout": visibility_timeout, "messagettl": time_to_live}
        [sent] = _messages(self._call("POST", self._path, query, _text(content), **options).body)
        sent.content = content
        return sent

    def receive_messages(
        self,
        *,
        messages_per_page: int | None = None,
        max_messages: int | None = None,
        visibility_timeout: int | None = None,
        **options: Any,
    ) -> Iterator[QueueMessage]:
        """Messages taken ``messages_per_page`` at a time (one by default) until ``max_messages`` were taken or
        the queue shows none, each hidden for ``visibility_timeout`` seconds."""
        taken = 0
        while max_messages is None or taken < max_messages:
            want = messages_per_page if max_messages is None else min(messages_per_page or 1, max_messages - taken)
            query = {"numofmessages": want, "visibilitytimeout": visibility_timeout}
            page = _messages(self._call("GET", self._path, query, **options).body)
            if not page:
                return
            taken += len(page)
            yield from page

    def peek_messages(self, max_messages: int | None = None, **options: Any) -> list[QueueMessage]:
        query = {"peekonly": "true", "numofmessages": max_messages}
        return _messages(self._call("GET", self._path, query, **options).body)

    def delete_message(self, message: str | QueueMessage, pop_receipt: str | None = None, **options: Any) -> None:
        identity, receipt = _identity(message, pop_receipt)
        self._call("DELETE", f"{self._path}/{quote(identity, safe='')}", {"popreceipt": receipt}, **options)

    def update_message(
        self,
        message: str | QueueMessage,
        pop_receipt: str | None = None,
        content: str | None = None,
        *,
        visibility_timeout: int | None = None,
        **options: Any,
    ) -> QueueMessage:
        identity, receipt = _identity(message, pop_receipt)
        body = None if content is None else _text(content)
        query = {"popreceipt": receipt, "visibilitytimeout": visibility_timeout or 0}
        answer = self._call("PUT", f"{self._path}/{quote(identity, safe='')}", query, body, **options)
        known = message if isinstance(message, QueueMessage) else None
        return QueueMessage(
            content=content if content is not None else (known.content if known else None),
            id=identity,
            inserted_on=known.inserted_on if known else None,
            expires_on=known.expires_on if known else None,
            dequeue_count=known.dequeue_count if known else None,
            pop_receipt=answer.headers.get("x-ms-popreceipt"),
            next_visible_on=_time(answer.headers.get("x-ms-time-next-visible")),
        )

    def close(self) -> None:
        self._endpoint.close()


def _identity(message: str | QueueMessage, pop_receipt: str | None) -> tuple[str, str]:
    if isinstance(message, QueueMessage):
        identity, receipt = message.id, pop_receipt or message.pop_receipt
    else:
        identity, receipt = message, pop_receipt
    if not identity or not receipt:
        raise ValueError("pop_receipt must be present")
    return identity, receipt


def _text(content: str) -> bytes:
    """A message's body: its text in a ``QueueMessage`` element, escaped for XML."""
    text = f"<QueueMessage><MessageText>{escape(content)}</MessageText></QueueMessage>"
    return f"<?xml version='1.0' encoding='utf-8'?>\n{text}".encode()


def _time(value: str | None) -> datetime | None:
    return parsedate_to_datetime(value) if value else None


def _messages(body: bytes) -> list[QueueMessage]:
    """The messages of a ``QueueMessagesList`` answer, as the SDK's ``QueueMessage``s."""
    if not body.strip():
        return []
    found = []
    for element in ElementTree.fromstring(body).iter("QueueMessage"):
        fields = {child.tag: child.text for child in element}
        count = fields.get("DequeueCount")
        found.append(
            QueueMessage(
                content=fields.get("MessageText"),
                id=fields.get("MessageId"),
                inserted_on=_time(fields.get("InsertionTime")),
                expires_on=_time(fields.get("ExpirationTime")),
                dequeue_count=int(count) if count is not None else None,
                pop_receipt=fields.get("PopReceipt"),
                next_visible_on=_time(fields.get("TimeNextVisible")),
            )
        )
    return found
