"""In a real browser, hostile and awkward names and values in the operator's console: job, collection and resource
group names with markup (``<script>``, ``"><img src=x onerror=...>``), right-to-left overrides, a 200-unit
name, names the name rule allows that are awkward (dots, dashes, a leading space, ``__proto__``, Unicode,
zero-width and line-separator characters), a target URI, header values and a body with markup, and a target
that answers with markup, which the history then holds.

The scenario (``hostileNames`` in ``scenarios.mjs``) runs the page with its CSP bypassed, so the page's own
text handling is what is tested (with the CSP, a payload that got into the DOM would be blocked and only
logged). A trap on ``window.__pwned`` records any assignment, a MutationObserver records every element,
``on*`` attribute and non-fragment link the page adds, and every console error fails the scenario; a probe
shows the trap does catch a payload that gets in. Each name, target and message must be shown as exactly the
text the API holds, in the list, the sorted list, a search kept in the address, the bulk dialog and its
result, each job's page, the grouped history and the editor; and each action the page took with a hostile
name (bulk disable, run now, an unchanged save, a new job) must have reached that very job.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

import pytest

from scheduler_core.recurrence import format_instant
from tests.browser.conftest import SUBSCRIPTION, Dashboard, run_scenario
from tests.support.jobs import NO_RETRY, every, http_action
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

PREVIEW = "2026-12-01-preview"
RTL = "\u202e"
#: Markup a target answers with (the history keeps it, with the override escaped by the service).
ANSWER = f'<script>window.__pwned=8</script>"><img src=x onerror=window.__pwned=9>{RTL}evil'
GROUP, COLLECTION = "ops", "nightly"
#: A resource group and a collection whose names are markup, and a collection whose name has an override.
EVIL_GROUP = "<svg onload=window.__pwned=11>"
EVIL_COLLECTION = '"><img src=x onerror=window.__pwned=10>'
RTL_COLLECTION = f"{RTL}cod.exe"
#: Names in ops/nightly: each allowed by docs/names.md, each hostile or awkward.
NAMES = [
    "<script>window.__pwned=1<",
    '"><img src=x onerror=window.__pwned=2>',
    f"report{RTL}txt.exe",
    ("long <b>" + "<i>" * 64)[:196] + " end",  # 200 units: the longest a job name may be
    ".hidden",
    "a.b.c-d_e~f!(g)",
    "Ünïcødé 名前 🙂",
    "__proto__",
    "constructor",
    "' OR '1'='1",
    "&amp;&lt;",
    "{{7*7}} ${7*7}",
    "javascript:window.__pwned=3",
    " leading space",
    "line\u2028separator",
    "zero\u200bwidth",
]
HOSTILE_JOB = "<img src=x onerror=window.__pwned=12>"
NEW_JOB = "<img src=x onerror=window.__pwned=20> made by the form"


@contextmanager
def hostile_target() -> Iterator[tuple[str, list[str]]]:
    """A target that answers every request 500 with :data:`ANSWER` (its base URL, and the paths it was asked)."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            paths.append(self.path)
            payload = ANSWER.encode()
            self.send_response(500)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_GET

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", paths
    finally:
        server.shutdown()
        server.server_close()


def path_of(group: str, collection: str, job: str | None = None) -> str:
    path = f"subscriptions/{SUBSCRIPTION}/resourceGroups/{quote(group, safe='')}/providers/Microsoft.Scheduler"
    path += f"/jobCollections/{quote(collection, safe='')}"
    return path if job is None else f"{path}/jobs/{quote(job, safe='')}"


