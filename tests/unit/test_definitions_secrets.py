"""Write-only secrets of job definitions: split out, never shown, kept across updates only while their
identity is unchanged; ClientCertificate PFX handling."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from scheduler_core.definitions import JobSpec, merge_patch, parse_job, restore_secrets
from scheduler_core.errors import ValidationError

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
URI = "https://example.org/hook"
AUTH = "properties.action.request.authentication"


def parse(data: dict[str, Any], previous: JobSpec | None = None) -> JobSpec:
    return parse_job(data, previous=previous.definition if previous else None, now=NOW)


def http_job(authentication: dict[str, Any] | None, uri: str = URI, **action: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"uri": uri, "method": "POST"}
    if authentication is not None:
        request["authentication"] = authentication
    return {"properties": {"action": {"type": "Http", "request": request, **action}}}


def put_back(spec: JobSpec, change: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a client sends after a GET: the output (no secrets), with ``change`` merged in."""
    return merge_patch({"properties": spec.properties}, change or {})


def rejects(data: dict[str, Any], path: str, previous: JobSpec | None = None) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        parse(data, previous)
    assert caught.value.path == path, caught.value.message
    return caught.value


BASIC = {"type": "Basic", "username": "alice", "password": "SECRET-1"}
OAUTH = {
    "type": "ActiveDirectoryOAuth",
    "tenant": "Contoso.onmicrosoft.com",
    "audience": "https://management.core.windows.net/",
    "clientId": "AAAA-1111",
    "secret": "SECRET-2",
}


# ------------------------------------------------------------------------------------ splitting


def test_secrets_are_split_out_by_dotted_path() -> None:
    error_action = {
        "type": "StorageQueue",
        "queueMessage": {"storageAccount": "acct", "queueName": "errs", "message": "", "sasToken": "SECRET-3"},
    }
    spec = parse(http_job(BASIC, errorAction=error_action))
    assert spec.secrets == {
        "action.request.authentication.password": "SECRET-1",
        "action.errorAction.queueMessage.sasToken": "SECRET-3",
    }
    assert "SECRET" not in json.dumps(spec.properties)
    assert "SECRET" not in repr(spec)
    assert "password" not in spec.properties["action"]["request"]["authentication"]
    assert "sasToken" not in spec.properties["action"]["errorAction"]["queueMessage"]


# --------------------------------------------------------------------------------- preservation


def test_basic_password_is_kept_while_username_and_host_stay() -> None:
    stored = parse(http_job(BASIC))
    same = parse(put_back(stored), previous=stored)
    assert same.secrets == stored.secrets
    other_path = parse(
        put_back(stored, {"properties": {"action": {"request": {"uri": "https://EXAMPLE.org:443/other"}}}}),
        previous=stored,
    )
    assert other_path.secrets == stored.secrets
    state_only = parse(put_back(stored, {"properties": {"state": "Disabled"}}), previous=stored)
    assert state_only.secrets == stored.secrets
    assert state_only.state == "Disabled"


def test_basic_password_is_not_kept_for_another_user_or_host() -> None:
    stored = parse(http_job(BASIC))
    other_user = put_back(stored, {"properties": {"action": {"request": {"authentication": {"username": "bob"}}}}})
    error = rejects(other_user, f"{AUTH}.password", previous=stored)
    assert "'Username' and 'Password' are required for 'Basic' type of Authentication." in error.message
    other_host = put_back(stored, {"properties": {"action": {"request": {"uri": "https://evil.example.net/"}}}})
    rejects(other_host, f"{AUTH}.password", previous=stored)
    other_port = put_back(stored, {"properties": {"action": {"request": {"uri": "https://example.org:8443/hook"}}}})
    rejects(other_port, f"{AUTH}.password", previous=stored)
    other_scheme = put_back(stored, {"properties": {"action": {"request": {"uri": "http://example.org/hook"}}}})
    rejects(other_scheme, f"{AUTH}.password", previous=stored)
    # without a previous job there is nothing to keep
    rejects(put_back(stored), f"{AUTH}.password")


def test_a_new_secret_replaces_the_stored_one() -> None:
    stored = parse(http_job(BASIC))
    changed = parse(
        put_back(stored, {"properties": {"action": {"request": {"authentication": {"password": "SECRET-NEW"}}}}}),
        previous=stored,
    )
    assert changed.secrets == {"action.request.authentication.password": "SECRET-NEW"}


def test_authentication_null_removes_it_and_its_secret() -> None:
    stored = parse(http_job(BASIC))
    removed = parse(
        put_back(stored, {"properties": {"action": {"request": {"authentication": None}}}}), previous=stored
    )
    assert "authentication" not in removed.properties["action"]["request"]
    assert removed.secrets == {}
    assert not removed.uses_authentication


