"""Every setting the service reads, in one place.

Settings come from the process environment: Azure Functions turns app settings into environment
variables, and both Core Tools and the project's local host load ``local.settings.json`` ``Values`` into
the environment. Code never reads ``os.environ`` for a setting anywhere else; it calls :func:`load` (or
:func:`raw` for a setting that is only a binding reference). A test checks that every name declared here is
listed in ``local.settings.sample.json`` and that no other module reads the environment directly.
"""

from __future__ import annotations

import logging
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from scheduler_core.errors import ConfigurationError


@dataclass(frozen=True)
class SettingSpec:
    """A documented setting: its name, default (``None`` = no default) and what it is for."""

    name: str
    default: str | None
    doc: str


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "AzureWebJobsStorage",
        None,
        "Storage account of the function app and of the scheduler's tables and queues: a connection "
        "string (Azurite locally). In Azure, use identity-based AzureWebJobsStorage__accountName instead.",
    ),
    SettingSpec(
        "AzureWebJobsStorage__accountName",
        "",
        "Storage account name for identity-based connections (managed identity, no keys). Used when "
        "AzureWebJobsStorage is not set.",
    ),
    SettingSpec(
        "SchedulerHistoryStorage",
        "",
        "Connection string of a storage account of its own for the history tables (Executions: the "
        "attempts' claims with their history entries; JobHistory). Empty, with "
        "SchedulerHistoryStorage__tableServiceUri empty too: they live in AzureWebJobsStorage's account. A "
        "second account carries about a third of the requests per fire (docs/capacity.md). Set it before "
        "the first job fires: the rows already written stay in the account they were written to.",
    ),
    SettingSpec(
        "SchedulerHistoryStorage__tableServiceUri",
        "",
        "Identity-based form of SchedulerHistoryStorage (the app's managed identity, no keys): the table "
        "endpoint of the history tables' account, https://<account>.table.core.windows.net. Used when "
        "SchedulerHistoryStorage is not set.",
    ),
    SettingSpec(
        "SchedulerExecutionStorage",
        "",
        "Connection string of a storage account of its own for the execution queues (all K, with their "
        "poison queues). Empty, with SchedulerExecutionStorage__queueServiceUri empty too: they live in "
        "AzureWebJobsStorage's account. When set, the execution functions' queue triggers use the "
        "connection 'SchedulerExecutionStorage' (read when the app is indexed: a change restarts the app). "
        "Messages waiting in the queues of the previous account are not moved.",
    ),
    SettingSpec(
        "SchedulerExecutionStorage__queueServiceUri",
        "",
        "Identity-based form of SchedulerExecutionStorage: the queue endpoint of the execution queues' "
        "account, https://<account>.queue.core.windows.net (the form the Functions host reads for the "
        "queue triggers' connection). Used when SchedulerExecutionStorage is not set.",
    ),
    SettingSpec(
        "SchedulerHistoryStream",
        "",
        "Connection string of the storage account of the history stream's queue: every history record is "
        "also sent there as it is written, at least once, with an id a consumer keeps it once by "
        "(docs/operations.md, History stream). Empty, with SchedulerHistoryStream__queueServiceUri empty "
        "too: no stream. The queue (SCHEDULER_HISTORY_STREAM_QUEUE) must exist.",
    ),
    SettingSpec(
        "SchedulerHistoryStream__queueServiceUri",
        "",
        "Identity-based form of SchedulerHistoryStream: the queue endpoint of the stream's account, "
        "https://<account>.queue.core.windows.net; the app's identity needs Storage Queue Data Message Sender "
        "on the queue. Used when SchedulerHistoryStream is not set.",
    ),
    SettingSpec(
        "SCHEDULER_HISTORY_STREAM_QUEUE",
        "scheduler-history",
        "The history stream's queue in SchedulerHistoryStream's account (a Storage queue name).",
    ),
    SettingSpec(
        "SchedulerWitness",
        "",
        "Connection string of the storage account holding the regions' witness, a blob lease whose holder is the "
        "active region (docs/regions.md): an account in a third region. Empty, with "
        "SchedulerWitness__blobServiceUri empty too: no witness, and the app is active alone.",
    ),
    SettingSpec(
        "SchedulerWitness__blobServiceUri",
        "",
        "Identity-based form of SchedulerWitness: the blob endpoint of the witness's account, "
        "https://<account>.blob.core.windows.net; the app's identity needs Storage Blob Data Contributor on the "
        "witness's container. Used when SchedulerWitness is not set.",
    ),
    SettingSpec(
        "SCHEDULER_REGION_NAME",
        "",
        "This deployment's region as the witness names it (lower-case letters, digits and hyphens, at most 40; "
        "the Azure region's name, e.g. westeurope). Required when a witness is set.",
    ),
    SettingSpec(
        "SCHEDULER_WITNESS_BLOB",
        "scheduler-witness/active",
        "The witness's blob, <container>/<name>, in SchedulerWitness's account (the container is created when "
        "missing).",
    ),
    SettingSpec(
        "SCHEDULER_REGION_PRIMARY",
        "",
        "The preferred region's name (the same in both regions' settings): while the other region is active and "
        "this one's copy has been current for SCHEDULER_REGION_HANDBACK_SECONDS, the other hands the lease back. "
        "Empty: no preference, no automatic hand-back.",
    ),
    SettingSpec(
        "SCHEDULER_REGION_HANDBACK_SECONDS",
        "600",
        "How long the primary region's copy must be current before the other region hands the lease back to it "
        "(0 to 86400; 0: never automatically, an operator runs 'region demote' and 'region promote').",
    ),
    SettingSpec(
        "SchedulerPeer",
        "",
        "Connection string of the other region's storage account (docs/regions.md): while this region is the "
        "standby it copies the other's job collections and jobs from there every 10 s. Empty, with "
        "SchedulerPeer__tableServiceUri empty too: nothing is copied. Only with a witness.",
    ),
    SettingSpec(
        "SchedulerPeer__tableServiceUri",
        "",
        "Identity-based form of SchedulerPeer: the table endpoint of the other region's account, "
        "https://<account>.table.core.windows.net; the app's identity needs Storage Table Data Contributor there. "
        "Used when SchedulerPeer is not set.",
    ),
    SettingSpec(
        "FUNCTIONS_WORKER_RUNTIME",
        "python",
        "Azure Functions language worker; always 'python'. Read by the Functions host, not by this code.",
    ),
    SettingSpec(
        "SCHEDULER_API_KEYS",
        "",
        "Management API keys, stored as hashes: entries separated by ';', each "
        "'sha256:<hex digest of the key>' optionally followed by '@sub1,sub2' (subscription ids the key "
        "may use; no suffix or '@*' = all). Create one with 'python -m local_host keygen'.",
    ),
    SettingSpec(
        "SCHEDULER_TABLE_PREFIX",
        "",
        "Prefix of every table name (letters and digits), so that several deployments or test runs can "
        "share one storage account.",
    ),
    SettingSpec(
        "SCHEDULER_SCAN_QUEUE",
        "scheduler-scan",
        "Queue of due-index scan requests (one message per shard per tick). Referenced by the scan "
        "worker's trigger as %SCHEDULER_SCAN_QUEUE%.",
    ),
    SettingSpec(
        "SCHEDULER_EXECUTION_QUEUE",
        "scheduler-executions",
        "Queue of execution attempts. Referenced by the executor's trigger as %SCHEDULER_EXECUTION_QUEUE%.",
    ),
    SettingSpec(
        "SCHEDULER_EXECUTION_QUEUE_COUNT",
        "1",
        "Number of execution queues K (1 to 32), each consumed by a queue-triggered function of its own, so "
        "that the Functions scale controller scales them independently and no single queue's 2,000 "
        "messages/s caps the deployment. Queue 0 is SCHEDULER_EXECUTION_QUEUE (function execute_occurrence); "
        "queue i is SCHEDULER_EXECUTION_QUEUE-i (function execute_occurrence_i, trigger "
        "%SCHEDULER_EXECUTION_QUEUE%-i). A job's attempts (first tries, retries, error actions, runs on "
        "demand) always go to the queue of a stable hash of the job. Read when the app is indexed: a change "
        "restarts the app. Raise it freely; lowering it strands what waits in the queues that go away "
        "(docs/deploy.md §12).",
    ),
    SettingSpec(
        "SCHEDULER_DISPATCH_SCHEDULE",
        "45 * * * * *",
        "NCRONTAB schedule (6 fields, seconds first) of the dispatch timer. Referenced by the timer "
        "trigger as %SCHEDULER_DISPATCH_SCHEDULE%. It ticks at second 45, so that a scan has finished "
        "well before the occurrences at the start of the next minute.",
    ),
    SettingSpec(
        "SCHEDULER_CLEANUP_SCHEDULE",
        "0 30 3 * * *",
        "NCRONTAB schedule of the daily history and finished-job cleanup timer (%SCHEDULER_CLEANUP_SCHEDULE%).",
    ),
    SettingSpec(
        "SCHEDULER_CLEANUP_QUEUE",
        "scheduler-cleanup",
        "Queue of the daily cleanup's work: the timer sends one message per subscription, a subscription's "
        "message one per collection, and a collection's message cleans its jobs (handing any rest on), so "
        "the cleanup runs in parallel on as many instances as the queue needs. Referenced by the trigger of "
        "function cleanup_collections as %SCHEDULER_CLEANUP_QUEUE%. Its own queue, so that the cleanup never "
        "delays the dispatch scans.",
    ),
    SettingSpec(
        "SCHEDULER_DUE_SHARDS",
        "16",
        "Number of due-index shards (partitions), each scanned by a scan of its own every minute. A live "
        "deployment may change it: an entry stays in the shard it was written to, new and edited jobs go to "
        "the shards of the new count, and the tick scans the most shards it has ever scanned when that is "
        "more (so lowering it loses nothing, but scans no fewer shards: the entries of the shards above it "
        "stay there).",
    ),
    SettingSpec(
        "SCHEDULER_HTTP_TIMEOUT_SECONDS",
        "60",
        "Timeout of an HTTP action (Azure Scheduler's was 60 s). A slow target should answer 202 at once.",
    ),
    SettingSpec(
        "SCHEDULER_ALLOW_METADATA_ENDPOINTS",
        "false",
        "Set to 'true' to let actions call cloud metadata and link-local addresses (169.254.0.0/16 etc.), "
        "which are refused by default because they hand out the app's own identity tokens.",
    ),
    SettingSpec(
        "SCHEDULER_STORAGE_QUEUE_ENDPOINT",
        "core.windows.net",
        "Where Storage queue actions send: a DNS suffix (core.windows.net; core.chinacloudapi.cn, "
        "core.usgovcloudapi.net for sovereign clouds) giving https://{account}.queue.{suffix}, or a URL with "
        "{account} (http://127.0.0.1:10001/{account} for Azurite).",
    ),
    SettingSpec(
        "SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT",
        "envelope",
        "How Storage queue actions write the message: 'envelope' (Azure Scheduler's StorageQueueMessage XML, "
        "base64, as the original service sent it), 'base64' (the message text, base64) or 'text' (as is).",
    ),
    SettingSpec(
        "SCHEDULER_SERVICE_BUS_ENDPOINT",
        "servicebus.windows.net",
        "Where Service Bus actions send: a DNS suffix (servicebus.windows.net; servicebus.chinacloudapi.cn, "
        "servicebus.usgovcloudapi.net) giving {namespace}.{suffix} over AMQP/TLS, or a URL with {namespace}; "
        "the scheme amqp:// with a port (amqp://127.0.0.1:5672) turns TLS off for the emulator and tests.",
    ),
    SettingSpec(
        "SCHEDULER_IDENTITY_ALLOWED_HOSTS",
        "",
        "Storage queue actions without a sasToken and Service Bus actions without a sasKey authenticate as "
        "the function app (its managed identity), whose token is presented only to hosts under the two "
        "endpoint settings above (their DNS suffix, or the host of a URL template). This setting lists more "
        "hosts, separated by ';' or ',': a name matches itself and every host under it (servicebus.usgovcloudapi.net, "
        "privatelink.example.com), an IP address only itself (127.0.0.1 for a local emulator). Empty by default; "
        "a job naming any other host with the app's identity is refused (400) and never sent.",
    ),
    SettingSpec(
        "SCHEDULER_SERVICE_BUS_IDLE_SECONDS",
        "300",
        "Service Bus senders are reused per namespace and entity, and closed after this many seconds unused.",
    ),
    SettingSpec(
        "SCHEDULER_ENTRA_AUTHORITY_HOST",
        "https://login.microsoftonline.com",
        "Entra ID authority of ActiveDirectoryOAuth HTTP authentication (https://login.chinacloudapi.cn, "
        "https://login.microsoftonline.us for sovereign clouds).",
    ),
    SettingSpec(
        "PYTHON_THREADPOOL_THREAD_COUNT",
        "40",
        "Threads of the Python worker that run the app's (sync) function invocations on one instance; read "
        "by the Python worker, and by the local host for its queue functions. 40 = host.json's queues "
        "batchSize (16) + newBatchThreshold (24): the executions the host hands one instance at once, each "
        "mostly waiting on storage or its HTTP target. The Bicep sets the same (pythonThreadpoolThreadCount); "
        "unset, the worker sizes its pool by the instance's CPUs (docs/deploy.md).",
    ),
    SettingSpec(
        "SCHEDULER_ENTRA_TENANT_ID",
        "",
        "Microsoft Entra ID tenant (its id, or a verified domain) whose access tokens the management API accepts "
        "(Authorization: Bearer <token>), checked against the tenant's OpenID configuration and signing keys at "
        "SCHEDULER_ENTRA_AUTHORITY_HOST. Empty: tokens are not accepted, API keys only (docs/security.md).",
    ),
    SettingSpec(
        "SCHEDULER_ENTRA_AUDIENCES",
        "",
        "Token audiences the management API accepts, separated by ';': the API app registration's Application "
        "ID URI (api://..., in v1.0 tokens) and its client id (in v2.0 tokens). Required with "
        "SCHEDULER_ENTRA_TENANT_ID.",
    ),
    SettingSpec(
        "SCHEDULER_ROLE_ASSIGNMENTS",
        "",
        "Roles of Entra ID principals per subscription, besides the app roles Scheduler.Reader and "
        "Scheduler.Contributor in their tokens (which hold on every subscription): entries separated by ';', each "
        "'<reader|contributor>:<oid|group|approle>:<value>[@sub1,sub2]' (oid and group: object ids; no suffix or "
        "'@*' = every subscription).",
    ),
    SettingSpec(
        "SCHEDULER_LOOKAHEAD_SECONDS",
        "75",
        "How far ahead of now a shard scan enqueues executions (they become visible just before their due "
        "second). Keep it longer than the dispatch timer's period (60 s) plus a scan's duration.",
    ),
)

