"""In a real browser: the collections view's status panel shows this instance's health (storage reachable,
the dispatch heartbeat's age, queue depths) and the subscription's live counts, which follow a job's
execution without a reload; and the Entra ID sign-in: a token of the local tenant (tests/support/oidc.py)
pasted into the page is sent as ``Authorization: Bearer``, kept in session storage under its own item,
validated by the service (issue 17), and an expired one is reported with the service's message."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from local_host.azurite import free_port
from local_host.runtime import LocalHost
from scheduler_core import auth, settings, wiring
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.api.handler import ApiServices
from scheduler_core.recurrence import format_instant
from scheduler_core.settings import Settings
from tests.browser.conftest import COLLECTION, ROOT, Dashboard, chromium_path, node_path, run_scenario
from tests.e2e.conftest import Api
from tests.e2e.test_entra_api import provider, test_ca
from tests.support.http_target import http_target
from tests.support.jobs import http_action
from tests.support.oidc import OidcProvider

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

__all__ = ["provider", "test_ca"]  # the local tenant's fixtures of the Entra ID API tests, used here too

#: How far ahead the job is due: the browser signs in and reads the panel before it fires (in about 2 s, on
#: a machine running other tests; a later reading counts the execution already, which the test allows).
LEAD = timedelta(seconds=8)


def test_status_panel_shows_health_and_live_counts(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    with http_target() as target:
        due = (datetime.now(UTC) + LEAD).replace(microsecond=0)
        action = http_action(f"{target.base_url}/go", body=None)
        dashboard.put_job("soon", {"startTime": format_instant(due), "action": action})
        dashboard.put_job("off", {"action": action, "state": "Disabled"})
        seen = run_scenario(dashboard, "serviceStatus", executions=1)
        assert len(target.received) == 1
        called = target.received[0].at

    health = seen["health"]
    assert health["Health"].startswith("Healthy")  # the host's timer ran the dispatch tick when it started
    assert health["Storage"] == "reachable"
    assert re.fullmatch(r"[\d.]+ s ago \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)", health["Last dispatch heartbeat"])
    assert re.fullmatch(r"\d+ messages?", health["Execution queue"])
    assert health["Poison queue"] == "0 messages"
    assert seen["warnings"] == []

    before, after = seen["countsBefore"], seen["countsAfter"]
    assert before["Executions"] in ("0", "1")  # 0 unless the browser took over 8 s to get there
    ran = before["Executions"] == "1"  # then the one-time job has run and is finished
    assert (before["Collections"], before["Jobs"], before["Enabled"], before["Disabled"]) == (
        "1",
        "2",
        "0" if ran else "1",
        "1",
    )
    # Before the job's call it is due within 60 s; once counted, not. In between (its one attempt running: a second
    # or more on a loaded machine) it is neither due nor counted: only when the call came before the counts were read.
    if before["Due within 60 s"] == "0" and not ran:
        assert called < seen["countsBeforeAt"], (called, seen["countsBeforeAt"])
    else:
        assert before["Due within 60 s"] == ("0" if ran else "1")
    assert (after["Executions"], after["Failures"], after["Faulted"]) == ("1", "0", "0")
    # A one-time job that ran is finished: the counts say so, as the API does.
    states = {job: dashboard.job(job)["properties"]["state"] for job in ("soon", "off")}
    assert (after["Enabled"], after["Completed"]) == (
        str(list(states.values()).count("Enabled")),
        str(list(states.values()).count("Completed")),
    )
    assert seen["sameDocument"] is True
    assert (dashboard.screenshots / "status.png").stat().st_size > 10_000


@pytest.fixture
def entra_dashboard(
    storage_env: Settings, provider: OidcProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Dashboard]:
    """The function app (every trigger) whose API accepts the local tenant's tokens (issue 17's gate, set up
    as tests/e2e/test_entra_api.py does) besides its API key."""
    import function_app

    chromium_path()
    node_path()
    key = auth.generate_key()
    keys_text = auth.hash_entry(key)
    monkeypatch.setenv("SCHEDULER_API_KEYS", keys_text)
    provision(storage_env)
    gate = auth.build_gate(
        keys_text,
        authority=provider.base_url,
        tenant=provider.tenant,
        audiences=f"{provider.app_id_uri};{provider.api_client_id}",
    )
    built = wiring.build(settings.load())
    wiring.install(dataclasses.replace(built, api=ApiServices(built.service, gate.keys, gate)))
    with LocalHost(function_app.app, ROOT / "host.json", port=free_port()) as host:
        shots = tmp_path / "screenshots"
        shots.mkdir()
        yield Dashboard(Api(host.base_url, key, storage_env), shots)
    wiring.reset()


def test_token_sign_in_sends_the_token_as_a_bearer(entra_dashboard: Dashboard, provider: OidcProvider) -> None:
    dashboard = entra_dashboard
    dashboard.put_collection()
    reader = provider.register("dashboard-reader", roles=["Scheduler.Reader"])
    expired = provider.claims_for(reader, provider.app_id_uri)
    expired.update(exp=int(time.time()) - 600, nbf=int(time.time()) - 4200, iat=int(time.time()) - 4200)
    refused = provider.mint(expired)
    accepted = provider.mint(provider.claims_for(reader, provider.app_id_uri))
    seen = run_scenario(dashboard, "tokenSignIn", refusedToken=refused, acceptedToken=accepted)

    assert seen["keyFieldHidden"] is True
    assert seen["refused"].startswith("This access token was not accepted: ")
    assert "The access token expiry UTC time" in seen["refused"]  # the service's 401 message, as ARM words it
    assert seen["storedAfterRefusal"] == []
    assert seen["authorizations"][0] == f"Bearer {refused}"
    assert set(seen["authorizations"][1:]) == {f"Bearer {accepted}"}
    assert len(seen["authorizations"]) >= 2
    assert seen["stored"] == {"token": accepted, "key": None}
    # Signed in with the token, the page read the subscription's collections and the status API (a Reader may).
    assert seen["collections"] == [COLLECTION]
    assert seen["health"].startswith(("Healthy", "Degraded"))
    assert seen["tokenChosenAfterSignOut"] is True
    assert seen["storedAfterSignOut"] is None

    # The dashboard's own API checks a token as the management API does: a Reader may read, no role may not.
    later = format_instant(datetime.now(UTC) + timedelta(days=1))
    dashboard.put_job("j", {"startTime": later, "action": http_action("https://example.org", method="GET", body=None)})
    nobody = provider.mint(provider.claims_for(provider.register("nobody"), provider.app_id_uri))
    base = f"{dashboard.api.base_url}/dashboard/api"
    status_url = f"{base}/status/{dashboard.collection_path().split('/resourceGroups/')[0]}"
    status_url += "/providers/Microsoft.Scheduler/jobCollections"
    job_url = f"{base}/job/{dashboard.job_path('j')}?count=2"
    for url in (status_url, job_url):
        assert requests.get(url, headers={"Authorization": f"Bearer {accepted}"}, timeout=30).status_code == 200
        denied = requests.get(url, headers={"Authorization": f"Bearer {nobody}"}, timeout=30)
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "AuthorizationFailed"
        late = requests.get(url, headers={"Authorization": f"Bearer {refused}"}, timeout=30)
        assert late.status_code == 401 and late.headers["WWW-Authenticate"].startswith("Bearer ")
