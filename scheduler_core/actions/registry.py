"""Every action sender, built from the settings: the runner the executor uses.

Managed identity: a Storage queue action without ``sasToken`` or a Service Bus action without ``sasKey``
uses ``credential`` (by default ``DefaultAzureCredential``, created on first need, which picks up the
function app's managed identity in Azure; set ``AZURE_CLIENT_ID`` for a user-assigned one). Roles to grant
that identity: *Storage Queue Data Message Sender* on the target queues (or their accounts) and *Azure
Service Bus Data Sender* on the target queues and topics (or their namespaces).
"""

from __future__ import annotations

from azure.core.credentials import TokenCredential

from scheduler_core.actions.base import ActionRunner
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.http_auth import OAuthTokens
from scheduler_core.actions.outbound import OutboundPolicy, Resolver, system_resolver
from scheduler_core.actions.service_bus import ServiceBusSender
from scheduler_core.actions.storage_queue import StorageQueueSender
from scheduler_core.adapters.azure.credentials import LazyCredential
from scheduler_core.model.actions import HttpAction, ServiceBusQueueAction, ServiceBusTopicAction, StorageQueueAction
from scheduler_core.settings import Settings


def default_runner(
    config: Settings, credential: TokenCredential | None = None, resolver: Resolver = system_resolver
) -> ActionRunner:
    """The runner for every action class: Http/Https (with Basic, ClientCertificate, ActiveDirectoryOAuth),
    StorageQueue, ServiceBusQueue and ServiceBusTopic. ``credential`` is the app's identity for actions
    without a key, ``resolver`` turns host names into addresses for the outbound policy (seams for tests).
    Every HTTP connection (the action's, each redirect hop's, the OAuth authority's) is checked by one
    :class:`OutboundPolicy` (``SCHEDULER_ALLOW_METADATA_ENDPOINTS`` turns its refusals off)."""
    identity = LazyCredential(credential=credential).get
    timeout = float(config.http_timeout_seconds)
    policy = OutboundPolicy(allow_metadata_endpoints=config.allow_metadata_endpoints, resolver=resolver)
    http = HttpSender(
        policy=policy,
        timeout=timeout,
        oauth=OAuthTokens(authority_host=config.entra_authority_host, policy=policy),
    )
    storage = StorageQueueSender(
        endpoint=config.storage_queue_endpoint,
        credential_factory=identity,
        message_format=config.storage_queue_message_format,
        timeout=timeout,
        identity_hosts=config.identity_allowed_hosts,
    )
    service_bus = ServiceBusSender(
        endpoint=config.service_bus_endpoint,
        credential_factory=identity,
        idle_seconds=float(config.service_bus_idle_seconds),
        timeout=timeout,
        identity_hosts=config.identity_allowed_hosts,
    )
    return (
        ActionRunner()
        .register(HttpAction, http)
        .register(StorageQueueAction, storage)
        .register(ServiceBusQueueAction, service_bus)
        .register(ServiceBusTopicAction, service_bus)
    )
