"""The app's own Storage queues (scans and executions) as the :class:`~scheduler_core.ports.ExecutionQueue`
port: messages are base64 text, as the Functions host reads them (:func:`.clients.queue_client`)."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta

from azure.storage.queue import QueueClient

from scheduler_core.adapters.azure.clients import rest_queue
from scheduler_core.adapters.azure.errors import translated
from scheduler_core.adapters.azure.rest import RestQueue

#: How many of a queue's first visible messages :meth:`MessageQueue.behind` looks at (the most one peek shows).
PEEK = 32


@translated
class MessageQueue:
    """Sends messages to one queue; ``client`` is the SDK's client (tests and benchmarks read through it)."""

    def __init__(self, client: QueueClient, peeker: QueueClient | None = None, sender: RestQueue | None = None) -> None:
        """``peeker``: a client of the same queue that does not decode content (``queue_client(decoded=False)``),
        for :meth:`behind`; without it, :meth:`behind` peeks through ``client``. ``sender``: the app's own client
        of the queue, which :meth:`send` uses when given (the same message, base64 as ``client`` encodes it)."""
        self.client = client
        self.peeker = peeker or client
        self.sender = sender

    def send(self, text: str, visibility: int = 0) -> None:
        """Send ``text``, invisible for ``visibility`` whole seconds (0: visible at once)."""
        if self.sender is None:
            self.client.send_message(text, visibility_timeout=visibility or None)
        else:
            self.sender.send_message(base64.b64encode(text.encode()).decode(), visibility_timeout=visibility or None)

    def behind(self, older_than: timedelta, now: datetime) -> bool:
        """Whether the queue's consumers are behind: among its first visible messages (one peek, which takes
        nothing and hides nothing) is one sent more than ``older_than`` before ``now``. A message shows at its
        due second and is taken within a poll, so one still visible that long after it was sent waits in a
        backlog (or is a delayed retry that showed a moment ago: a rare false alarm)."""
        cutoff = now - older_than
        return any(
            message.inserted_on is not None and message.inserted_on < cutoff
            for message in self.peeker.peek_messages(max_messages=PEEK)
        )


def message_queue(client: QueueClient, peeker: QueueClient | None = None) -> MessageQueue:
    """The :class:`MessageQueue` of ``client``'s queue, sending through the app's own client of it
    (:func:`~scheduler_core.adapters.azure.clients.rest_queue`)."""
    return MessageQueue(client, peeker, rest_queue(client))
