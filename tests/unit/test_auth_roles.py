"""Roles, role assignments, keys with roles, the Entra ID settings and the gate's decisions (no I/O: the
token validation itself is exercised against a real OpenID provider in tests/e2e/test_entra_api.py)."""

from __future__ import annotations

import logging

import pytest

from scheduler_core import auth
from scheduler_core.api.handler import _Operation, scope_of
from scheduler_core.api.messages import ApiRequest
from scheduler_core.api.paths import ResourcePath
from scheduler_core.auth.roles import OPERATIONS, Grant, Principal, Role, operation_for, permits
from scheduler_core.errors import AuthenticationError, ConfigurationError, ForbiddenError, MethodNotAllowedError

# Fixed ids: they appear in parametrized test ids, which must be the same in every pytest-xdist worker.
OID = "3554f5a6-acf7-442f-af58-f92b9167bddb"
GROUP = "5c3d10c8-5517-430c-b0e7-6ef72ced7dbf"


# ------------------------------------------------------------------------------------------- API keys


def test_key_entries_without_a_role_are_contributors_as_before() -> None:
    key = auth.generate_key()
    [parsed] = auth.parse_keys(auth.hash_entry(key, ["sub-a"]))
    assert parsed.role == Role.CONTRIBUTOR and parsed.subscriptions == frozenset({"sub-a"})
    assert auth.hash_entry(key) == auth.hash_entry(key, role=Role.CONTRIBUTOR)  # the old format, unchanged
    assert not auth.hash_entry(key).startswith("contributor:")


def test_reader_keys_are_written_and_read_with_their_role() -> None:
    key = auth.generate_key()
    entry = auth.hash_entry(key, ["S1"], role=Role.READER)
    assert entry.startswith("reader:sha256:") and entry.endswith("@S1")
    [parsed] = auth.parse_keys(entry)
    assert parsed.role == Role.READER and parsed.subscriptions == frozenset({"s1"})
    [explicit] = auth.parse_keys("Contributor:" + auth.hash_entry(key))
    assert explicit.role == Role.CONTRIBUTOR
    principal = parsed.principal()
    assert principal.kind == "key" and principal.client == principal.object_id == parsed.key_id
    assert parsed.key_id == f"api-key sha256:{parsed.digest.hex()[:12]}" and key not in parsed.key_id


@pytest.mark.parametrize("entry", ["owner:sha256:" + "0" * 64, "reader:md5:abcd", "reader:" + "0" * 64])
def test_a_bad_role_or_digest_is_a_configuration_error(entry: str) -> None:
    with pytest.raises(ConfigurationError, match=r"SCHEDULER_API_KEYS entry 1: expected '\[reader:\|contributor:\]"):
        auth.parse_keys(entry)


# ---------------------------------------------------------------------------------------- assignments


