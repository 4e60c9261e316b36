"""ENTRA ID SIGN-IN of the command line, for real: ``--entra-scope`` (or ``SCHEDULER_ENTRA_SCOPE``) gets an
access token from azure-identity's ``DefaultAzureCredential`` and sends it as ``Authorization: Bearer``.

The tenant is the local OpenID provider of ``tests/support/oidc.py`` (over TLS with a test CA);
``DefaultAzureCredential`` finds the client secret in the environment variables a service principal sets
(``AZURE_TENANT_ID``, ``AZURE_CLIENT_ID``, ``AZURE_CLIENT_SECRET``, ``AZURE_AUTHORITY_HOST``); the function app
runs on the local host behind an https front and validates the token (``scheduler_core.auth``, issue 17).
The rules of the options are checked with a real loopback server that records what it receives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from azure.core.credentials import TokenCredential
from azure.identity import DefaultAzureCredential

from scheduler_core.cli import client as client_module
from scheduler_core.cli import main
from tests.cli.conftest import CLI_VARIABLES
from tests.e2e.test_entra_api import SUB, Deployment, Start, provider, start, test_ca
from tests.support.http_target import HttpTarget, http_target
from tests.support.oidc import Client, OidcProvider

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

__all__ = ["provider", "start", "test_ca"]  # the fixtures of the Entra ID API tests, used here too

RG = "rg-entra"


class Run:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err


def offline_default_credential() -> TokenCredential:
    """``DefaultAzureCredential`` as the command line makes it, but without MSAL's instance discovery (a
    request to login.microsoftonline.com about the authority host, which this machine cannot reach; a real
    tenant's host is one MSAL knows, so it asks nothing)."""
    return DefaultAzureCredential(disable_instance_discovery=True)


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Run:
    monkeypatch.setattr(client_module, "default_credential", offline_default_credential)
    for name in (*CLI_VARIABLES, "SCHEDULER_ENTRA_SCOPE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_AUTHORITY_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .run/api-key of a `make run` here
    return Run(capsys)


def sign_in_as(monkeypatch: pytest.MonkeyPatch, provider: OidcProvider, client: Client) -> None:
    """The environment of a service principal, as DefaultAzureCredential reads it."""
    monkeypatch.setenv("AZURE_TENANT_ID", provider.tenant)
    monkeypatch.setenv("AZURE_CLIENT_ID", client.client_id)
    monkeypatch.setenv("AZURE_CLIENT_SECRET", client.secret)
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", provider.base_url)


def test_commands_sign_in_with_an_entra_id_token(
    start: Start, provider: OidcProvider, run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    d: Deployment = start()
    admin = provider.register("cli-admin", roles=["Scheduler.Contributor"])
    reader = provider.register("cli-reader", roles=["Scheduler.Reader"])
    scope = f"{provider.app_id_uri}/.default"
    common = ["--endpoint", d.https_url, "--subscription", SUB, "-g", RG, "--entra-scope", scope]

    sign_in_as(monkeypatch, provider, admin)
    code, out, err = run("collections", "create", "jc1", "-l", "westus", *common)
    assert (code, out, err) == (0, "created job collection jc1\n", "")
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "action": {"type": "Https", "request": {"uri": "https://example.org/", "method": "GET"}},
                "recurrence": {"frequency": "Hour", "interval": 1},
            }
        )
    )
    assert run("jobs", "create", "jc1/j", "-f", str(job), *common)[0] == 0
    assert len(provider.requests_to("/oauth2/v2.0/token")) == 2  # one token per command, not per request

    # The same with the scope in the environment, as a Reader: reads pass, a write is refused in ARM's words.
    sign_in_as(monkeypatch, provider, reader)
    monkeypatch.setenv("SCHEDULER_ENTRA_SCOPE", scope)
    plain = ["--endpoint", d.https_url, "--subscription", SUB, "-g", RG]
    code, out, _ = run("jobs", "list", "-c", "jc1", "-o", "json", *plain)
    assert code == 0 and [j["name"] for j in json.loads(out)] == ["jc1/j"]
    code, _, err = run("jobs", "pause", "jc1/j", *plain)
    assert code == 4
    assert "'Microsoft.Scheduler/jobCollections/jobs/write'" in err and "(AuthorizationFailed, HTTP 403)" in err

    # A client the tenant does not know: the credential's refusal, exit status 4, nothing sent to the API.
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "wrong")
    code, out, err = run("jobs", "list", "-c", "jc1", *plain)
    assert code == 4 and out == ""
    assert err.startswith(f"error: could not get an Entra ID token for scope {scope}: ")
    assert "wrong" not in err


@pytest.fixture
def recorder() -> Iterator[HttpTarget]:
    with http_target() as target:
        yield target


def test_the_token_is_sent_as_a_bearer_and_no_key_with_it(
    provider: OidcProvider, run: Run, recorder: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real loopback server records what the command sends (it answers text, so the command then fails)."""
    admin = provider.register("cli-recorded", roles=["Scheduler.Contributor"])
    sign_in_as(monkeypatch, provider, admin)
    monkeypatch.setenv("SCHEDULER_SUBSCRIPTION", "s1")
    monkeypatch.setenv("SCHEDULER_API_KEY", "env-key")  # the flag below wins over it
    scope = f"{provider.app_id_uri}/.default"
    code, _, err = run("collections", "list", "--endpoint", recorder.base_url, "--entra-scope", scope)
    assert code == 1 and "the answer is not JSON" in err
    [seen] = recorder.received
    scheme, _, token = seen.headers["Authorization"].partition(" ")
    assert scheme == "Bearer"
    claims = jwt.decode(token, options={"verify_signature": False})
    assert (claims["oid"], claims["aud"], claims["roles"]) == (
        admin.object_id,
        provider.api_client_id,
        ["Scheduler.Contributor"],
    )
    assert "x-functions-key" not in {name.lower() for name in seen.headers}
    assert seen.path == "/subscriptions/s1/providers/Microsoft.Scheduler/jobCollections?api-version=2026-12-01-preview"


def test_the_options_are_judged_before_any_token_or_request(
    run: Run, recorder: HttpTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCHEDULER_SUBSCRIPTION", "s1")
    url = recorder.base_url
    both = run("collections", "list", "--endpoint", url, "--entra-scope", "api://x/.default", "--api-key", "k")
    assert both[0] == 2 and both[2] == (
        "error: pass either an API key (--api-key, --api-key-file) or --entra-scope, not both\n"
    )
    monkeypatch.setenv("SCHEDULER_ENTRA_SCOPE", "api://x/.default")
    monkeypatch.setenv("SCHEDULER_API_KEY", "k")
    env_both = run("collections", "list", "--endpoint", url)
    assert env_both[0] == 2 and "both SCHEDULER_ENTRA_SCOPE and SCHEDULER_API_KEY" in env_both[2]
    monkeypatch.delenv("SCHEDULER_API_KEY")
    remote = run("collections", "list", "--endpoint", "http://scheduler.example.org")
    assert remote[0] == 2
    assert (
        remote[2]
        == "error: an Entra ID token is sent over https only (or to this machine), not to http://scheduler.example.org\n"
    )
    key_header = run("collections", "list", "--endpoint", url, "--functions-key-header")
    assert key_header[0] == 2 and "--functions-key-header" in key_header[2]
    assert recorder.received == []
    # A key flag wins over the scope in the environment: the key is sent, as before.
    run("collections", "list", "--endpoint", url, "--api-key", "flag-key")
    assert [r.headers["Authorization"] for r in recorder.received] == ["Bearer flag-key"]
