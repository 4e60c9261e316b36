"""Storage connections of triggers, resolved from app settings as the Functions host's storage extensions do.

A trigger names a *connection* (``connection="AzureWebJobsStorage"``, ``"SchedulerExecutionStorage"``, or
nothing). In Azure the Storage Queues extension (azure-sdk-for-net,
``sdk/storage/Microsoft.Azure.WebJobs.Extensions.Storage.Queues/src/QueueServiceClientProvider.cs``, a
``StorageClientProvider<QueueServiceClient, QueueClientOptions>`` whose ``ServiceUriSubDomain`` is ``queue``)
turns that name into a client in ``StorageClientProvider.Get`` and ``CreateClient``
(``sdk/extensions/Microsoft.Azure.WebJobs.Extensions.Clients/src/Shared/StorageClientProvider.cs``), helped by
Microsoft.Extensions.Azure (``sdk/extensions/Microsoft.Extensions.Azure/src/Internal/ClientFactory.cs``,
``AzureComponentFactoryImpl.cs``). App settings are .NET configuration there: ``A__b`` is key ``b`` of section
``A``, and keys match without regard to case. :func:`resolve` does the same, in the same order:

1. The connection name: ``%NAME%`` references resolved (``Get(name, resolver)``); an empty name is
   ``Storage`` (``ConnectionStringNames.Storage``).
2. The section: ``AzureWebJobs<name>`` if it exists, else ``<name>`` (``WebJobsConfigurationExtensions.
   GetWebJobsConnectionStringSection``; each also looked up under ``ConnectionStrings:`` first, which app
   settings never are and the local host does not read). A section exists when it has a value, even an empty
   one, or any ``<section>__<key>``. None exists: ``InvalidOperationException("Storage account connection
   string 'AzureWebJobs<name>' does not exist. Make sure that it is a defined App Setting.")``.
3. Only when the section has **no value at all** (``IsConnectionStringPresent``: ``section.Value != null``),
   ``TryGetServiceUri``: ``<section>__accountName`` → ``https://<account>.queue.core.windows.net``; else
   ``<section>__queueServiceUri`` as it is. In the released extension (Storage.Queues 5.3.8 and before)
   ``__accountName`` wins when both are set; azure-sdk-for-net PR #58661 (issue #57543, merged after 5.3.8,
   unreleased when this was written) makes ``__queueServiceUri`` win and adds ``__endpointSuffix``. A value
   that is not an absolute URI is logged and skipped.
4. Otherwise ``ClientFactory.CreateClient`` matches ``QueueServiceClient``'s constructors, most parameters
   first: a section value that is not empty is the connection string (it wins over every ``__`` key);
   else ``<section>__serviceUri`` with the token credential; else ``<section>__connectionString``. Nothing
   matches: ``InvalidOperationException("Unable to find matching constructor ...")``. So an *empty*
   ``<section>`` next to ``<section>__queueServiceUri`` fails: the value blocks step 3 and is no connection
   string in step 4 (docs/deploy.md §13).

The token credential is ``AzureComponentFactory.CreateTokenCredential(section)``: ``ClientFactory.
CreateCredential`` from ``<section>__credential`` (``managedidentity``, ``workloadidentity``, ...),
``__clientId``, ``__tenantId``, ``__clientSecret``, ``__managedIdentityResourceId``, ..., else the global
default, ``DefaultAzureCredential`` (``AzureClientsGlobalOptions.CredentialFactory``): in Azure, the app's
managed identity. :func:`token_credential` builds the same with azure-identity, except that where no real
identity exists (none named by the section's settings, no platform identity endpoint, no service principal in
``AZURE_*``) and the service is on this machine (a local Azurite started with ``--oauth basic``,
``local_host/azurite.py``), it uses :class:`StandInTokenCredential`, a test double that Azurite accepts and
Azure never would.

What the local host refuses at start-up, naming the setting, is what the extension refuses when it builds
the listener, and besides: an ``http`` service URI with a token (the storage SDKs refuse bearer tokens
without TLS, at the first call) and settings it cannot model here (see :func:`token_credential`).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import os
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from azure.core.credentials import AccessToken, TokenCredential

from local_host.app_index import resolve_setting_references
from scheduler_core.errors import ConfigurationError
from scheduler_core.settings import identity_environment

log = logging.getLogger("local_host")

#: The connection name of a trigger that names none (``ConnectionStringNames.Storage``), and the prefix the
#: extension tries first (``WebJobsConfigurationExtensions.WebJobsConfigurationSectionName``).
DEFAULT_CONNECTION = "Storage"
WEBJOBS_PREFIX = "AzureWebJobs"
#: The storage services a connection may be resolved for (``ServiceUriSubDomain`` of each provider).
SERVICES = ("blob", "queue", "table")
#: ``StorageClientProvider.FormatServiceUri``'s default endpoint suffix.
ENDPOINT_SUFFIX = "core.windows.net"
#: The section keys ``ClientFactory.CreateCredential`` reads (compared without regard to case).
CREDENTIAL_KEYS = (
    "credential",
    "clientId",
    "tenantId",
    "serviceConnectionId",
    "managedIdentityResourceId",
    "managedIdentityObjectId",
    "managedIdentityClientId",
    "clientSecret",
    "clientCertificate",
    "clientCertificateStoreName",
    "clientCertificateStoreLocation",
    "systemAccessToken",
    "additionallyAllowedTenants",
    "tokenFilePath",
    "azureCloud",
)
#: Storage account names: 3 to 24 letters and digits (a name outside this cannot form the account's host).
_ACCOUNT_NAME = re.compile(r"[A-Za-z0-9]{3,24}")


@dataclass(frozen=True)
class StorageConnection:
    """Where one connection of a trigger points: a connection string, or a service URI reached with a token.

    ``section`` is the settings section found (``AzureWebJobsStorage``...), ``source`` the setting that gave
    the connection string or URI (for log lines and errors; never its value), ``credential_settings`` the
    section's credential keys (:data:`CREDENTIAL_KEYS`, spelled as there → value) for :func:`token_credential`.
    """

    name: str
    service: str
    section: str
    source: str
    connection_string: str | None = field(default=None, repr=False)  # it holds a key: never printed
    service_uri: str | None = None
    credential_settings: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def identity_based(self) -> bool:
        """Whether the connection is a service URI reached with a token credential."""
        return self.connection_string is None


class _Section:
    """The app settings of one configuration section, read as .NET configuration reads environment variables:
    ``<section>`` is its value, ``<section>__<key>`` (or ``<section>:<key>``) its keys, all without regard to
    case."""

    def __init__(self, name: str, environ: Mapping[str, str]) -> None:
        self.name = name
        lowered = name.lower()
        self.value: str | None = None
        self.keys: dict[str, tuple[str, str]] = {}  # lower-cased key → (setting name, value)
        self.has_keys = False
        for setting in sorted(environ):
            normal = setting.replace("__", ":").lower()
            if normal == lowered:
                self.value = environ[setting]
            elif normal.startswith(lowered + ":"):
                self.has_keys = True
                key = normal[len(lowered) + 1 :]
                if ":" not in key:
                    self.keys[key] = (setting, environ[setting])

    @property
    def exists(self) -> bool:
        """``IConfigurationSection.Exists()``: a value (even empty) or any key below it."""
        return self.value is not None or self.has_keys

    def get(self, key: str) -> tuple[str, str] | None:
        """The setting name and value of ``key`` (``GetValue<string>(key)``), None when unset."""
        return self.keys.get(key.lower())

    def setting(self, key: str) -> str:
        """The name of ``key``'s setting: as set when it is, else ``<section>__<key>``."""
        found = self.get(key)
        return found[0] if found else f"{self.name}__{key}"


