"""Entra ID sign-in and roles on the management API, for real.

A local OpenID provider (``tests/support/oidc.py``: discovery documents, JWKS and a client-credentials
token endpoint over TLS with a test CA) issues tokens to ``azure-identity``'s ``ClientSecretCredential``
pointed at it; the unmodified ``azure-mgmt-scheduler`` client calls the real function app on the local
host (Azurite storage) over https through a TLS-terminating front (``tests/support/oidc_tls_front.py``), as
App Service's front end serves the app. The API validates every token against the provider's keys, fetched
once and cached. Negative cases send hand-made tokens over the same https path.

"Nothing changed" is checked on storage itself: every entity of every table of the deployment (with its
ETag and timestamp) and the execution queue are the same before and after the refused calls.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from azure.core.exceptions import HttpResponseError
from azure.data.tables import TableServiceClient
from azure.identity import ClientSecretCredential
from azure.mgmt.scheduler import SchedulerManagementClient
from azure.mgmt.scheduler import models as m

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, settings, wiring
from scheduler_core.adapters.azure.clients import queue_client
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.api.handler import ApiServices
from scheduler_core.auth.entra import REFRESH_INTERVAL_SECONDS
from scheduler_core.storage.names import table_names
from tests.e2e.conftest import give_back_slots_ahead
from tests.support.jobs import every, http_action, job_body
from tests.support.oidc import Client, OidcProvider, SigningKey, oidc_provider
from tests.support.oidc_tls_front import tls_front
from tests.support.tls import TestCa

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
API_VERSION = "2016-03-01"
SUB, OTHER_SUB, RG, JC = "sub1", "sub2", "rg1", "jc1"
JC_SCOPE = f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}"


class ManualClock:
    """The key cache's monotonic clock, moved by the test (its refresh rules are in minutes)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Deployment:
    """The function app on the local host, behind https, accepting the provider's tokens."""

    https_url: str
    http_url: str
    provider: OidcProvider
    settings: settings.Settings
    clock: ManualClock
    key: str  # a Contributor API key (legacy entry, no role prefix)
    reader_key: str

    def credential(self, client: Client) -> ClientSecretCredential:
        return ClientSecretCredential(
            self.provider.tenant,
            client.client_id,
            client.secret,
            authority=self.provider.base_url,
            disable_instance_discovery=True,
        )

    def sdk(self, client: Client, subscription: str = SUB) -> SchedulerManagementClient:
        """The SDK as an Entra ID user writes it: a credential, the base URL and the API's scope."""
        return SchedulerManagementClient(
            self.credential(client),
            subscription,
            base_url=self.https_url,
            credential_scopes=[f"{self.provider.app_id_uri}/.default"],
            polling_interval=0,
            retry_total=0,
        )

    def url(self, path: str, https: bool = True) -> str:
        return f"{self.https_url if https else self.http_url}/{path.lstrip('/')}?api-version={API_VERSION}"

    def call(self, method: str, path: str, headers: dict[str, str], body: Any = None) -> requests.Response:
        return requests.request(method, self.url(path), json=body, headers=headers, timeout=30)

    def call_with_key(self, method: str, path: str, key: str, body: Any = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {key}"}
        return requests.request(method, self.url(path, https=False), json=body, headers=headers, timeout=30)

    def snapshot(self) -> dict[str, Any]:
        """Every entity of the deployment's tables (with ETag and timestamp) and the execution queue."""
        give_back_slots_ahead()
        assert self.settings.storage_connection_string is not None
        service = TableServiceClient.from_connection_string(self.settings.storage_connection_string)
        state: dict[str, Any] = {}
        for name in table_names(self.settings):
            rows = service.get_table_client(name).list_entities()
            state[name] = sorted(
                ((e["PartitionKey"], e["RowKey"], e.metadata.get("etag"), str(sorted(e.items()))) for e in rows),
            )
        queue = queue_client(self.settings, self.settings.execution_queue)
        state["executions"] = queue.get_queue_properties().approximate_message_count
        state["peek"] = [message.content for message in queue.peek_messages(max_messages=32)]
        return state


Start = Callable[..., Deployment]


@pytest.fixture
def test_ca(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestCa:
    """A test CA that this process trusts (as a deployment trusts its CAs): the provider and the https
    front have certificates from it."""
    ca = TestCa()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_pem(tmp_path)))
    return ca


@pytest.fixture
def provider(test_ca: TestCa) -> Iterator[OidcProvider]:
    with oidc_provider(test_ca) as running:
        yield running