#: Observability settings: optional, empty by default, and not set by the Bicep as scheduler settings (the
#: platform sets APPLICATIONINSIGHTS_CONNECTION_STRING itself; docs/operations.md).
TELEMETRY_SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
        "",
        "Application Insights connection string: when set, metrics (and the scheduler's log fields) are "
        "exported to Azure Monitor. Set by the platform in Azure (infra/modules/appsettings.bicep).",
    ),
    SettingSpec(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "",
        "OTLP/HTTP collector base URL (http://127.0.0.1:4318): when set and no Application Insights "
        "connection string is, metrics are exported over OTLP (optional packages opentelemetry-sdk and "
        "opentelemetry-exporter-otlp-proto-http).",
    ),
    SettingSpec(
        "SCHEDULER_LOG_LEVEL",
        "",
        "The least level of the scheduler's own log lines (loggers scheduler_core.*): DEBUG (also every empty "
        "scan), INFO (one line per attempt; the default when empty), WARNING or ERROR. Under the local host it is "
        "also its console's level (`--log-level` wins); the host's invocation lines follow host.json's "
        "logging.logLevel.",
    ),
    SettingSpec(
        "SCHEDULER_LOG_FORMAT",
        "text",
        "The local host's console: 'text' (one line per record) or 'json' (one JSON object per line with "
        "every scheduler_* field).",
    ),
)

