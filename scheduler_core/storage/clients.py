"""Construction of Azure Storage clients from the settings.

Queue messages are base64-encoded text everywhere: ``host.json`` keeps the Functions host's default
``"messageEncoding": "base64"``, so every sender and reader goes through :func:`queue_client`.
"""

from __future__ import annotations

from typing import Any

from azure.data.tables import TableServiceClient
from azure.storage.queue import (
    QueueClient,
    QueueServiceClient,
    TextBase64DecodePolicy,
    TextBase64EncodePolicy,
)

from scheduler_core.identity import LazyCredential
from scheduler_core.settings import Settings

#: The app's own identity, for identity-based storage connections (built on first use).
_identity = LazyCredential()


def _default_credential() -> Any:
    return _identity.get()


def table_service(settings: Settings) -> TableServiceClient:
    """A Table service client: connection string, or the app's managed identity."""
    if settings.storage_connection_string:
        return TableServiceClient.from_connection_string(settings.storage_connection_string)
    endpoint = f"https://{settings.storage_account_name}.table.core.windows.net"
    return TableServiceClient(endpoint=endpoint, credential=_default_credential())


def _queue_endpoint(settings: Settings) -> str:
    return f"https://{settings.storage_account_name}.queue.core.windows.net"


def queue_service(settings: Settings) -> QueueServiceClient:
    """A Queue service client, for managing queues (not for messages: see :func:`queue_client`)."""
    if settings.storage_connection_string:
        return QueueServiceClient.from_connection_string(settings.storage_connection_string)
    return QueueServiceClient(account_url=_queue_endpoint(settings), credential=_default_credential())


def queue_client(settings: Settings, name: str) -> QueueClient:
    """A client for one queue that encodes and decodes messages as base64 text, as the Functions host does.

    (``QueueServiceClient.get_queue_client`` does not pass encode policies on, so build the client here.)
    """
    policies: dict[str, Any] = {
        "message_encode_policy": TextBase64EncodePolicy(),
        "message_decode_policy": TextBase64DecodePolicy(),
    }
    if settings.storage_connection_string:
        return QueueClient.from_connection_string(settings.storage_connection_string, name, **policies)
    return QueueClient(_queue_endpoint(settings), name, credential=_default_credential(), **policies)
