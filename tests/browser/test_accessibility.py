"""Accessibility basics, checked by a rules engine in a real browser: axe-core's WCAG 2.1 A and AA rules
(every control labelled, names for links, buttons and images, color contrast, table and list structure, ARIA
used correctly, the page's language) hold on every view of the dashboard (the sign-in form with a key and
with an Entra ID token, the collections with the service status panel) and on the delete dialog. The
keyboard path and focus handling are checked in ``test_browse.py`` and ``test_job_actions.py``."""

from __future__ import annotations

import time

import pytest

from tests.browser.conftest import COLLECTION, GROUP, Dashboard, run_scenario
from tests.support.http_target import http_target
from tests.support.jobs import NO_RETRY, every, http_action

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

VIEWS = ["sign-in", "sign-in with a token", "collections", "jobs", "failing", "job", "delete dialog"]


def test_every_view_passes_the_wcag_rules(dashboard: Dashboard) -> None:
    dashboard.put_collection()
    with http_target([500]) as target:
        action = http_action(target.base_url, method="GET", body=None, retryPolicy=NO_RETRY)
        dashboard.put_job("audited", {"action": action, "recurrence": every("Hour")})
        deadline = time.monotonic() + 30
        while not dashboard.history("audited") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert dashboard.history("audited"), "the job did not run"
        seen = run_scenario(dashboard, "accessibility", job="audited", group=GROUP, collection=COLLECTION)
    assert list(seen["views"]) == [*VIEWS, "probe"]
    assert any(violation.startswith("label (critical)") for violation in seen["views"]["probe"]["violations"])
    for view in VIEWS:
        assert seen["views"][view]["violations"] == [], view
        assert seen["views"][view]["passes"] >= 10, view  # the rules ran