_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in (*SETTINGS, *TELEMETRY_SETTINGS)}


#: What the platform (App Service, Functions) sets for the app's managed identity, never the app: the HTTP
#: sender's ManagedServiceIdentity authentication asks this endpoint for tokens.
IDENTITY_ENVIRONMENT = ("IDENTITY_ENDPOINT", "IDENTITY_HEADER")


#: What the platform sets to the app's host name (``myapp.azurewebsites.net``; Core Tools and the local host:
#: ``localhost:<port>``), never the app: the host of the links notifications carry (``@{historyUrl}``).
PLATFORM_HOST_NAME = "WEBSITE_HOSTNAME"


def platform_host_name(environ: Mapping[str, str] | None = None) -> str:
    """The app's host name as the platform sets it (:data:`PLATFORM_HOST_NAME`; "" when it does not)."""
    env = os.environ if environ is None else environ
    return (env.get(PLATFORM_HOST_NAME) or "").strip()


def identity_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The platform's managed identity variables that are set (:data:`IDENTITY_ENVIRONMENT`)."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in IDENTITY_ENVIRONMENT if env.get(name)}


def raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of a declared setting, its default when unset, or ``None`` when it has neither."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise ConfigurationError(f"setting {name!r} is not declared in scheduler_core.settings")
    env = os.environ if environ is None else environ
    value = env.get(name)
    return value if value else spec.default