def test_another_auth_type_never_inherits_a_secret() -> None:
    stored = parse(http_job(BASIC))
    switched = put_back(stored, {"properties": {"action": {"request": {"authentication": None}}}})
    switched["properties"]["action"]["request"]["authentication"] = {k: v for k, v in OAUTH.items() if k != "secret"}
    rejects(switched, f"{AUTH}.secret", previous=stored)


def test_switching_auth_type_in_a_patch_reports_the_leftover_field() -> None:
    stored = parse(http_job(BASIC))
    patched = put_back(stored, {"properties": {"action": {"request": {"authentication": OAUTH}}}})
    error = rejects(patched, f"{AUTH}.username", previous=stored)
    assert "ActiveDirectoryOAuth" in error.message


def test_oauth_secret_is_kept_for_the_same_tenant_and_client() -> None:
    stored = parse(http_job(OAUTH))
    recased = put_back(
        stored,
        {
            "properties": {
                "action": {
                    "request": {"authentication": {"tenant": "contoso.ONMICROSOFT.com", "clientId": "aaaa-1111"}}
                }
            }
        },
    )
    assert parse(recased, previous=stored).secrets == {"action.request.authentication.secret": "SECRET-2"}
    audience = put_back(
        stored, {"properties": {"action": {"request": {"authentication": {"audience": "https://vault.azure.net"}}}}}
    )
    assert parse(audience, previous=stored).secrets == stored.secrets
    other_client = put_back(stored, {"properties": {"action": {"request": {"authentication": {"clientId": "BBBB"}}}}})
    rejects(other_client, f"{AUTH}.secret", previous=stored)
    other_tenant = put_back(
        stored, {"properties": {"action": {"request": {"authentication": {"tenant": "fabrikam.com"}}}}}
    )
    rejects(other_tenant, f"{AUTH}.secret", previous=stored)


def test_http_and_https_are_the_same_kind_of_action() -> None:
    stored = parse(http_job(BASIC))
    assert (
        parse(put_back(stored, {"properties": {"action": {"type": "https"}}}), previous=stored).secrets
        == stored.secrets
    )


def test_storage_sas_token_is_kept_for_the_same_account_and_queue() -> None:
    message = {"storageAccount": "acct", "queueName": "jobs", "message": "m", "sasToken": "SECRET-SAS"}
    stored = parse({"properties": {"action": {"type": "StorageQueue", "queueMessage": message}}})
    assert parse(put_back(stored), previous=stored).secrets == {"action.queueMessage.sasToken": "SECRET-SAS"}
    recased = put_back(
        stored, {"properties": {"action": {"queueMessage": {"storageAccount": "ACCT", "message": "new"}}}}
    )
    assert parse(recased, previous=stored).secrets == stored.secrets
    # the token is optional: for another queue it is simply not carried over
    moved = put_back(stored, {"properties": {"action": {"queueMessage": {"queueName": "other"}}}})
    assert parse(moved, previous=stored).secrets == {}
    other_account = put_back(stored, {"properties": {"action": {"queueMessage": {"storageAccount": "acct2"}}}})
    assert parse(other_account, previous=stored).secrets == {}


@pytest.mark.parametrize("kind", ["serviceBusQueueMessage", "serviceBusTopicMessage"])
def test_service_bus_sas_key_is_kept_for_the_same_namespace_and_key_name(kind: str) -> None:
    entity = {"queueName": "q"} if kind == "serviceBusQueueMessage" else {"topicPath": "t"}
    message = {
        "namespace": "ns",
        **entity,
        "authentication": {"type": "sharedAccessKey", "sasKeyName": "send", "sasKey": "SECRET-SB"},
    }
    action_type = "ServiceBusQueue" if kind == "serviceBusQueueMessage" else "ServiceBusTopic"
    stored = parse({"properties": {"action": {"type": action_type, kind: message}}})
    key = f"action.{kind}.authentication.sasKey"
    assert stored.secrets == {key: "SECRET-SB"}
    assert parse(put_back(stored), previous=stored).secrets == stored.secrets
    assert (
        parse(put_back(stored, {"properties": {"action": {kind: {"namespace": "NS"}}}}), previous=stored).secrets
        == stored.secrets
    )
    assert (
        parse(put_back(stored, {"properties": {"action": {kind: {"namespace": "ns2"}}}}), previous=stored).secrets == {}
    )
    renamed = put_back(stored, {"properties": {"action": {kind: {"authentication": {"sasKeyName": "listen"}}}}})
    assert parse(renamed, previous=stored).secrets == {}