@pytest.fixture
def start(
    storage_env: settings.Settings, provider: OidcProvider, test_ca: TestCa, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Start]:
    """Starts the deployment: ``audiences`` (default: the API's Application ID URI and client id) and
    ``assignments`` are the text of SCHEDULER_ENTRA_AUDIENCES and SCHEDULER_ROLE_ASSIGNMENTS."""
    import function_app

    stack = ExitStack()

    def begin(audiences: str | None = None, assignments: str = "") -> Deployment:
        key, reader_key = auth.generate_key(), auth.generate_key()
        keys_text = f"{auth.hash_entry(key)};{auth.hash_entry(reader_key, role=auth.Role.READER)}"
        monkeypatch.setenv("SCHEDULER_API_KEYS", keys_text)
        provision(storage_env)
        clock = ManualClock()
        gate = auth.build_gate(
            keys_text,
            authority=provider.base_url,
            tenant=provider.tenant,
            audiences=audiences if audiences is not None else f"{provider.app_id_uri};{provider.api_client_id}",
            role_assignments=assignments,
            signing_keys=lambda config: auth.SigningKeys(config, clock=clock),
        )
        built = wiring.build(settings.load())
        wiring.install(dataclasses.replace(built, api=ApiServices(built.service, gate.keys, gate)))
        port = free_port()
        host = stack.enter_context(
            LocalHost(function_app.app, ROOT / "host.json", port=port, enable=frozenset({"http"}))
        )
        front = stack.enter_context(tls_front(test_ca, port))
        return Deployment(front, host.base_url, provider, storage_env, clock, key, reader_key)

    with stack:
        yield begin


def collection() -> m.JobCollectionDefinition:
    return m.JobCollectionDefinition(
        location="westus", properties=m.JobCollectionProperties(sku=m.Sku(name="Standard"), state="Enabled")
    )


def job(uri: str = "https://example.org/hook") -> m.JobDefinition:
    start = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    return m.JobDefinition(
        properties=m.JobProperties(
            start_time=start,
            state="Enabled",
            action=m.JobAction(type="Https", request=m.HttpRequest(uri=uri, method="POST", body="hi")),
            recurrence=m.JobRecurrence(frequency="Hour", interval=1),
        )
    )