def _int(name: str, environ: Mapping[str, str] | None, minimum: int, maximum: int) -> int:
    text = raw(name, environ) or ""
    try:
        value = int(text)
    except ValueError:
        raise ConfigurationError(f"setting {name} must be an integer, got {text!r}") from None
    if not minimum <= value <= maximum:
        raise ConfigurationError(f"setting {name} must be between {minimum} and {maximum}, got {value}")
    return value


def _bool(name: str, environ: Mapping[str, str] | None) -> bool:
    text = (raw(name, environ) or "").strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", ""):
        return False
    raise ConfigurationError(f"setting {name} must be true or false, got {text!r}")


def _choice(name: str, choices: tuple[str, ...], environ: Mapping[str, str] | None) -> str:
    text = (raw(name, environ) or "").strip().lower()
    if text not in choices:
        raise ConfigurationError(f"setting {name} must be one of {', '.join(choices)}, got {text!r}")
    return text


def _endpoint(name: str, placeholder: str, environ: Mapping[str, str] | None) -> str:
    """A DNS suffix, or a URL (usually containing ``placeholder``; without it, one endpoint for all)."""
    text = (raw(name, environ) or "").strip()
    if "://" in text and not text.split("://", 1)[1].strip("/"):
        raise ConfigurationError(
            f"setting {name} must be a DNS suffix or a URL with a host ({placeholder}), got {text!r}"
        )
    if not text or any(c.isspace() for c in text):
        raise ConfigurationError(f"setting {name} must be a DNS suffix or a URL, got {text!r}")
    return text


