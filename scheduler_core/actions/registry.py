"""Every action sender, built from the settings: the runner the executor uses.

Managed identity: a Storage queue action without ``sasToken`` or a Service Bus action without ``sasKey``
uses ``credential`` (by default ``DefaultAzureCredential``, created on first need, which picks up the
function app's managed identity in Azure; set ``AZURE_CLIENT_ID`` for a user-assigned one). Roles to grant
that identity: *Storage Queue Data Message Sender* on the target queues (or their accounts) and *Azure
Service Bus Data Sender* on the target queues and topics (or their namespaces). An HTTP action with
``ManagedServiceIdentity`` authentication gets the app's tokens from the platform's identity endpoint
(``IDENTITY_ENDPOINT``, :mod:`scheduler_core.actions.managed_identity`), which every action is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from azure.core.credentials import TokenCredential

from scheduler_core import settings
from scheduler_core.actions.base import ActionRunner
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.http_auth import OAuthTokens
from scheduler_core.actions.managed_identity import IdentityEndpoint, ManagedIdentityTokens, reserved_endpoints
from scheduler_core.actions.outbound import OutboundPolicy, Resolver, system_resolver
from scheduler_core.actions.service_bus import ServiceBusSender
from scheduler_core.actions.storage_queue import StorageQueueSender
from scheduler_core.adapters.azure.credentials import LazyCredential
from scheduler_core.model.actions import HttpAction, ServiceBusQueueAction, ServiceBusTopicAction, StorageQueueAction
from scheduler_core.settings import Settings


def default_runner(
    config: Settings,
    credential: TokenCredential | None = None,
    resolver: Resolver = system_resolver,
    environ: Mapping[str, str] | None = None,
) -> ActionRunner:
    """The runner for every action class: Http/Https (with Basic, ClientCertificate, ActiveDirectoryOAuth,
    ManagedServiceIdentity; signed or not), StorageQueue, ServiceBusQueue and ServiceBusTopic.
    ``credential`` is the app's identity for actions without a key and for ManagedServiceIdentity (None: the
    platform's), ``resolver`` turns host names into addresses for the outbound policy, ``environ`` is where
    the platform names its identity endpoint (``os.environ`` by default; seams for tests). Every HTTP
    connection (the action's, each redirect hop's, the OAuth authority's) is checked by one
    :class:`OutboundPolicy` (``SCHEDULER_ALLOW_METADATA_ENDPOINTS`` turns its refusals off), which refuses the
    identity endpoint too."""
    environment = settings.identity_environment() if environ is None else environ
    identity = LazyCredential(credential=credential).get
    timeout = float(config.http_timeout_seconds)
    endpoint = IdentityEndpoint.from_environ(environment)
    policy = OutboundPolicy(
        allow_metadata_endpoints=config.allow_metadata_endpoints,
        resolver=resolver,
        reserved=reserved_endpoints(endpoint, resolver),
    )
    http = HttpSender(
        policy=policy,
        timeout=timeout,
        oauth=OAuthTokens(authority_host=config.entra_authority_host, policy=policy),
        identity=ManagedIdentityTokens(
            endpoint,
            credential=credential,
            client_id=environment.get("AZURE_CLIENT_ID"),
            allowed_hosts=config.identity_allowed_hosts,
        ),
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