JOB_BODY = job_body(
    (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    http_action("https://example.org/x", method="GET", body=None),
    every("Hour"),
)


def refused(principal: str, action: str, scope: str) -> str:
    return (
        f"The client '{principal}' with object id '{principal}' does not have authorization to perform action "
        f"'Microsoft.Scheduler/jobCollections/{action}' over scope '{scope}' or the scope is invalid. If access "
        "was recently granted, please refresh your credentials."
    )


def error_of(exc: HttpResponseError) -> tuple[int, str, str]:
    assert exc.response is not None
    body = json.loads(exc.response.text())
    return exc.status_code or 0, body["error"]["code"], body["error"]["message"]


def seed(d: Deployment, subscription: str = SUB) -> None:
    """A collection and a job "j", made with the Contributor API key."""
    base = f"subscriptions/{subscription}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/{JC}"
    # maxJobCount 5: too little room for the job counter to reserve slots ahead, which it would give back
    # 2 s later (a write of the collection row that no refused call below caused).
    properties = {"sku": {"name": "Standard"}, "quota": {"maxJobCount": 5}}
    made = d.call_with_key("PUT", base, d.key, {"location": "westus", "properties": properties})
    assert made.status_code in (200, 201), made.text
    made = d.call_with_key("PUT", f"{base}/jobs/j", d.key, JOB_BODY)
    assert made.status_code in (200, 201), made.text


# ------------------------------------------------------------------------------------------ the SDK


def test_the_sdk_with_a_client_secret_credential_manages_jobs_over_https_with_keys_fetched_once(
    start: Start, provider: OidcProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="scheduler_core")
    d = start()
    admin = provider.register("admin", roles=["Scheduler.Contributor"])
    client = d.sdk(admin)
    created = client.job_collections.create_or_update(RG, JC, collection())
    assert created.name == JC
    client.jobs.create_or_update(RG, JC, "j", job())
    assert client.jobs.get(RG, JC, "j").properties.state == "Enabled"
    assert [j.name for j in client.jobs.list(RG, JC)] == [f"{JC}/j"]
    assert [c.name for c in client.job_collections.list_by_subscription()] == [JC]
    assert [c.name for c in client.job_collections.list_by_resource_group(RG)] == [JC]
    assert client.jobs.run(RG, JC, "j") is None
    patched = client.jobs.patch(RG, JC, "j", m.JobDefinition(properties=m.JobProperties(state="Disabled")))
    assert patched.properties.state == "Disabled"
    assert list(client.jobs.list_job_history(RG, JC, "j")) == []
    client.job_collections.begin_disable(RG, JC).result()
    client.job_collections.begin_enable(RG, JC).result()
    client.jobs.delete(RG, JC, "j")
    client.job_collections.begin_delete(RG, JC).result()
    assert list(client.job_collections.list_by_subscription()) == []

    # 14 calls, one token, and the tenant's keys fetched once: no network call per request.
    assert len(provider.requests_to("/oauth2/v2.0/token")) == 1
    assert len(provider.requests_to("/discovery/v2.0/keys")) == 1
    assert len(provider.requests_to(f"/{provider.tenant}/.well-known/openid-configuration")) == 1  # v1.0
    logged = [r.getMessage() for r in caplog.records if r.name == "scheduler_core.auth"]
    write = f"{admin.object_id} performs Microsoft.Scheduler/jobCollections/jobs/write over {JC_SCOPE}/jobs/j"
    assert f"management API: {write}" in logged
    token = provider.mint(provider.claims_for(admin, provider.app_id_uri))
    assert token.split(".")[2] not in caplog.text and admin.secret not in caplog.text


def test_v1_tokens_with_the_application_id_uri_as_audience_are_accepted(start: Start, provider: OidcProvider) -> None:
    d = start()
    provider.token_version = 1  # the app registration's default: aud = Application ID URI, v1.0 issuer
    reader = provider.register("v1-reader", roles=["Scheduler.Reader"])
    assert list(d.sdk(reader).job_collections.list_by_subscription()) == []
    claims = provider.claims_for(reader, provider.app_id_uri)
    assert claims["iss"] == provider.issuer_v1 and claims["aud"] == provider.app_id_uri


def test_only_the_base_url_changes_when_the_deployment_accepts_arm_tokens(start: Start, provider: OidcProvider) -> None:
    """The SDK's default scope is ARM's (https://management.azure.com/.default). A deployment that lists
    ARM's audience accepts those tokens; ARM tokens carry no Scheduler app role, so the role comes from a
    role assignment of the principal's object id (docs/security.md says what this trades away)."""
    provider.other_resources["https://management.azure.com"] = "https://management.azure.com"
    ops = provider.register("ops")
    d = start(
        audiences=f"{provider.app_id_uri};https://management.azure.com",
        assignments=f"contributor:oid:{ops.object_id}@{SUB}",
    )
    client = SchedulerManagementClient(d.credential(ops), SUB, base_url=d.https_url)
    assert client.job_collections.create_or_update(RG, JC, collection()).name == JC
    [token_request] = provider.requests_to("/oauth2/v2.0/token")
    assert "scope=https%3A%2F%2Fmanagement.azure.com%2F.default" in token_request.body.decode()


# ------------------------------------------------------------------------------------------- roles


def test_a_reader_may_read_and_every_write_is_refused_in_arms_words_with_nothing_changed(
    start: Start, provider: OidcProvider
) -> None:
    d = start()
    seed(d)
    reader = provider.register("reader", roles=["Scheduler.Reader"])
    client = d.sdk(reader)
    assert client.job_collections.get(RG, JC).name == JC
    assert [c.name for c in client.job_collections.list_by_subscription()] == [JC]
    assert [c.name for c in client.job_collections.list_by_resource_group(RG)] == [JC]
    assert client.jobs.get(RG, JC, "j").name == f"{JC}/j"
    assert [j.name for j in client.jobs.list(RG, JC)] == [f"{JC}/j"]
    assert list(client.jobs.list_job_history(RG, JC, "j")) == []
    before = d.snapshot()

    oid = reader.object_id
    missing_jc = JC_SCOPE.replace(f"/{JC}", "/nope")
    jcs, jobs, jobs_scope = client.job_collections, client.jobs, f"{JC_SCOPE}/jobs"
    disabled = m.JobDefinition(properties=m.JobProperties(state="Disabled"))
    attempts: list[tuple[str, Callable[[], Any], str, str]] = [
        ("create collection", lambda: jcs.create_or_update(RG, "nope", collection()), "write", missing_jc),
        ("replace collection", lambda: jcs.create_or_update(RG, JC, collection()), "write", JC_SCOPE),
        ("patch collection", lambda: jcs.patch(RG, JC, m.JobCollectionDefinition(tags={"a": "b"})), "write", JC_SCOPE),
        ("delete collection", lambda: jcs.begin_delete(RG, JC).result(), "delete", JC_SCOPE),
        ("delete missing collection", lambda: jcs.begin_delete(RG, "nope").result(), "delete", missing_jc),
        ("disable collection", lambda: jcs.begin_disable(RG, JC).result(), "disable/action", JC_SCOPE),
        ("enable collection", lambda: jcs.begin_enable(RG, JC).result(), "enable/action", JC_SCOPE),
        ("create job", lambda: jobs.create_or_update(RG, JC, "new", job()), "jobs/write", f"{jobs_scope}/new"),
        (
            "replace job",
            lambda: jobs.create_or_update(RG, JC, "j", job("https://x.org/")),
            "jobs/write",
            f"{jobs_scope}/j",
        ),
        ("patch job", lambda: jobs.patch(RG, JC, "j", disabled), "jobs/write", f"{jobs_scope}/j"),
        ("delete job", lambda: jobs.delete(RG, JC, "j"), "jobs/delete", f"{jobs_scope}/j"),
        ("delete missing job", lambda: jobs.delete(RG, JC, "nope"), "jobs/delete", f"{jobs_scope}/nope"),
        ("run job", lambda: jobs.run(RG, JC, "j"), "jobs/run/action", f"{jobs_scope}/j"),
        ("run missing job", lambda: jobs.run(RG, JC, "nope"), "jobs/run/action", f"{jobs_scope}/nope"),
    ]
    for name, attempt, action, scope in attempts:
        with pytest.raises(HttpResponseError) as caught:
            attempt()
        assert error_of(caught.value) == (403, "AuthorizationFailed", refused(oid, action, scope)), name
    assert d.snapshot() == before  # nothing stored changed, nothing queued


def test_a_token_without_a_role_is_refused_reads_and_writes_alike(start: Start, provider: OidcProvider) -> None:
    d = start()
    seed(d)
    nobody = provider.register("nobody")
    client = d.sdk(nobody)
    before = d.snapshot()
    # no role in the subscription: refused over the subscription, so existing and missing names look alike
    for attempt, action in [
        (lambda: client.job_collections.get(RG, JC), "read"),
        (lambda: client.job_collections.get(RG, "nope"), "read"),
        (lambda: list(client.job_collections.list_by_subscription()), "read"),
        (lambda: list(client.jobs.list_job_history(RG, JC, "j")), "jobs/jobHistories/read"),
        (lambda: list(client.jobs.list_job_history(RG, JC, "nope")), "jobs/jobHistories/read"),
        (lambda: client.jobs.create_or_update(RG, JC, "new", job()), "jobs/write"),
    ]:
        with pytest.raises(HttpResponseError) as caught:
            attempt()
        expected = refused(nobody.object_id, action, f"/subscriptions/{SUB}")
        assert error_of(caught.value) == (403, "AuthorizationFailed", expected)
    assert d.snapshot() == before


def test_role_assignments_grant_roles_per_subscription_to_groups_and_object_ids(
    start: Start, provider: OidcProvider
) -> None:
    group = str(uuid.uuid4())
    member = provider.register("member", groups=[group.upper()])  # ids compare case-insensitively
    ops = provider.register("ops")
    d = start(assignments=f"reader:group:{group}@{SUB}; contributor:oid:{ops.object_id}@{OTHER_SUB}")
    seed(d, SUB)
    assert d.sdk(member, SUB).jobs.get(RG, JC, "j").name == f"{JC}/j"
    with pytest.raises(HttpResponseError) as caught:
        d.sdk(member, SUB).jobs.delete(RG, JC, "j")
    assert error_of(caught.value)[:2] == (403, "AuthorizationFailed")
    with pytest.raises(HttpResponseError) as caught:
        list(d.sdk(member, OTHER_SUB).job_collections.list_by_subscription())
    assert error_of(caught.value)[2] == refused(member.object_id, "read", f"/subscriptions/{OTHER_SUB}")

    assert d.sdk(ops, OTHER_SUB).job_collections.create_or_update(RG, JC, collection()).name == JC
    with pytest.raises(HttpResponseError) as caught:
        d.sdk(ops, SUB).jobs.get(RG, JC, "j")
    assert error_of(caught.value)[:2] == (403, "AuthorizationFailed")


def test_api_keys_have_roles_and_legacy_entries_stay_contributors(start: Start) -> None:
    d = start()
    seed(d)  # with the legacy entry (no role prefix): a Contributor
    job_path = f"{JC_SCOPE}/jobs/j".lstrip("/")
    assert d.call_with_key("GET", job_path, d.reader_key).status_code == 200
    assert d.call_with_key("GET", f"{JC_SCOPE}/jobs".lstrip("/"), d.reader_key).status_code == 200
    before = d.snapshot()
    key_id = next(k.key_id for k in wiring.api_services().gate.keys if k.role == auth.Role.READER)
    for method, path, body, action in [
        ("PUT", job_path, JOB_BODY, "jobs/write"),
        ("DELETE", job_path, None, "jobs/delete"),
        ("POST", f"{job_path}/run", None, "jobs/run/action"),
        ("POST", f"{JC_SCOPE}/disable".lstrip("/"), None, "disable/action"),
    ]:
        answer = d.call_with_key(method, path, d.reader_key, body)
        scope = "/" + (path.removesuffix("/run").removesuffix("/disable"))
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"] == {"code": "AuthorizationFailed", "message": refused(key_id, action, scope)}
        sent = requests.request(
            method, d.url(path, https=False), json=body, timeout=30, headers={"x-functions-key": d.reader_key}
        )
        assert sent.status_code == 403
    assert d.snapshot() == before
    assert d.call_with_key("DELETE", job_path, d.key).status_code == 200


# ------------------------------------------------------------------------------------ bad tokens


def _bad_tokens(provider: OidcProvider, reader: Client) -> dict[str, tuple[str, str, str]]:
    """name -> (token, ARM code, a part of the message)."""
    now = int(time.time())
    good = provider.claims_for(reader, provider.app_id_uri)
    rogue = SigningKey.new("rogue-key")
    return {
        "expired": (
            provider.mint({**good, "iat": now - 7200, "nbf": now - 7200, "exp": now - 3600}),
            "ExpiredAuthenticationToken",
            "is earlier than current UTC time",
        ),
        "not yet valid": (
            provider.mint({**good, "nbf": now + 3600, "exp": now + 7200}),
            "InvalidAuthenticationToken",
            "is not valid before UTC time",
        ),
        "wrong issuer": (
            provider.mint({**good, "iss": f"{provider.base_url}/{uuid.uuid4()}/v2.0"}),
            "InvalidAuthenticationToken",
            "is from the wrong issuer",
        ),
        "wrong audience": (
            provider.mint({**good, "aud": "api://someone-else"}),
            "InvalidAuthenticationTokenAudience",
            "wrong audience or resource 'api://someone-else'",
        ),
        "unknown key id": (
            provider.mint(good, key=rogue),
            "InvalidAuthenticationToken",
            "signed with the key 'rogue-key', which is not one of the signing keys",
        ),
        "alg none": (provider.mint(good, algorithm=None), "InvalidAuthenticationToken", "algorithm 'none'"),
        "HS256 keyed with the public key": (
            provider.mint_hs256_with_public_key(good),
            "InvalidAuthenticationToken",
            "algorithm 'HS256'",
        ),
        "RS384 with the tenant's key": (
            provider.mint(good, algorithm="RS384"),
            "InvalidAuthenticationToken",
            "algorithm 'RS384'",
        ),
        "tampered payload": (
            provider.tamper(provider.mint(good), roles=["Scheduler.Contributor"]),
            "InvalidAuthenticationToken",
            "invalid signature",
        ),
        "no object id": (
            provider.mint({k: v for k, v in good.items() if k != "oid"}),
            "InvalidAuthenticationToken",
            "no 'oid' claim",
        ),
        "no key id": (
            provider.mint(good, with_kid=False),
            "InvalidAuthenticationToken",
            "names no signing key",
        ),
        "not a JWT": ("eyJub3QganNvbg.eyJ9.c2ln", "InvalidAuthenticationToken", "not a JSON Web Token"),
    }


def test_every_bad_token_is_401_with_an_arm_body_and_a_challenge_and_changes_nothing(
    start: Start, provider: OidcProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="scheduler_core")
    d = start()
    seed(d)
    reader = provider.register("reader", roles=["Scheduler.Reader"])
    # the same reader's good token works (so each refusal below is for the one rule the case breaks)
    good = provider.mint(provider.claims_for(reader, provider.app_id_uri))
    assert d.call("GET", JC_SCOPE, {"Authorization": f"Bearer {good}"}).status_code == 200
    cases = _bad_tokens(provider, reader)
    before = d.snapshot()
    for name, (token, code, message) in cases.items():
        for method, path, body in [
            ("PUT", f"{JC_SCOPE}/jobs/new", JOB_BODY),
            ("DELETE", f"{JC_SCOPE}/jobs/j", None),
            ("GET", f"{JC_SCOPE}/jobs/j", None),
        ]:
            answer = d.call(method, path, {"Authorization": f"Bearer {token}"}, body)
            assert answer.status_code == 401, (name, answer.text)
            error = answer.json()["error"]
            assert error["code"] == code and message in error["message"], (name, error)
            challenge = answer.headers["WWW-Authenticate"]
            assert challenge.startswith('Bearer realm="Microsoft.Scheduler"'), challenge
            assert f'authorization_uri="{provider.base_url}/{provider.tenant}"' in challenge
            assert 'error="invalid_token"' in challenge
    assert d.snapshot() == before
    assert len(provider.requests_to("/discovery/v2.0/keys")) == 1  # the unknown kid did not refetch (rate limit)
    assert "management API: 401" in caplog.text
    for token, _, _ in cases.values():
        assert token not in caplog.text


def test_missing_credentials_are_401_with_a_challenge_naming_the_tenant(start: Start, provider: OidcProvider) -> None:
    d = start()
    answer = d.call("GET", f"subscriptions/{SUB}/providers/Microsoft.Scheduler/jobCollections", {})
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "AuthenticationFailed"
    assert f"Entra ID access token for {provider.app_id_uri}" in answer.json()["error"]["message"]
    assert answer.headers["WWW-Authenticate"] == (
        f'Bearer realm="Microsoft.Scheduler", authorization_uri="{provider.base_url}/{provider.tenant}", '
        f'resource_id="{provider.app_id_uri}"'
    )


# ------------------------------------------------------------------------------------------ the keys


def test_rotated_keys_are_fetched_again_on_an_unknown_kid_at_most_once_per_interval(
    start: Start, provider: OidcProvider
) -> None:
    d = start()
    admin = provider.register("admin", roles=["Scheduler.Contributor"])
    first = d.sdk(admin)
    assert list(first.job_collections.list_by_subscription()) == []
    assert len(provider.requests_to("/discovery/v2.0/keys")) == 1

    provider.rotate()  # the tenant signs with a new key from now on
    rotated = d.sdk(admin)  # a new credential: its token is signed with the new key
    d.clock.advance(60)  # within the refresh interval of the last fetch: the keys are not fetched again
    with pytest.raises(HttpResponseError) as caught:
        list(rotated.job_collections.list_by_subscription())
    assert error_of(caught.value)[:2] == (401, "InvalidAuthenticationToken")
    assert len(provider.requests_to("/discovery/v2.0/keys")) == 1

    d.clock.advance(REFRESH_INTERVAL_SECONDS)  # past the interval
    assert list(rotated.job_collections.list_by_subscription()) == []  # fetched again, the new key found
    assert len(provider.requests_to("/discovery/v2.0/keys")) == 2
    assert list(first.job_collections.list_by_subscription()) == []  # the old key is still published

    rogue = provider.mint(provider.claims_for(admin, provider.app_id_uri), key=SigningKey.new("rogue"))
    for _ in range(5):  # a flood of unknown key ids costs the tenant nothing within the interval
        assert d.call("GET", JC_SCOPE, {"Authorization": f"Bearer {rogue}"}).status_code == 401
    assert len(provider.requests_to("/discovery/v2.0/keys")) == 2


def test_an_unreachable_tenant_is_503_then_retried_after_a_pause(start: Start, provider: OidcProvider) -> None:
    d = start()
    admin = provider.register("admin", roles=["Scheduler.Contributor"])
    token = provider.mint(provider.claims_for(admin, provider.app_id_uri))
    headers = {"Authorization": f"Bearer {token}"}
    provider.failing = True
    answer = d.call("GET", JC_SCOPE, headers)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "ServiceUnavailable"
    asked = len(provider.peer.seen)
    provider.failing = False
    assert d.call("GET", JC_SCOPE, headers).status_code == 503  # not asked again so soon
    assert len(provider.peer.seen) == asked
    d.clock.advance(11)
    assert d.call("GET", JC_SCOPE, headers).status_code == 404  # judged: a Contributor, and no such collection