_HOST = re.compile(r"(?:\*\.)?[A-Za-z0-9._-]+\.?|\[?[0-9A-Fa-f:.]+\]?")


def _host_list(name: str, environ: Mapping[str, str] | None) -> tuple[str, ...]:
    """Host names, DNS suffixes or IP addresses separated by ';', ',' or spaces (may be empty)."""
    text = raw(name, environ) or ""
    entries = tuple(item for item in re.split(r"[;,\s]+", text) if item)
    for item in entries:
        if not _HOST.fullmatch(item) or not item.strip("*.[]:"):
            raise ConfigurationError(
                f"setting {name} must list host names, DNS suffixes or IP addresses separated by ';', got {item!r}"
            )
    return entries


def _https_url(name: str, environ: Mapping[str, str] | None) -> str:
    text = (raw(name, environ) or "").strip().rstrip("/")
    if not text.startswith("https://") or len(text) <= len("https://"):
        raise ConfigurationError(f"setting {name} must be an https URL, got {text!r}")
    return text


#: The storage connection every part of the app's storage uses unless a part has an account of its own.
HOST_CONNECTION = "AzureWebJobsStorage"
#: The connection of the history tables' own account (``SchedulerHistoryStorage``).
HISTORY_CONNECTION = "SchedulerHistoryStorage"
#: The connection of the account of the history stream's queue (``SchedulerHistoryStream``): every history
#: record is sent there when it is set (:mod:`scheduler_core.pipeline.stream`).
HISTORY_STREAM_CONNECTION = "SchedulerHistoryStream"
#: The connection of the execution queues' own account (``SchedulerExecutionStorage``): the ``connection``
#: of the execution functions' queue triggers when it is set.
EXECUTION_CONNECTION = "SchedulerExecutionStorage"
#: The connection of the regions' witness's account (``SchedulerWitness``): no witness when it is not set.
WITNESS_CONNECTION = "SchedulerWitness"
#: The connection of the other region's storage account (``SchedulerPeer``): nothing is copied when it is not set.
PEER_CONNECTION = "SchedulerPeer"


@dataclass(frozen=True)
class StorageAccount:
    """A storage account the app keeps one part of its storage in, other than AzureWebJobsStorage's: a
    connection string (keys; Azurite locally), or the endpoint of the one service used there (tables or
    queues), reached with the app's identity."""

    connection_string: str | None = field(repr=False)  # it may hold a key: never printed
    endpoint: str = ""


def _storage_account(connection: str, service: str, environ: Mapping[str, str] | None) -> StorageAccount | None:
    """The account of connection ``connection`` (``<connection>`` or ``<connection>__<service>ServiceUri``);
    None when neither is set (the part stays in AzureWebJobsStorage's account). A value is never repeated in
    an error (a connection string holds a key, and one may be pasted into the endpoint's setting)."""
    text = raw(connection, environ) or ""
    if text:
        if text != text.strip() or "=" not in text:
            raise ConfigurationError(
                f"setting {connection} must be a storage connection string (AccountName=...;AccountKey=... or "
                "UseDevelopmentStorage=true) without spaces around it, as the Functions host reads it "
                "(the value is not repeated here)"
            )
        return StorageAccount(text)
    name = f"{connection}__{service}ServiceUri"
    endpoint = raw(name, environ) or ""
    if not endpoint:
        return None
    parsed = urllib.parse.urlsplit(endpoint.rstrip("/"))
    if (
        endpoint != endpoint.strip()
        or parsed.scheme != "https"
        or not parsed.hostname
        or parsed.path
        or parsed.query
        or parsed.username
    ):
        raise ConfigurationError(
            f"setting {name} must be the account's {service} endpoint, https://<account>.{service}.core.windows.net "
            "(https, a host and nothing else, no spaces around it; the value is not repeated here)"
        )
    return StorageAccount(None, endpoint.rstrip("/"))


def execution_connection(environ: Mapping[str, str] | None = None) -> str:
    """The storage connection of the execution queues: ``SchedulerExecutionStorage`` when either of its
    settings is set, else ``AzureWebJobsStorage`` (the execution functions' trigger ``connection``, read when
    the app is indexed)."""
    names = (EXECUTION_CONNECTION, f"{EXECUTION_CONNECTION}__queueServiceUri")
    return EXECUTION_CONNECTION if any(raw(name, environ) for name in names) else HOST_CONNECTION


#: The most execution queues a deployment may have (``SCHEDULER_EXECUTION_QUEUE_COUNT``): one storage account
#: serves about 20,000 operations/s, which a handful of queues at 2,000 messages/s each already reach
#: (docs/capacity.md); more only adds functions to index and queues to poll.
MAX_EXECUTION_QUEUES = 32
#: Azure Storage queue names: 3-63 lowercase letters, digits and single hyphens, starting and ending with a
#: letter or digit.
_QUEUE_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$")
#: What the host appends to a queue's name for its poison queue.
_POISON_SUFFIX = "-poison"


