"""The app's own Storage queues (scans and executions) as the :class:`~scheduler_core.ports.ExecutionQueue`
port: messages are base64 text, as the Functions host reads them (:func:`.clients.queue_client`)."""

from __future__ import annotations

from azure.storage.queue import QueueClient

from scheduler_core.adapters.azure.errors import translated


@translated
class MessageQueue:
    """Sends messages to one queue; ``client`` is the SDK's client (tests and benchmarks read through it)."""

    def __init__(self, client: QueueClient) -> None:
        self.client = client

    def send(self, text: str, visibility: int = 0) -> None:
        """Send ``text``, invisible for ``visibility`` whole seconds (0: visible at once)."""
        self.client.send_message(text, visibility_timeout=visibility or None)