def resolve(connection: str, service: str = "queue", environ: Mapping[str, str] | None = None) -> StorageConnection:
    """The connection named ``connection`` of a ``service`` (``queue``, ``blob``, ``table``) trigger, resolved as
    the extension resolves it (see the module's docstring); raises :class:`ConfigurationError` naming the
    settings when the extension would refuse it (or would build a client that cannot authenticate)."""
    if service not in SERVICES:
        raise ValueError(f"service must be one of {', '.join(SERVICES)}, got {service!r}")
    env = os.environ if environ is None else environ
    name = resolve_setting_references(connection.strip(), env) or DEFAULT_CONNECTION
    section = next(
        (s for s in (_Section(WEBJOBS_PREFIX + name, env), _Section(name, env)) if s.exists),
        None,
    )
    uri_key = f"{service}ServiceUri"
    if section is None:
        usual = WEBJOBS_PREFIX + name if name == DEFAULT_CONNECTION else name
        raise ConfigurationError(
            f"{service} trigger connection {name!r}: no app setting {WEBJOBS_PREFIX + name} or {name}, nor any "
            f"{usual}__... (the Storage extension: \"Storage account connection string '{WEBJOBS_PREFIX + name}' "
            f'does not exist"). Set {usual} to a connection string, or for an identity-based connection '
            f"{usual}__{uri_key} (or {usual}__serviceUri, or {usual}__accountName)"
        )
    credentials = {key: found[1] for key in CREDENTIAL_KEYS if (found := section.get(key))}

    def identity(source: str, uri: str) -> StorageConnection:
        return StorageConnection(name, service, section.name, source, None, uri.rstrip("/"), credentials)

    skipped: list[str] = []
    if section.value is None:  # StorageClientProvider.TryGetServiceUri
        account = section.get("accountName")
        if account is not None:
            if not _ACCOUNT_NAME.fullmatch(account[1]):
                raise ConfigurationError(
                    f"setting {account[0]} must be a storage account name (3 to 24 letters and digits); the "
                    f"extension reads it before {section.setting(uri_key)} and would build "
                    f"https://<it>.{service}.{ENDPOINT_SUFFIX} from it: remove it if the connection is the URI"
                )
            return _checked(identity(account[0], f"https://{account[1]}.{service}.{ENDPOINT_SUFFIX}"))
        uri = section.get(uri_key)
        if uri is not None:
            if _absolute(uri[1]):
                return _checked(identity(uri[0], uri[1]))
            log.error(
                'setting %s is not an absolute URI: the extension skips it ("Could not parse serviceUri")', uri[0]
            )
            skipped.append(uri[0])
    # ClientFactory.CreateClient: QueueServiceClient's constructors, most parameters first.
    if section.value:
        return StorageConnection(name, service, section.name, section.name, section.value, None, credentials)
    uri = section.get("serviceUri")
    if uri is not None:
        if _absolute(uri[1]):
            return _checked(identity(uri[0], uri[1]))
        skipped.append(uri[0])
    text = section.get("connectionString")
    if text is not None and text[1]:
        return StorageConnection(name, service, section.name, text[0], text[1], None, credentials)
    if section.value is not None:
        raise ConfigurationError(
            f"setting {section.name} is set but empty: the Storage extension takes a value, even an empty one, "
            f"for a connection string, and then reads neither {section.setting(uri_key)} nor "
            f"{section.setting('accountName')}. Remove {section.name}, or set it to a connection string"
        )
    unusable = f" ({', '.join(skipped)}: not an absolute URI)" if skipped else ""
    raise ConfigurationError(
        f"{service} trigger connection {name!r}: settings {section.name}__... are set, but none the Storage "
        f"extension builds a client from{unusable}: set {section.setting(uri_key)} (https://<account>."
        f"{service}.{ENDPOINT_SUFFIX}), {section.setting('serviceUri')} or {section.setting('accountName')}"
    )