def execution_queue_name(base: str, index: int) -> str:
    """The name of execution queue ``index``: ``base`` for queue 0 (today's single queue, so an existing
    deployment keeps its queue), ``base-<index>`` for the others (``scheduler-executions-2``)."""
    return base if index == 0 else f"{base}-{index}"


def execution_queue_binding(index: int) -> str:
    """The queue-trigger binding of execution queue ``index``: ``%SCHEDULER_EXECUTION_QUEUE%`` for queue 0,
    ``%SCHEDULER_EXECUTION_QUEUE%-<index>`` for the others (the Functions host resolves every ``%NAME%``
    inside a binding value, as :func:`execution_queue_name` builds the name)."""
    return execution_queue_name("%SCHEDULER_EXECUTION_QUEUE%", index)


def execution_queue_count(environ: Mapping[str, str] | None = None) -> int:
    """``SCHEDULER_EXECUTION_QUEUE_COUNT``, checked (raises :class:`ConfigurationError` naming it)."""
    return _int("SCHEDULER_EXECUTION_QUEUE_COUNT", environ, 1, MAX_EXECUTION_QUEUES)


def _queue_names(environ: Mapping[str, str] | None) -> tuple[str, str, int, str]:
    """The scan queue, the execution queue's base name, the number of execution queues and the cleanup
    queue, every name (poison queues included) checked against the Storage rules."""
    scan = raw("SCHEDULER_SCAN_QUEUE", environ) or "scheduler-scan"
    base = raw("SCHEDULER_EXECUTION_QUEUE", environ) or "scheduler-executions"
    cleanup = raw("SCHEDULER_CLEANUP_QUEUE", environ) or "scheduler-cleanup"
    count = execution_queue_count(environ)
    checks = [("SCHEDULER_SCAN_QUEUE", scan), ("SCHEDULER_EXECUTION_QUEUE", base)]
    checks += [("SCHEDULER_EXECUTION_QUEUE", execution_queue_name(base, count - 1))]
    checks += [("SCHEDULER_CLEANUP_QUEUE", cleanup)]
    for name, queue in checks:
        if not _QUEUE_NAME.match(queue + _POISON_SUFFIX) or not _QUEUE_NAME.match(queue):
            raise ConfigurationError(
                f"setting {name} must be a Storage queue name (lowercase letters, digits and single hyphens) "
                f"short enough for its '-<n>' and '{_POISON_SUFFIX}' suffixes (63 characters), got {queue!r}"
            )
    distinct = {scan, cleanup, *(execution_queue_name(base, i) for i in range(count))}
    if len(distinct) != count + 2:
        raise ConfigurationError(
            "settings SCHEDULER_SCAN_QUEUE, SCHEDULER_EXECUTION_QUEUE (with its '-<n>' queues) and "
            "SCHEDULER_CLEANUP_QUEUE must name different queues"
        )
    return scan, base, count, cleanup