def test_another_action_type_never_inherits_secrets() -> None:
    stored = parse(
        {
            "properties": {
                "action": {
                    "type": "StorageQueue",
                    "queueMessage": {"storageAccount": "acct", "queueName": "jobs", "message": "", "sasToken": "S"},
                }
            }
        }
    )
    moved = {
        "properties": {
            "action": {
                "type": "Http",
                "request": {"uri": URI, "method": "GET", "authentication": {"type": "Basic", "username": "u"}},
            }
        }
    }
    rejects(moved, f"{AUTH}.password", previous=stored)


def test_error_action_secrets_are_kept_on_their_own() -> None:
    error_action = {
        "type": "Http",
        "request": {
            "uri": "https://errors.example.org/",
            "method": "POST",
            "authentication": {**BASIC, "password": "SECRET-E"},
        },
    }
    stored = parse(http_job(BASIC, errorAction=error_action))
    again = parse(put_back(stored), previous=stored)
    assert again.secrets == {
        "action.request.authentication.password": "SECRET-1",
        "action.errorAction.request.authentication.password": "SECRET-E",
    }
    # the main action's password is never used for the error action
    only_main = parse(http_job(BASIC))
    with_error = put_back(
        only_main,
        {
            "properties": {
                "action": {
                    "errorAction": {
                        "type": "Http",
                        "request": {
                            "uri": URI,
                            "method": "POST",
                            "authentication": {"type": "Basic", "username": "alice"},
                        },
                    }
                }
            }
        },
    )
    rejects(with_error, "properties.action.errorAction.request.authentication.password", previous=only_main)


# ---------------------------------------------------------------------------- never in messages

LEAKY_BODIES = [
    http_job({**BASIC, "password": "SECRET-LEAK", "username": ""}),
    http_job({**BASIC, "password": "SECRET-LEAK", "extra": 1}),
    http_job({**BASIC, "password": ["SECRET-LEAK"]}),
    http_job({**OAUTH, "secret": "SECRET-LEAK", "tenant": 5}),
    http_job({"type": "SECRET-LEAK-" + "x" * 40, "password": "SECRET-LEAK"}),
    http_job({"type": "ClientCertificate", "pfx": "SECRET-LEAK", "password": "SECRET-LEAK"}),
    http_job(
        {"type": "ClientCertificate", "pfx": base64.b64encode(b"SECRET-LEAK").decode(), "password": "SECRET-LEAK"}
    ),
    http_job(BASIC | {"password": "SECRET-LEAK"}, uri="https://example.org/?sig=SECRET-LEAK x"),
    http_job(BASIC | {"password": "SECRET-LEAK"}, uri="ftp://u:SECRET-LEAK@example.org/"),
    {
        "properties": {
            "action": {
                "type": "StorageQueue",
                "queueMessage": {"storageAccount": "acct", "queueName": "q", "message": "", "sasToken": "SECRET-LEAK"},
            }
        }
    },
    {
        "properties": {
            "action": {
                "type": "StorageQueue",
                "queueMessage": {"storageAccount": "acct", "queueName": "jobs", "sasToken": {"v": "SECRET-LEAK"}},
            }
        }
    },
    {
        "properties": {
            "action": {
                "type": "ServiceBusQueue",
                "serviceBusQueueMessage": {
                    "namespace": "ns",
                    "queueName": "q",
                    "authentication": {"type": "NotSpecified", "sasKey": "SECRET-LEAK"},
                },
            }
        }
    },
    {
        "properties": {
            "action": {
                "type": "ServiceBusQueue",
                "serviceBusQueueMessage": {
                    "namespace": "ns",
                    "queueName": "q",
                    "authentication": {"type": "SharedAccessKey", "sasKey": "SECRET-LEAK"},
                },
            }
        }
    },
]


@pytest.mark.parametrize("data", LEAKY_BODIES)
def test_errors_never_contain_a_secret(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        parse(data)
    assert "SECRET-LEAK" not in caught.value.message
    assert "SECRET-LEAK" not in str(caught.value)
    assert caught.value.path.startswith("properties.action")


def test_short_enum_values_are_quoted_to_help_the_client() -> None:
    with pytest.raises(ValidationError) as caught:
        parse(http_job({"type": "Digest"}))
    assert "'Digest'" in caught.value.message


# ---------------------------------------------------------------------------------- certificates


def make_pfx(password: bytes | None, days: int = 365, with_cert: bool = True) -> tuple[str, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Contoso"),
            x509.NameAttribute(NameOID.COMMON_NAME, "scheduler-test"),
        ]
    )
    start = datetime(2029, 1, 1, tzinfo=UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + timedelta(days=days))
        .sign(key, hashes.SHA256())
    )
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    data = pkcs12.serialize_key_and_certificates(b"test", key, cert if with_cert else None, None, encryption)
    return base64.b64encode(data).decode(), cert