def _absolute(text: str) -> bool:
    """Whether ``text`` parses as an absolute URI with a host, as .NET's ``new Uri(text)`` requires."""
    try:
        parsed = urllib.parse.urlsplit(text.strip())
        return bool(parsed.scheme and parsed.hostname)
    except ValueError:
        return False


def _checked(connection: StorageConnection) -> StorageConnection:
    """An identity-based connection whose URI can carry a bearer token: https only (Azure.Core's
    ``BearerTokenAuthenticationPolicy`` and azure-storage refuse tokens over plain http)."""
    if urllib.parse.urlsplit(connection.service_uri or "").scheme.lower() != "https":
        raise ConfigurationError(
            f"setting {connection.source} must be an https URI: an identity-based connection sends bearer tokens, "
            "which the storage clients send over TLS only (the value is not repeated here)"
        )
    return connection


def is_loopback(uri: str) -> bool:
    """Whether ``uri``'s host is this machine (``localhost`` or a loopback address): a local Azurite."""
    host = urllib.parse.urlsplit(uri).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def real_identity_available(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this machine has an identity azure-identity's ``DefaultAzureCredential`` would present without
    a sign-in: the platform's managed identity endpoint (``IDENTITY_ENDPOINT`` + ``IDENTITY_HEADER``, or
    ``MSI_ENDPOINT``), or a service principal or workload identity in ``AZURE_TENANT_ID`` + ``AZURE_CLIENT_ID``
    with a secret, certificate or federated token file."""
    env = os.environ if environ is None else environ
    if len(identity_environment(env)) == 2 or env.get("MSI_ENDPOINT"):
        return True
    secrets = ("AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE")
    return bool(env.get("AZURE_TENANT_ID") and env.get("AZURE_CLIENT_ID") and any(env.get(s) for s in secrets))


def token_credential(connection: StorageConnection, environ: Mapping[str, str] | None = None) -> TokenCredential:
    """The token credential of an identity-based ``connection``, chosen as the extension chooses it
    (``AzureComponentFactory.CreateTokenCredential``), with one local exception.

    - The section names a credential (``__credential``, ``__clientId``, ...): that one, as
      ``ClientFactory.CreateCredential`` builds it (:func:`_configured_credential`).
    - Else, a real identity is here (:func:`real_identity_available`), or the service is not on this machine:
      ``DefaultAzureCredential``, the extension's global default (in Azure, the app's managed identity).
    - Else (a local Azurite, no identity): :class:`StandInTokenCredential`. It is never chosen for a service
      on another host, so its tokens never leave this machine.
    """
    env = os.environ if environ is None else environ
    configured = _configured_credential(connection, env)
    if configured is not None:
        return configured
    if real_identity_available(env) or not is_loopback(connection.service_uri or ""):
        return _default_azure_credential(())
    return StandInTokenCredential()


def _setting(connection: StorageConnection, key: str) -> str:
    return f"{connection.section}__{key}"


def _configured_credential(connection: StorageConnection, env: Mapping[str, str]) -> TokenCredential | None:
    """``ClientFactory.CreateCredential(section)`` with azure-identity; None when the section names none.

    Modelled: ``credential`` ``managedidentity`` (exactly one of ``clientId``, ``managedIdentityClientId``,
    ``managedIdentityResourceId``, ``managedIdentityObjectId``, as ``AssertSingleManagedIdentityIdentifier``
    requires in the newest ``ClientFactory``; without ``credential`` the global default already is the
    system-assigned identity),
    ``workloadidentity`` (``tenantId``, ``clientId``, ``tokenFilePath``), ``tenantId`` + ``clientId`` +
    ``clientSecret``, and ``DefaultAzureCredential`` with ``clientId`` / ``managedIdentityClientId``. An
    unknown ``credential`` value is ignored, as the extension ignores it. Refused, naming the setting:
    ``clientCertificate`` (a thumbprint in a Windows certificate store), ``azurepipelines``,
    ``managedidentityasfederatedidentity`` and ``managedIdentityResourceId`` outside ``managedidentity``.
    """
    settings = {key: value.strip() for key, value in connection.credential_settings.items() if value.strip()}
    if not settings:
        return None
    from azure.identity import ClientSecretCredential, ManagedIdentityCredential, WorkloadIdentityCredential

    kind = settings.get("credential", "").lower()
    client_id = settings.get("clientId")
    tenant_id = settings.get("tenantId")
    if kind == "managedidentity":
        identifiers = ("clientId", "managedIdentityClientId", "managedIdentityResourceId", "managedIdentityObjectId")
        ids = {key: value for key in identifiers if (value := settings.get(key))}
        if len(ids) != 1:
            names = ", ".join(_setting(connection, key) for key in (ids or identifiers))
            raise ConfigurationError(
                f"setting {_setting(connection, 'credential')} is managedidentity: exactly one of {names} must name "
                "the identity (leave the credential setting out for the system-assigned identity)"
            )
        if "managedIdentityResourceId" in ids:
            return ManagedIdentityCredential(identity_config={"mi_res_id": ids["managedIdentityResourceId"]})
        if "managedIdentityObjectId" in ids:
            return ManagedIdentityCredential(identity_config={"object_id": ids["managedIdentityObjectId"]})
        return ManagedIdentityCredential(client_id=next(iter(ids.values())))
    if kind == "workloadidentity":
        # WorkloadIdentityCredentialOptions fills what the section leaves out from the environment.
        token_file = settings.get("tokenFilePath") or env.get("AZURE_FEDERATED_TOKEN_FILE")
        tenant = tenant_id or env.get("AZURE_TENANT_ID")
        client = client_id or env.get("AZURE_CLIENT_ID")
        if not (tenant and client and token_file):
            raise ConfigurationError(
                f"setting {_setting(connection, 'credential')} is workloadidentity: set "
                f"{_setting(connection, 'tenantId')}, {_setting(connection, 'clientId')} and "
                f"{_setting(connection, 'tokenFilePath')}"
            )
        return WorkloadIdentityCredential(tenant_id=tenant, client_id=client, token_file_path=token_file)
    if kind in ("azurepipelines", "managedidentityasfederatedidentity"):
        raise ConfigurationError(
            f"setting {_setting(connection, 'credential')}: {kind} is not supported by the local host"
        )
    if tenant_id and client_id and settings.get("clientSecret"):
        return ClientSecretCredential(tenant_id, client_id, settings["clientSecret"])
    for key in ("clientCertificate", "managedIdentityObjectId", "managedIdentityResourceId"):
        if key in settings:
            raise ConfigurationError(
                f"setting {_setting(connection, key)} is not supported by the local host here "
                f"(only with {_setting(connection, 'credential')} managedidentity, or not at all for clientCertificate)"
            )
    identity = settings.get("managedIdentityClientId") or client_id
    if identity or tenant_id or settings.get("additionallyAllowedTenants"):
        return _default_azure_credential((("managed_identity_client_id", identity),))
    if kind:
        log.warning(
            "setting %s: unknown credential %r, ignored as the extension ignores it",
            _setting(connection, "credential"),
            kind,
        )
    return None


_credentials: dict[tuple[tuple[str, str | None], ...], TokenCredential] = {}
_credentials_lock = threading.Lock()


def _default_azure_credential(options: tuple[tuple[str, str | None], ...]) -> TokenCredential:
    """One ``DefaultAzureCredential`` per set of options, shared by the pollers (each keeps a token cache)."""
    from azure.identity import DefaultAzureCredential

    with _credentials_lock:
        if options not in _credentials:
            _credentials[options] = DefaultAzureCredential(**{k: v for k, v in options if v})
        return _credentials[options]


def _base64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()


class StandInTokenCredential:
    """A **test double** of the app's managed identity, for a local Azurite started with ``--oauth basic``.

    In Azure the Functions host authenticates identity-based connections with the platform's managed identity
    (``DefaultAzureCredential``, or what ``<connection>__credential`` names). Here there is none, so the local
    host (:func:`token_credential`) hands this one to the clients of a service on this machine, and only then.

    Its tokens are **unsigned** JWTs (``alg`` ``none``) of the shape Azurite's basic OAuth accepts, which checks
    no signature (``node_modules/azurite/dist/src/queue/authentication/QueueTokenAuthenticator.js``,
    ``authenticateBasic``; likewise blob and table): ``iat``, ``nbf`` and ``exp`` present and ``nbf <= now <=
    exp``; ``iss`` starting with ``https://sts.windows.net/`` (``VALID_ISSUE_PREFIXES``); ``aud`` the storage
    resource, ``https://storage.azure.com`` (``VALID_QUEUE_AUDIENCES``). The audience is the requested scope
    without ``/.default``. Azure Storage would refuse them (no signature), as it should.
    """

    #: A tenant that is no tenant (all zeros), in the issuer Azurite requires.
    TENANT = "00000000-0000-0000-0000-000000000000"
    ISSUER = f"https://sts.windows.net/{TENANT}/"

    def __init__(self, lifetime: float = 3600.0, clock: Callable[[], float] = time.time) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self.object_id = str(uuid.uuid4())

    def get_token(
        self,
        *scopes: str,
        claims: str | None = None,
        tenant_id: str | None = None,
        enable_cae: bool = False,
        **kwargs: Any,
    ) -> AccessToken:
        """A token for the one resource of ``scopes`` (``https://storage.azure.com/.default``)."""
        if len(scopes) != 1:
            raise ValueError(f"StandInTokenCredential gives a token for one scope, got {scopes!r}")
        now = int(self._clock())
        expires = now + int(self.lifetime)
        payload = {
            "aud": scopes[0].removesuffix("/.default"),
            "iss": self.ISSUER,
            "iat": now,
            "nbf": now,
            "exp": expires,
            "tid": self.TENANT,
            "oid": self.object_id,
            "sub": self.object_id,
            "idtyp": "app",
            "ver": "1.0",
        }
        return AccessToken(f"{_base64url({'alg': 'none', 'typ': 'JWT'})}.{_base64url(payload)}.", expires)