@dataclass(frozen=True)
class Settings:
    """The parsed settings the service runs with."""

    storage_connection_string: str | None
    storage_account_name: str
    api_keys: str
    table_prefix: str
    scan_queue: str
    execution_queue: str
    due_shards: int
    lookahead_seconds: int
    http_timeout_seconds: int = 60
    allow_metadata_endpoints: bool = False
    storage_queue_endpoint: str = "core.windows.net"
    storage_queue_message_format: str = "envelope"
    service_bus_endpoint: str = "servicebus.windows.net"
    service_bus_idle_seconds: int = 300
    entra_authority_host: str = "https://login.microsoftonline.com"
    entra_tenant_id: str = ""
    entra_audiences: str = ""
    role_assignments: str = ""
    identity_allowed_hosts: tuple[str, ...] = ()
    appinsights_connection_string: str = ""
    otlp_endpoint: str = ""
    log_format: str = "text"
    #: ``SCHEDULER_LOG_LEVEL`` as a ``logging`` level (None: not set, INFO).
    log_level: int | None = None
    execution_queue_count: int = 1
    python_threadpool_thread_count: int = 40
    cleanup_queue: str = "scheduler-cleanup"
    #: The app's host name as the platform sets it (:func:`platform_host_name`; "" when unknown).
    app_host_name: str = ""
    #: The history tables' own account (``SchedulerHistoryStorage``); None: AzureWebJobsStorage's.
    history_storage: StorageAccount | None = None
    #: The execution queues' own account (``SchedulerExecutionStorage``); None: AzureWebJobsStorage's.
    execution_storage: StorageAccount | None = None
    #: The account of the queue every history record is streamed to (``SchedulerHistoryStream``, a connection
    #: string, or ``SchedulerHistoryStream__queueServiceUri`` with the app's identity); None: no stream.
    history_stream: StorageAccount | None = None
    #: The history stream's queue in that account (``SCHEDULER_HISTORY_STREAM_QUEUE``).
    history_stream_queue: str = "scheduler-history"
    #: The account of the regions' witness (``SchedulerWitness``, or ``SchedulerWitness__blobServiceUri`` with
    #: the app's identity); None: no witness, the app is active alone.
    witness: StorageAccount | None = None
    #: This deployment's region as the witness names it (``SCHEDULER_REGION_NAME``; set with a witness).
    region_name: str = ""
    #: The witness's container and blob (``SCHEDULER_WITNESS_BLOB``).
    witness_blob: tuple[str, str] = ("scheduler-witness", "active")
    #: The preferred region (``SCHEDULER_REGION_PRIMARY``; empty: none).
    primary_region: str = ""
    #: How long the primary's copy must be current before the lease is handed back to it (None: only by an
    #: operator; ``SCHEDULER_REGION_HANDBACK_SECONDS``).
    handback_after: timedelta | None = timedelta(minutes=10)
    #: The other region's storage account (``SchedulerPeer``, or ``SchedulerPeer__tableServiceUri`` with the
    #: app's identity): the standby copies its catalog from there; None: nothing is copied.
    peer: StorageAccount | None = None

    @property
    def execution_queues(self) -> tuple[str, ...]:
        """Every execution queue, queue 0 (``execution_queue``) first (``SCHEDULER_EXECUTION_QUEUE_COUNT``)."""
        return tuple(execution_queue_name(self.execution_queue, i) for i in range(self.execution_queue_count))

    def table_name(self, base: str) -> str:
        """The real name of one of the service's tables (``base`` is e.g. ``"Jobs"``)."""
        return f"{self.table_prefix}{base}"


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and check every setting. Raises :class:`ConfigurationError` naming the bad setting."""
    prefix = raw("SCHEDULER_TABLE_PREFIX", environ) or ""
    if prefix and not (prefix.isascii() and prefix.isalnum() and prefix[0].isalpha()):
        raise ConfigurationError("setting SCHEDULER_TABLE_PREFIX must be letters and digits, starting with a letter")
    connection = raw("AzureWebJobsStorage", environ)
    account = raw("AzureWebJobsStorage__accountName", environ) or ""
    if not connection and not account:
        raise ConfigurationError("set AzureWebJobsStorage (connection string) or AzureWebJobsStorage__accountName")
    scan_queue, execution_queue, queue_count, cleanup_queue = _queue_names(environ)
    return Settings(
        storage_connection_string=connection or None,
        storage_account_name=account,
        api_keys=raw("SCHEDULER_API_KEYS", environ) or "",
        table_prefix=prefix,
        scan_queue=scan_queue,
        execution_queue=execution_queue,
        execution_queue_count=queue_count,
        cleanup_queue=cleanup_queue,
        python_threadpool_thread_count=_int("PYTHON_THREADPOOL_THREAD_COUNT", environ, 1, 1024),
        due_shards=_int("SCHEDULER_DUE_SHARDS", environ, 1, 1000),
        lookahead_seconds=_int("SCHEDULER_LOOKAHEAD_SECONDS", environ, 5, 300),
        http_timeout_seconds=_int("SCHEDULER_HTTP_TIMEOUT_SECONDS", environ, 1, 600),
        allow_metadata_endpoints=_bool("SCHEDULER_ALLOW_METADATA_ENDPOINTS", environ),
        storage_queue_endpoint=_endpoint("SCHEDULER_STORAGE_QUEUE_ENDPOINT", "{account}", environ),
        storage_queue_message_format=_choice(
            "SCHEDULER_STORAGE_QUEUE_MESSAGE_FORMAT", ("envelope", "base64", "text"), environ
        ),
        service_bus_endpoint=_endpoint("SCHEDULER_SERVICE_BUS_ENDPOINT", "{namespace}", environ),
        service_bus_idle_seconds=_int("SCHEDULER_SERVICE_BUS_IDLE_SECONDS", environ, 1, 86400),
        entra_authority_host=_https_url("SCHEDULER_ENTRA_AUTHORITY_HOST", environ),
        entra_tenant_id=(raw("SCHEDULER_ENTRA_TENANT_ID", environ) or "").strip(),
        entra_audiences=raw("SCHEDULER_ENTRA_AUDIENCES", environ) or "",
        role_assignments=raw("SCHEDULER_ROLE_ASSIGNMENTS", environ) or "",
        identity_allowed_hosts=_host_list("SCHEDULER_IDENTITY_ALLOWED_HOSTS", environ),
        appinsights_connection_string=(raw("APPLICATIONINSIGHTS_CONNECTION_STRING", environ) or "").strip(),
        otlp_endpoint=(raw("OTEL_EXPORTER_OTLP_ENDPOINT", environ) or "").strip(),
        log_format=log_format(environ),
        log_level=log_level(environ),
        app_host_name=platform_host_name(environ),
        history_storage=_storage_account(HISTORY_CONNECTION, "table", environ),
        execution_storage=_storage_account(EXECUTION_CONNECTION, "queue", environ),
        history_stream=_storage_account(HISTORY_STREAM_CONNECTION, "queue", environ),
        history_stream_queue=_stream_queue(environ),
        **region_settings(environ),
    )


#: A region's name as the witness records it.
_REGION = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$")
#: A blob container's name.
_CONTAINER = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$")


def region_settings(environ: Mapping[str, str] | None = None, *, require_region: bool = True) -> dict[str, Any]:
    """``witness``, ``region_name``, ``witness_blob`` and ``peer`` (the :class:`Settings` fields): a deployment with
    a witness needs its region's name (``require_region``; the command line's ``region`` commands may be given it
    instead); a peer needs a witness (without one, no region is ever the standby that copies)."""
    witness = _storage_account(WITNESS_CONNECTION, "blob", environ)
    peer = _storage_account(PEER_CONNECTION, "table", environ)
    if peer is not None and witness is None:
        raise ConfigurationError(
            f"setting {PEER_CONNECTION} needs a witness ({WITNESS_CONNECTION}): only a standby region copies from "
            "its peer, and a region is the standby only under a witness"
        )
    name = (raw("SCHEDULER_REGION_NAME", environ) or "").strip()
    if name and not _REGION.match(name):
        raise ConfigurationError(
            "setting SCHEDULER_REGION_NAME must be lower-case letters, digits and hyphens (at most 40, not starting "
            f"or ending with a hyphen), got {name[:80]!r}"
        )
    if require_region and witness is not None and not name:
        raise ConfigurationError(
            f"setting SCHEDULER_REGION_NAME must name this region when {WITNESS_CONNECTION} sets a witness"
        )
    blob = raw("SCHEDULER_WITNESS_BLOB", environ) or "scheduler-witness/active"
    container, _, blob_name = blob.partition("/")
    if not _CONTAINER.match(container) or not blob_name or len(blob_name) > 1024 or blob_name != blob_name.strip():
        raise ConfigurationError(
            "setting SCHEDULER_WITNESS_BLOB must be <container>/<blob name> (a container name of 3 to 63 lower-case "
            f"letters, digits and single hyphens, then a blob name), got {blob[:80]!r}"
        )
    primary = (raw("SCHEDULER_REGION_PRIMARY", environ) or "").strip()
    if primary and not _REGION.match(primary):
        raise ConfigurationError(
            "setting SCHEDULER_REGION_PRIMARY must be a region's name as SCHEDULER_REGION_NAME spells it (lower-case "
            f"letters, digits and hyphens), got {primary[:80]!r}"
        )
    seconds = _int("SCHEDULER_REGION_HANDBACK_SECONDS", environ, 0, 86400)
    return {
        "witness": witness,
        "region_name": name,
        "witness_blob": (container, blob_name),
        "peer": peer,
        "primary_region": primary,
        "handback_after": timedelta(seconds=seconds) if seconds else None,
    }


def _stream_queue(environ: Mapping[str, str] | None) -> str:
    """``SCHEDULER_HISTORY_STREAM_QUEUE``: a Storage queue name (default ``scheduler-history``)."""
    name = raw("SCHEDULER_HISTORY_STREAM_QUEUE", environ) or "scheduler-history"
    if not _QUEUE_NAME.match(name):
        raise ConfigurationError(
            "setting SCHEDULER_HISTORY_STREAM_QUEUE must be a Storage queue name (3 to 63 lowercase letters, digits "
            f"and single hyphens), got {name[:80]!r}"
        )
    return name


#: The names ``SCHEDULER_LOG_LEVEL`` and the local host's ``--log-level`` accept.
LOG_LEVEL_NAMES = ("debug", "info", "warning", "error")


def log_level(environ: Mapping[str, str] | None = None) -> int | None:
    """``SCHEDULER_LOG_LEVEL`` as a ``logging`` level (None: not set)."""
    text = (raw("SCHEDULER_LOG_LEVEL", environ) or "").strip().lower()
    if not text:
        return None
    if text not in LOG_LEVEL_NAMES:
        raise ConfigurationError(
            f"setting SCHEDULER_LOG_LEVEL must be one of {', '.join(LOG_LEVEL_NAMES)} (any case), got {text!r}"
        )
    return int(logging.getLevelName(text.upper()))


def log_format(environ: Mapping[str, str] | None = None) -> str:
    """``SCHEDULER_LOG_FORMAT``: 'text' or 'json' (the local host reads it before the other settings)."""
    return _choice("SCHEDULER_LOG_FORMAT", ("text", "json"), environ)