@pytest.fixture(scope="module")
def pfx() -> tuple[str, x509.Certificate]:
    return make_pfx(b"pfx-pass")


def cert_auth(pfx_text: str | None, password: str | None = None, **extra: Any) -> dict[str, Any]:
    auth: dict[str, Any] = {"type": "clientcertificate", **extra}
    if pfx_text is not None:
        auth["pfx"] = pfx_text
    if password is not None:
        auth["password"] = password
    return auth


def test_client_certificate_derives_its_public_facts(pfx: tuple[str, x509.Certificate]) -> None:
    text, cert = pfx
    spec = parse(http_job(cert_auth(text, "pfx-pass")))
    auth = spec.properties["action"]["request"]["authentication"]
    assert auth == {
        "type": "ClientCertificate",
        "certificateThumbprint": cert.fingerprint(hashes.SHA1()).hex().upper(),
        "certificateSubjectName": "CN=scheduler-test, O=Contoso",
        "certificateExpirationDate": "2030-01-01T00:00:00Z",
    }
    assert spec.secrets == {
        "action.request.authentication.pfx": text,
        "action.request.authentication.password": "pfx-pass",
    }
    assert spec.uses_authentication
    assert parse({"properties": restore_secrets(spec.properties, spec.secrets)}) == spec


def test_wrong_or_missing_pfx_password_is_a_400(pfx: tuple[str, x509.Certificate]) -> None:
    text, _ = pfx
    error = rejects(http_job(cert_auth(text, "wrong")), f"{AUTH}.pfx")
    assert error.status == 400
    assert "password" in error.message
    assert "wrong" not in error.message.replace("a wrong password", "")
    rejects(http_job(cert_auth(text)), f"{AUTH}.pfx")


def test_pfx_without_password(pfx: tuple[str, x509.Certificate]) -> None:
    text, _ = make_pfx(None)
    spec = parse(http_job(cert_auth(text)))
    assert spec.secrets == {"action.request.authentication.pfx": text}
    assert parse(http_job(cert_auth(text, ""))).secrets == spec.secrets


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("not base64!", "base64"),
        (base64.b64encode(b"garbage").decode(), "could not be opened"),
        ("", "base64"),
    ],
)
def test_bad_pfx(value: str, words: str) -> None:
    assert words in rejects(http_job(cert_auth(value, "x")), f"{AUTH}.pfx").message


def test_pfx_without_certificate() -> None:
    text, _ = make_pfx(b"pw", with_cert=False)
    assert "certificate" in rejects(http_job(cert_auth(text, "pw")), f"{AUTH}.pfx").message


def test_stored_certificate_is_kept_while_the_thumbprint_stays(pfx: tuple[str, x509.Certificate]) -> None:
    text, _ = pfx
    stored = parse(http_job(cert_auth(text, "pfx-pass")))
    # the GET output echoes the read-only facts (and old docs call one of them certificateExpiration)
    echoed = put_back(stored)
    echoed["properties"]["action"]["request"]["authentication"]["certificateExpiration"] = "2030-01-01T00:00:00Z"
    assert parse(echoed, previous=stored) == stored
    bare = put_back(stored)
    auth = bare["properties"]["action"]["request"]["authentication"]
    del auth["certificateThumbprint"], auth["certificateSubjectName"], auth["certificateExpirationDate"]
    assert parse(bare, previous=stored) == stored
    # another thumbprint claimed without a pfx: no certificate to use
    claimed = put_back(
        stored, {"properties": {"action": {"request": {"authentication": {"certificateThumbprint": "00FF"}}}}}
    )
    rejects(claimed, f"{AUTH}.pfx", previous=stored)
    # a new password for the stored pfx must open it
    rejects(
        put_back(stored, {"properties": {"action": {"request": {"authentication": {"password": "nope"}}}}}),
        f"{AUTH}.pfx",
        previous=stored,
    )


def test_a_new_pfx_replaces_the_stored_one(pfx: tuple[str, x509.Certificate]) -> None:
    text, _ = pfx
    stored = parse(http_job(cert_auth(text, "pfx-pass")))
    other_text, other_cert = make_pfx(b"other", days=30)
    replaced = copy.deepcopy(put_back(stored))
    replaced["properties"]["action"]["request"]["authentication"].update({"pfx": other_text, "password": "other"})
    spec = parse(replaced, previous=stored)
    assert (
        spec.properties["action"]["request"]["authentication"]["certificateThumbprint"]
        == other_cert.fingerprint(hashes.SHA1()).hex().upper()
    )
    assert spec.secrets == {
        "action.request.authentication.pfx": other_text,
        "action.request.authentication.password": "other",
    }