def test_role_assignments_parse_roles_kinds_and_subscriptions() -> None:
    text = f"reader:group:{GROUP.upper()}@Sub1,sub2 ; Contributor:oid:{OID} ; reader:approle:Ops.Read@*"
    group, oid, approle = auth.parse_assignments(text)
    assert (group.role, group.kind, group.value, group.subscriptions) == (
        Role.READER,
        "group",
        GROUP,
        frozenset({"sub1", "sub2"}),
    )
    assert (oid.role, oid.kind, oid.value, oid.subscriptions) == (Role.CONTRIBUTOR, "oid", OID, None)
    assert (approle.kind, approle.value, approle.subscriptions) == ("approle", "Ops.Read", None)
    assert auth.parse_assignments(" ; ") == ()


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("reader:oid", "expected '<reader|contributor>:<oid|group|approle>:<value>"),
        (f"owner:oid:{OID}", "the role must be 'reader' or 'contributor', got 'owner'"),
        (f"reader:user:{OID}", "the principal kind must be one of oid, group, approle, got 'user'"),
        ("reader:oid:alice@contoso.com", "a oid must be an object id (a GUID), got 'alice'"),
        ("reader:group:admins", "a group must be an object id (a GUID), got 'admins'"),
        ("reader:approle:Two Words", "an approle must be an app role value without spaces"),
    ],
)
def test_bad_role_assignments_name_the_setting_the_entry_and_the_rule(text: str, rule: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        auth.parse_assignments(f"reader:oid:{OID};{text}")
    assert caught.value.message.startswith("setting SCHEDULER_ROLE_ASSIGNMENTS entry 2: ")
    assert rule in caught.value.message


# ------------------------------------------------------------------------------------- Entra settings


def test_entra_settings_parse_and_tokens_are_off_without_a_tenant() -> None:
    assert auth.parse_entra("https://login.microsoftonline.com", "", "") is None
    config = auth.parse_entra("https://login.microsoftonline.com/", " contoso.onmicrosoft.com ", "api://s; abc,api://s")
    assert config is not None
    assert config.audiences == ("api://s", "abc") and config.tenant == "contoso.onmicrosoft.com"
    assert config.authorization_uri == "https://login.microsoftonline.com/contoso.onmicrosoft.com"
    assert config.discovery_urls == (
        "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0/.well-known/openid-configuration",
        "https://login.microsoftonline.com/contoso.onmicrosoft.com/.well-known/openid-configuration",
    )


@pytest.mark.parametrize(
    ("authority", "tenant", "audiences", "message"),
    [
        ("https://login.test", "", "api://s", "setting SCHEDULER_ENTRA_AUDIENCES is set but SCHEDULER_ENTRA_TENANT_ID"),
        ("https://login.test", "common", "api://s", "setting SCHEDULER_ENTRA_TENANT_ID must be one tenant"),
        ("https://login.test", "Organizations", "api://s", "must be one tenant"),
        ("https://login.test", "a/b", "api://s", "must be one tenant"),
        ("https://login.test", OID, " ", "setting SCHEDULER_ENTRA_AUDIENCES must list the accepted token audiences"),
        ("http://login.test", OID, "api://s", "the Entra ID authority must be an https URL"),
    ],
)
def test_bad_entra_settings_are_configuration_errors(authority: str, tenant: str, audiences: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        auth.parse_entra(authority, tenant, audiences)


def test_role_assignments_need_a_tenant() -> None:
    with pytest.raises(ConfigurationError, match="SCHEDULER_ROLE_ASSIGNMENTS is set but SCHEDULER_ENTRA_TENANT_ID"):
        auth.build_gate("", role_assignments=f"reader:oid:{OID}")
    gate = auth.build_gate("", tenant=OID, audiences="api://s", role_assignments=f"reader:oid:{OID}")
    assert gate.entra is not None and gate.entra.config.audiences == ("api://s",) and len(gate.assignments) == 1


# ----------------------------------------------------------------------------------------- operations


def _request(method: str) -> ApiRequest:
    return ApiRequest(method, "http://h/x", "x", {}, {}, b"")


PATHS = {
    "subscription_collections": ResourcePath("subscription_collections", "s"),
    "group_collections": ResourcePath("group_collections", "s", "rg"),
    "collection": ResourcePath("collection", "s", "rg", "jc"),
    "collection_action": ResourcePath("collection_action", "s", "rg", "jc", action="enable"),
    "jobs": ResourcePath("jobs", "s", "rg", "jc"),
    "job": ResourcePath("job", "s", "rg", "jc", "j"),
    "job_run": ResourcePath("job_run", "s", "rg", "jc", "j"),
    "job_history": ResourcePath("job_history", "s", "rg", "jc", "j"),
}


@pytest.mark.parametrize("kind", sorted(PATHS))
@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE", "POST", "HEAD"])
def test_every_operation_the_api_runs_has_an_action_and_only_reads_are_for_readers(kind: str, method: str) -> None:
    path = PATHS[kind]
    operation = _Operation(None, _request(method), path)  # type: ignore[arg-type]  # no service is called
    try:
        operation.handler()
        runs = True
    except MethodNotAllowedError:
        runs = False
    listed = (kind, method, path.action) in OPERATIONS
    assert runs == listed, (kind, method)
    found = operation_for(kind, method, path.action)
    assert found.action.startswith("Microsoft.Scheduler/jobCollections/")
    assert (found.role == Role.READER) == (runs and method == "GET")


def test_collection_actions_and_scopes() -> None:
    assert operation_for("collection_action", "POST", "disable").action == (
        "Microsoft.Scheduler/jobCollections/disable/action"
    )
    assert operation_for("job_history", "get").action == "Microsoft.Scheduler/jobCollections/jobs/jobHistories/read"
    jc = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
    assert [scope_of(PATHS[k]) for k in sorted(PATHS)] == [
        jc,
        jc,
        "/subscriptions/s/resourceGroups/rg",
        f"{jc}/jobs/j",
        f"{jc}/jobs/j",
        f"{jc}/jobs/j",
        f"{jc}/jobs",
        "/subscriptions/s",
    ]


def test_roles_are_held_over_subscriptions_and_the_highest_counts() -> None:
    principal = Principal("entra", OID, OID, (Grant(Role.READER, None), Grant(Role.CONTRIBUTOR, frozenset({"sub-a"}))))
    assert principal.role_in("SUB-A") == Role.CONTRIBUTOR and principal.role_in("sub-b") == Role.READER
    write = operation_for("job", "PUT")
    assert permits(principal, write, "sub-a") and not permits(principal, write, "sub-b")
    assert permits(principal, operation_for("job", "GET"), "sub-b")
    assert Principal("entra", OID, OID, ()).role_in("sub-a") is None


# ------------------------------------------------------------------------------------------ the gate


def test_the_principal_of_a_token_gets_app_roles_and_matching_assignments() -> None:
    gate = auth.build_gate(
        "",
        tenant=OID,
        audiences="api://s",
        role_assignments=f"contributor:group:{GROUP}@sub-a;reader:approle:Custom.Viewer@sub-b;reader:oid:{OID}@sub-c",
    )
    user = gate.principal_from_claims(
        {"oid": OID.upper(), "upn": "alice@contoso.com", "roles": ["Scheduler.Reader"], "groups": [GROUP.upper()]}
    )
    assert user.client == "alice@contoso.com" and user.object_id == OID
    assert [g.describe() for g in user.grants] == [
        "Reader on every subscription",
        "Contributor on sub-a",
        "Reader on sub-c",
    ]
    app = gate.principal_from_claims({"oid": OID, "roles": ["Custom.Viewer", "Scheduler.Admin"], "groups": "x"})
    assert app.client == OID and [g.describe() for g in app.grants] == ["Reader on sub-b", "Reader on sub-c"]


def test_refusals_are_in_arms_words_and_name_the_subscription_when_no_role_is_held_there(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="scheduler_core.auth")
    gate = auth.Gate(())
    reader = Principal("entra", "alice@contoso.com", OID, (Grant(Role.READER, frozenset({"s"})),))
    scope = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j"
    with pytest.raises(ForbiddenError) as caught:
        gate.authorize(reader, operation_for("job", "DELETE"), "s", scope)
    assert caught.value.code == "AuthorizationFailed" and caught.value.status == 403
    assert caught.value.message == (
        f"The client 'alice@contoso.com' with object id '{OID}' does not have authorization to perform action "
        f"'Microsoft.Scheduler/jobCollections/jobs/delete' over scope '{scope}' or the scope is invalid. If access "
        "was recently granted, please refresh your credentials."
    )
    with pytest.raises(ForbiddenError) as caught:
        gate.authorize(reader, operation_for("job", "GET"), "other", scope.replace("/s/", "/other/"))
    assert "over scope '/subscriptions/other' or" in caught.value.message and "jc" not in caught.value.message
    gate.authorize(reader, operation_for("job", "GET"), "S", scope)
    assert "403 alice@contoso.com (object id" in caplog.text and "holds: Reader on s" in caplog.text
    assert f"alice@contoso.com (object id {OID}) performs Microsoft.Scheduler/jobCollections/jobs/read" in caplog.text


def test_without_a_tenant_a_jwt_is_refused_and_keys_work_in_both_headers() -> None:
    key = auth.generate_key()
    gate = auth.Gate(auth.parse_keys(auth.hash_entry(key, role=Role.READER)))
    assert gate.authenticate({"Authorization": f"Bearer {key}"}).grants == (Grant(Role.READER, None),)
    jwt_shaped = "eyJhbGciOiJSUzI1NiJ9.eyJvaWQiOiJ4In0.c2ln"
    assert gate.authenticate({"authorization": f"bearer {jwt_shaped}", "X-Functions-Key": key}).kind == "key"
    with pytest.raises(auth.InvalidTokenError, match="not accepted by this deployment"):
        gate.authenticate({"Authorization": f"Bearer {jwt_shaped}"})
    with pytest.raises(auth.MissingCredentialsError, match="authentication required"):
        gate.authenticate({"Authorization": "Basic abc"})
    with pytest.raises(AuthenticationError, match="the API key is not valid"):
        gate.authenticate({"x-functions-key": "sks_wrong"})


def test_challenges_follow_rfc_6750_and_carry_no_quotes_of_their_own() -> None:
    keys_only = auth.Gate(())
    assert keys_only.challenge(auth.MissingCredentialsError("x")) == 'Bearer realm="Microsoft.Scheduler"'
    assert keys_only.challenge(AuthenticationError('bad "key" \\ é\n')) == (
        'Bearer realm="Microsoft.Scheduler", error="invalid_token", error_description="bad \'key\' ? ??"'
    )
    entra = auth.build_gate("", authority="https://login.test", tenant="t1", audiences="api://s;cid")
    assert entra.challenge(auth.ExpiredTokenError("The access token expiry ...")) == (
        'Bearer realm="Microsoft.Scheduler", authorization_uri="https://login.test/t1", resource_id="api://s", '
        'error="invalid_token", error_description="The access token expiry ..."'
    )
    assert "Entra ID access token for api://s" in str(entra._missing_message())