def put(dashboard: Dashboard, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = dashboard.api.call("PUT", dashboard.api.url(path, **{"api-version": PREVIEW}), body)
    assert response.status_code in (200, 201), response.text
    data: dict[str, Any] = response.json()
    return data


def get(dashboard: Dashboard, path: str) -> tuple[int, Any]:
    response = dashboard.api.call("GET", dashboard.api.url(path, **{"api-version": PREVIEW}))
    return response.status_code, response.json()


def shown(text: str) -> str:
    """``text`` as the page shows it: each bidirectional control as a visible escape (``\\u202e``), as the CLI
    writes it (``scheduler_core.cli.output.visible``, whose escapes for these characters are the same)."""
    return re.sub("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group()):04x}", text)


def uri_component(name: str) -> str:
    """JavaScript's ``encodeURIComponent``."""
    return quote(name, safe="!*'()")


def js_sorted(names: list[str]) -> list[str]:
    """``names`` as the list sorts them: lower-cased, compared by UTF-16 code units (JavaScript's ``<``)."""
    return sorted(names, key=lambda name: name.lower().encode("utf-16-be"))


def test_hostile_names_and_values_are_shown_as_text_and_run_nothing(dashboard: Dashboard) -> None:
    assert all(len(name.encode("utf-16-le")) // 2 <= 200 for name in NAMES)
    assert len(NAMES[3]) == 200
    start = format_instant((datetime.now(UTC) + timedelta(days=1)).replace(hour=3, minute=0, second=0, microsecond=0))
    collection = {"location": "westeurope", "properties": {"sku": {"name": "Standard"}}}
    for group, name in ((GROUP, COLLECTION), (EVIL_GROUP, EVIL_COLLECTION), (GROUP, RTL_COLLECTION)):
        put(dashboard, path_of(group, name), collection)
    with hostile_target() as (base, asked):
        plain = http_action(f"{base}/plain", method="GET", body=None, retryPolicy=NO_RETRY)
        for name in NAMES:
            put(
                dashboard,
                path_of(GROUP, COLLECTION, name),
                {"properties": {"startTime": start, "action": plain, "recurrence": every("Day")}},
            )
        put(
            dashboard,
            path_of(GROUP, RTL_COLLECTION, "x"),
            {"properties": {"startTime": start, "action": plain, "recurrence": every("Day")}},
        )
        # The job whose target answers markup: a URI, header values and a body with markup too, and an error
        # action (to a URI with an override) under the same occurrence.
        uri = f'{base}/<script>window.__pwned=4</script>?q="><img%20src=x%20onerror=window.__pwned=5>'
        action = http_action(uri, method="POST", body="<script>window.__pwned=7</script>", retryPolicy=NO_RETRY)
        action["request"]["headers"] = {"X-Evil": "<img src=x onerror=window.__pwned=6>", "X-Rtl": f"{RTL}abc"}
        action["errorAction"] = http_action(f"{base}/{RTL}error", method="GET", body=None, retryPolicy=NO_RETRY)
        hostile_path = path_of(EVIL_GROUP, EVIL_COLLECTION, HOSTILE_JOB)
        put(dashboard, hostile_path, {"properties": {"startTime": start, "action": action, "recurrence": every("Day")}})
        ran = dashboard.api.call("POST", dashboard.api.url(f"{hostile_path}/run", **{"api-version": PREVIEW}))
        assert ran.status_code == 200, ran.text

        def history() -> list[dict[str, Any]]:
            status, data = get(dashboard, f"{hostile_path}/history")
            assert status == 200, data
            rows: list[dict[str, Any]] = data["value"]
            return rows

        wait_until(lambda: len(history()) >= 2, timeout=60, what="the hostile job's run and its error action")
        rows = history()
        _, before_edit = get(dashboard, hostile_path)
        names = [[GROUP, COLLECTION, name] for name in NAMES] + [
            [GROUP, RTL_COLLECTION, "x"],
            [EVIL_GROUP, EVIL_COLLECTION, HOSTILE_JOB],
        ]
        run_these = [[GROUP, COLLECTION, NAMES[1]], [GROUP, COLLECTION, NAMES[2]]]
        seen = run_scenario(
            dashboard,
            "hostileNames",
            timeout=240,
            names=names,
            collections=3,
            searchFor=NAMES[1],
            bulkCollection=f"{GROUP}/{COLLECTION}",
            bulkCount=len(NAMES),
            runThese=run_these,
            deleteMeanwhile=run_these[1],
            hostile=[EVIL_GROUP, EVIL_COLLECTION, HOSTILE_JOB],
            historyRows=len(rows),
            editorJob=[EVIL_GROUP, EVIL_COLLECTION, HOSTILE_JOB],
            newJob=[GROUP, RTL_COLLECTION, NEW_JOB, f"{base}/new"],
        )
        wait_until(lambda: any(path == "/plain" for path in asked), timeout=30, what="the bulk run of a plain job")

    # Nothing ran: no assignment reached the trap, the page added no element, handler or link of its own
    # making, and (finish) no console error or CSP report; the probe shows the trap does catch a payload.
    assert seen["hits"] == [] and seen["foreign"] == [], (seen["hits"], seen["foreign"])
    assert seen["probe"]["hits"] == ["99"], seen["probe"]
    assert "<img> added" in seen["probe"]["foreign"] and "onerror on <img>" in seen["probe"]["foreign"]
    assert any("PWNED" in problem for problem in seen["probeProblems"])

    # Collections and the list: each name, collection and target exactly as the API holds it, as text.
    assert sorted(seen["collections"]) == sorted(shown(name) for name in (COLLECTION, EVIL_COLLECTION, RTL_COLLECTION))
    # A 200-character name with no break point wraps: the list still fits its page (every column in view).
    assert seen["listFits"]["table"] <= seen["listFits"]["main"], seen["listFits"]
    listed = {row["job"]: row for row in seen["rows"]}
    assert sorted(listed) == sorted(shown(name) for *_, name in names)
    for group, name, job in names:
        row = listed[shown(job)]
        assert row["collection"] == shown(f"{group}/{name}"), row
        assert row["select"] == f"Select {job}"
        assert row["href"] == f"#/job/{uri_component(group)}/{uri_component(name)}/{uri_component(job)}", row
    assert listed[HOSTILE_JOB]["target"] == f"POST {uri}"
    assert listed[NAMES[0]]["target"] == f"GET {base}/plain"
    main = next(row for row in rows if row["properties"]["actionName"] == "MainAction")
    assert listed[HOSTILE_JOB]["outcomeTitle"] == main["properties"]["message"]
    assert "<script>window.__pwned=8</script>" in listed[HOSTILE_JOB]["outcomeTitle"]

    # Sorted by name both ways, as JavaScript orders the lower-cased names; the search for a hostile name finds
    # it alone, and is kept (encoded) in the address across a reload.
    every_name = [job for *_, job in names]
    assert seen["ascending"] == [shown(name) for name in js_sorted(every_name)]
    assert seen["descending"] == [shown(name) for name in reversed(js_sorted(every_name))]
    assert "sort=job" in seen["sortHash"] and "dir=desc" in seen["sortHash"]
    assert seen["searched"] == [NAMES[1]]
    assert "<" not in seen["searchHash"] and '"' not in seen["searchHash"]
    assert seen["searchAfterReload"] == {"value": NAMES[1], "jobs": [NAMES[1]]}

    # The bulk dialog names every job as text (one <code> each, nothing else), and each call reached its job.
    dialog = seen["disableDialog"]
    assert dialog["title"] == f"Disable {len(NAMES)} jobs?"
    assert dialog["focus"] == "Cancel"
    assert sorted(item["text"] for item in dialog["items"]) == sorted(
        shown(f"{GROUP}/{COLLECTION}/{name}") for name in NAMES
    )
    assert all(item["elements"] == ["code"] for item in dialog["items"]), dialog["items"]
    assert seen["disableResult"] == f"{len(NAMES)} of {len(NAMES)} jobs disabled."
    for name in NAMES:
        if name == NAMES[2]:
            continue  # deleted meanwhile (below)
        status, job = get(dashboard, path_of(GROUP, COLLECTION, name))
        assert status == 200 and job["properties"]["state"] == "Disabled", (name, job)
    # Run now of two, one deleted meanwhile: the failure names the job as text, with the service's message.
    assert seen["deletedMeanwhile"] == 200
    assert sorted(seen["runDialogItems"]) == sorted(shown(f"{GROUP}/{COLLECTION}/{name}") for *_, name in run_these)
    assert seen["runResult"].startswith(f"1 of 2 jobs run. 1 failed: {shown(NAMES[2])}: "), seen["runResult"]
    assert seen["runResultElements"] == 0
    status, ran_history = get(dashboard, f"{path_of(GROUP, COLLECTION, NAMES[1])}/history")
    assert status == 200 and len(ran_history["value"]) >= 1  # the run reached the job with the markup name

    # Every job's page: heading, document title and breadcrumb are the name; its request is its target.
    pages = {tuple(page["ref"]): page for page in seen["pages"]}
    assert len(pages) == len(names) - 1
    for (group, name, job), page in pages.items():
        assert page["heading"] == shown(job) and page["crumb"] == shown(job), page
        # document.title strips and collapses ASCII white space (HTML's rule), and nothing else.
        assert page["title"] == " ".join(re.split(r"[\t\n\f\r ]+", shown(f"{job} · Scheduler dashboard"))).strip()
        assert page["collectionCrumb"] == shown(f"{group}/{name}")
    assert pages[(EVIL_GROUP, EVIL_COLLECTION, HOSTILE_JOB)]["request"] == f"POST {uri}"

    # The grouped history: one occurrence, its attempt and error action; the target's markup as text.
    [group_seen] = seen["history"]
    assert "(manual): 1 attempt, error action Failed; Failed" in group_seen["heading"], group_seen
    assert sorted(group_seen["messages"]) == sorted(row["properties"]["message"] for row in rows)
    assert all("<script>window.__pwned=8</script>" in message for message in group_seen["messages"])
    assert set(group_seen["elements"]) <= {"span", "details", "summary", "pre"}, group_seen["elements"]
    [main_action] = [pairs for pairs in seen["definition"] if "Headers" in pairs]
    assert main_action["Request"] == f"POST {uri}"
    assert "X-Evil: <img src=x onerror=window.__pwned=6>" in main_action["Headers"]
    assert f"X-Rtl: {shown(RTL)}abc" in main_action["Headers"]  # the override shown, not obeyed
    assert main_action["Body"] == "<script>window.__pwned=7</script>"
    assert f"GET {base}/{shown(RTL)}error" in [pairs.get("Request") for pairs in seen["definition"]]  # the error action
    assert seen["raw"]["properties"]["action"] == before_edit["properties"]["action"]

    # The editor showed the values as typed, and an unchanged save kept the job as it was.
    assert seen["editor"]["uri"] == uri
    assert seen["editor"]["headers"] == f"X-Evil: <img src=x onerror=window.__pwned=6>\nX-Rtl: {RTL}abc"
    assert seen["editor"]["body"] == "<script>window.__pwned=7</script>"
    assert seen["editor"]["crumbs"][1:] == [f"{EVIL_GROUP}/{EVIL_COLLECTION}", HOSTILE_JOB, "Edit"]
    assert seen["editorSaved"] == f"Job {HOSTILE_JOB} saved."
    _, after_edit = get(dashboard, hostile_path)
    for job in (before_edit, after_edit):
        job["properties"].pop("status")
    assert after_edit["properties"] == before_edit["properties"]
    # The form made a job with a markup name in the collection whose name has an override.
    assert seen["created"] == f"Job {NEW_JOB} saved."
    status, made = get(dashboard, path_of(GROUP, RTL_COLLECTION, NEW_JOB))
    assert status == 200, made
    assert made["name"] == f"{RTL_COLLECTION}/{NEW_JOB}"
    assert made["properties"]["action"]["request"]["uri"] == f"{base}/new"
    assert json.dumps(seen).count("PWNED") == json.dumps(seen["probeProblems"]).count("PWNED")


def test_a_right_to_left_override_does_not_reorder_what_the_page_shows(dashboard: Dashboard) -> None:
    """Shown raw, ``report<RLO>txt.exe`` would be drawn as ``reportexe.txt`` in the list, the override would
    reverse the service's message after the name in the bulk result, and a URI ending in ``<RLO>error`` would
    end in ``rorre``. The page writes each bidirectional control as a visible escape (``\\u202e``), as the CLI,
    the log lines and the history messages do: every letter is drawn in the order it is written."""
    dashboard.put_collection()
    start = format_instant((datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0))
    rtl, other, uri_job = f"report{RTL}txt.exe", "plain", "uri-job"
    with hostile_target() as (base, _):
        for name, uri in ((rtl, f"{base}/x"), (other, f"{base}/y"), (uri_job, f"{base}/{RTL}error")):
            action = http_action(uri, method="GET", body=None, retryPolicy=NO_RETRY)
            put(dashboard, path_of(GROUP, COLLECTION, name), {"properties": {"startTime": start, "action": action}})
        seen = run_scenario(
            dashboard, "hostileNames", part="bidi", group=GROUP, collection=COLLECTION, jobs=[rtl, other, uri_job]
        )
    # The page shows the override where the API has it, as the visible escape \u202e (as the CLI does).
    assert seen["deleted"] == 200
    assert seen["bulkResultText"].startswith(f"1 of 2 jobs run. 1 failed: {shown(rtl)}: ")
    assert seen["requestText"] == f"GET {base}/{shown(RTL)}error"
    # The property: what follows an override is drawn in the order it is written (or the override is shown).
    drawn = {where: seen[where] for where in ("listName", "bulkResult", "request")}
    assert not any(measured["reordered"] for measured in drawn.values()), drawn


#: Headers and a body the API keeps byte for byte (checked below) that the form's text fields cannot hold as
#: they are: a header named ``__proto__`` (a plain object's key), values with white space or a byte order mark
#: at an end (``trim()``), and CR LF and CR line ends (a textarea's value has LF only).
ROUND_TRIP_HEADERS = {"__proto__": "polluted", "X-Pad": "  padded  ", "X-Bom": "\ufeffv", "X-Plain": "kept"}
ROUND_TRIP_BODY = "line1\r\nline2\rline3"


def test_an_unchanged_save_in_the_editor_keeps_every_header_and_the_body_as_stored(dashboard: Dashboard) -> None:
    """A field of the form left as it was keeps the stored value exactly; the form's text (LF line ends, trimmed
    lines, a plain object's keys) would otherwise rewrite the job on a save that changed nothing."""
    dashboard.put_collection()
    start = format_instant((datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0))
    action = http_action("http://127.0.0.1:9/x", method="POST", body=ROUND_TRIP_BODY, retryPolicy=NO_RETRY)
    action["request"]["headers"] = dict(ROUND_TRIP_HEADERS)
    job_path = path_of(GROUP, COLLECTION, "round-trip")
    put(dashboard, job_path, {"properties": {"startTime": start, "action": action, "recurrence": every("Day")}})
    _, before = get(dashboard, job_path)
    assert before["properties"]["action"]["request"]["headers"] == ROUND_TRIP_HEADERS  # the API keeps them
    assert before["properties"]["action"]["request"]["body"] == ROUND_TRIP_BODY
    seen = run_scenario(
        dashboard, "hostileNames", part="roundTrip", group=GROUP, collection=COLLECTION, job="round-trip"
    )
    assert seen["saved"] is True
    _, after = get(dashboard, job_path)
    request = after["properties"]["action"]["request"]
    assert (request["headers"], request["body"]) == (ROUND_TRIP_HEADERS, ROUND_TRIP_BODY), (
        seen["headers"],
        seen["body"],
    )
