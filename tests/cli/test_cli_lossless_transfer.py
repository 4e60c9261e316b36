"""A lossless ``export`` / ``import`` on real storage (the local host over Azurite, with its queue triggers, so
a job due at once would run): collections with calendars and jobs using every preview property and hostile
names, exported, wiped, imported, and compared field by field through the preview API; the effective start
and runs left the export writes out keep each recurring job's next occurrences, and nothing fires during the
import. The dry run's next hour, an import into a collection with another plan, an import stopped half way
and run again, and two imports at once."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from scheduler_core.definitions import PREVIEW_VERSION
from scheduler_core.recurrence import format_instant, parse_instant
from tests.cli.conftest import RG, SUB, Cli, Ran
from tests.support.http_target import HttpTarget, http_target

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

SIGNING_SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SAS_KEY = "c2VjcmV0LXNhcy1rZXk="
URI_SIG = "sv=2024&sig=s3cr3t-Sig"
#: Hostile but valid names (docs/names.md): spaces, quotes, pipes, Greek, emoji, a leading dot.
OPS = "ops 'prod' | Ωmega"
BATCH = ".batch ünï (2)"
HOLIDAYS = "Ferien |Ω| 'x'"
ODD_JOB = "Pay 'roll' | ~(x)! ΟΔΟΣ 🎉"
ODD_TEXT = 'quote " backslash \\ line\u2028sep </script> 🎉 \x7f'


def _path(*names: str) -> str:
    base = f"subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections"
    return "/".join([base, *(quote(name, safe="") for name in names)])


def call(cli: Cli, method: str, path: str, body: Any = None, **query: str) -> Any:
    """One request with the preview api-version; its JSON answer (None for an empty one)."""
    response = cli.api.call(method, path, body, query={"api-version": PREVIEW_VERSION, **query})
    assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
    return response.json() if response.content else None


def _soon(minutes: int) -> datetime:
    return (datetime.now(UTC) + timedelta(minutes=minutes)).replace(second=0, microsecond=0)


def _far_date(days: int) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%d")


def _build(cli: Cli, target: HttpTarget) -> dict[str, tuple[str, str]]:
    """Two collections with calendars, and jobs using every preview property; returns job label -> (collection,
    job)."""
    call(
        cli,
        "PUT",
        _path(OPS),
        {
            "location": "westeurope",
            "tags": {"env": "prod", "odd": ODD_TEXT},
            "properties": {"quota": {"maxJobCount": 40}},
        },
    )
    call(cli, "PUT", _path(BATCH), {"location": "northeurope", "properties": {"sku": {"name": "P10Premium"}}})
    call(cli, "PUT", _path(OPS, "calendars", HOLIDAYS), {"properties": {"dates": [_far_date(40), _far_date(41)]}})
    call(cli, "PUT", _path(OPS, "calendars", "audit"), {"properties": {"dates": [_far_date(90)]}})
    call(cli, "PUT", _path(BATCH, "calendars", "quarter-end"), {"properties": {"dates": [_far_date(60)]}})
    url = f"{target.base_url}/hook"
    due = _soon(30)
    jobs: dict[str, tuple[str, str, dict[str, Any]]] = {
        # recurring, no startTime, every policy and exclusion, signed: anchored by the export
        "anchored": (
            OPS,
            ODD_JOB,
            {
                "action": {
                    "type": "Http",
                    "expandPlaceholders": True,
                    "request": {
                        "uri": f"{url}?job=@{{jobName}}",
                        "method": "POST",
                        "body": ODD_TEXT,
                        "headers": {"X-Odd": "välue 'q' | 🎉"},
                        "signing": {"scheme": "StandardWebhooks", "secret": SIGNING_SECRET},
                    },
                    "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 2},
                },
                "recurrence": {
                    "frequency": "Minute",
                    "interval": 20,
                    "jitter": "PT5M",
                    "exclusions": {
                        "dates": [_far_date(20)],
                        "ranges": [{"start": f"{_far_date(30)}T08:00", "end": _far_date(31)}],
                        "calendars": [HOLIDAYS, "audit"],
                    },
                },
                "overlapPolicy": "Skip",
                "missedRunPolicy": {"mode": "RunAll", "window": "PT2H"},
                "pauseAfterFailures": 3,
            },
        ),
        # recurring, no startTime, a count: its runs left are written out; next one in 30 minutes
        "counted": (
            OPS,
            "counted",
            {
                "action": {"type": "Http", "request": {"uri": url, "method": "GET"}},
                "recurrence": {
                    "frequency": "Day",
                    "count": 4,
                    "schedule": {"hours": [due.hour], "minutes": [due.minute]},
                },
                "missedRunPolicy": {"mode": "Skip"},
            },
        ),
        # one-time in the future, removed once done, Service Bus with a key (a secret to re-enter)
        "once": (
            OPS,
            "once",
            {
                "startTime": format_instant(_soon(24 * 60)),
                "action": {
                    "type": "ServiceBusQueue",
                    "serviceBusQueueMessage": {
                        "namespace": "ns1",
                        "queueName": "q",
                        "message": ODD_TEXT,
                        "transportType": "AMQP",
                        "authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": SAS_KEY},
                    },
                },
                "deleteAfterCompletion": True,
            },
        ),
        # disabled, managed identity, BufferOne, no startTime: anchored though disabled
        "identity": (
            OPS,
            "identity",
            {
                "state": "Disabled",
                "action": {
                    "type": "Http",
                    "request": {
                        "uri": url,
                        "method": "POST",
                        "body": "{}",
                        "authentication": {"type": "ManagedServiceIdentity", "audience": "api://hooks"},
                    },
                },
                "recurrence": {"frequency": "Minute", "interval": 10},
                "overlapPolicy": "BufferOne",
            },
        ),
        # a past startTime (its phase), a zone, a calendar, credentials in the URI's query
        "weekly": (
            BATCH,
            "weekly",
            {
                "startTime": "2024-01-01T06:30:00",
                "action": {"type": "Http", "request": {"uri": f"{url}?{URI_SIG}", "method": "GET"}},
                "recurrence": {
                    "frequency": "Week",
                    "schedule": {"weekDays": ["Monday"], "hours": [6], "minutes": [30]},
                    "timeZone": "Europe/Berlin",
                    "jitter": "PT10M",
                    "exclusions": {"calendars": ["quarter-end"]},
                },
            },
        ),
    }
    for collection, name, properties in jobs.values():
        call(cli, "PUT", _path(collection, "jobs", name), {"properties": properties})
    return {label: (collection, name) for label, (collection, name, _) in jobs.items()}


def _wait_for_history(cli: Cli, collection: str, job: str, count: int = 1, timeout: float = 30.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while True:
        rows = call(cli, "GET", _path(collection, "jobs", job, "history"))["value"]
        if len(rows) >= count or time.monotonic() > deadline:
            return list(rows)
        time.sleep(0.2)


def _snapshot(cli: Cli, jobs: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Every collection (with its calendars) and job as the preview API shows them, each job's next
    execution time and its next occurrences."""
    shot: dict[str, Any] = {"collections": {}, "jobs": {}}
    for collection in (OPS, BATCH):
        shot["collections"][collection] = (
            call(cli, "GET", _path(collection)),
            call(cli, "GET", _path(collection, "calendars"))["value"],
        )
    for label, (collection, name) in jobs.items():
        job = call(cli, "GET", _path(collection, "jobs", name))
        status = job["properties"].pop("status")
        occurrences = call(cli, "GET", _path(collection, "jobs", name, "occurrences"), **{"$top": "10"})["value"]
        shot["jobs"][label] = (job, status.get("nextExecutionTime"), occurrences)
    return shot


def _import(cli: Cli, path: Path, *extra: str) -> Ran:
    return cli("import", str(path), "--no-progress", "-o", "json", *extra)


def test_export_wipe_import_keeps_every_field_and_every_schedule(running_cli: Cli, tmp_path: Path) -> None:
    cli = running_cli
    with http_target([200]) as target:
        jobs = _build(cli, target)
        # the recurring jobs without startTime ran once at creation: wait for it, so nothing is left in flight
        assert len(_wait_for_history(cli, OPS, ODD_JOB)) == 1
        assert len(_wait_for_history(cli, OPS, "counted")) == 1
        before = _snapshot(cli, jobs)
        export_file = tmp_path / "export.json"
        exported = cli("export", str(export_file), "--no-progress", "-o", "json")
        assert exported.code == 0, exported.err
        assert exported.json()["calendars"] == 3 and exported.json()["jobs"] == 5
        document = json.loads(export_file.read_text(encoding="utf-8"))
        assert document["apiVersion"] == PREVIEW_VERSION
        assert SIGNING_SECRET not in export_file.read_text(encoding="utf-8")
        assert SAS_KEY not in export_file.read_text(encoding="utf-8") and "s3cr3t" not in export_file.read_text()

        # the secrets to re-enter, each named by job and path
        listed = {(s["job"].rsplit("/", 1)[1], s["path"], s["required"]) for s in document["secretsToReenter"]}
        assert listed == {
            (ODD_JOB, "properties.action.request.signing.secret", True),
            ("once", "properties.action.serviceBusQueueMessage.authentication.sasKey", False),
            ("weekly", "properties.action.request.uri", True),
        }
        # the effective start of the jobs without startTime, and the runs left of the counted one
        anchors = {a["job"].rsplit("/", 1)[1]: a for a in document["adjustments"]}
        assert sorted(anchors) == sorted([ODD_JOB, "counted", "identity"])
        for label in ("anchored", "counted", "identity"):
            job, _, occurrences = before["jobs"][label]
            assert "startTime" not in job["properties"]
            assert anchors[job["name"].split("/", 1)[1]]["startTime"]["was"] is None
        assert anchors["counted"]["count"] == {"was": 4, "now": 3}  # one ran (at creation): 3 left

        values = {".secret": SIGNING_SECRET, ".sasKey": SAS_KEY, ".uri": f"{target.base_url}/hook?{URI_SIG}"}
        for secret in document["secretsToReenter"]:
            secret["value"] = next(v for suffix, v in values.items() if secret["path"].endswith(suffix))
        export_file.write_text(json.dumps(document), encoding="utf-8")

        # wipe
        for collection in (OPS, BATCH):
            assert cli("collections", "delete", collection, "--yes").code == 0
        assert cli("collections", "list", "-o", "json").json() == []

        calls_before = len(target.received)
        dry_from = datetime.now(UTC)
        dry = _import(cli, export_file, "--dry-run")
        dry_until = datetime.now(UTC)
        assert dry.code == 0, dry.out
        dry_table = cli("import", str(export_file), "--dry-run")
        assert dry_table.code == 0, dry_table.out
        real_started = time.time()
        imported = _import(cli, export_file)
        assert imported.code == 0, imported.out
        results = imported.json()["results"]
        assert {(r["kind"], r["outcome"]) for r in results} == {
            ("collection", "create"),
            ("calendar", "create"),
            ("job", "create"),
        }
        assert imported.json()["summary"]["calendar"]["create"] == 3

        time.sleep(3)  # an occurrence due at once would have run by now (queue triggers on)
        assert [r for r in target.received[calls_before:] if r.at >= real_started] == []
        after = _snapshot(cli, jobs)
        for label, (collection, name) in jobs.items():
            assert call(cli, "GET", _path(collection, "jobs", name, "history"))["value"] == [], label

    # every collection and calendar as it was
    assert after["collections"] == before["collections"]
    # every job field by field, the written-out start and count aside; the same next occurrences
    for label, (job, next_time, occurrences) in before["jobs"].items():
        new_job, new_next, new_occurrences = after["jobs"][label]
        expected = json.loads(json.dumps(job))
        anchor = anchors.get(job["name"].split("/", 1)[1])
        if anchor is not None:
            expected["properties"]["startTime"] = anchor["startTime"]["now"]
            if "count" in anchor:
                expected["properties"]["recurrence"]["count"] = anchor["count"]["now"]
        assert new_job == expected, label
        assert new_next == next_time, label
        assert new_occurrences == occurrences, label
    # the counted job: 3 left, the first in 30 minutes, as before
    assert len(after["jobs"]["counted"][2]) == 3
    # the anchored start is the original's first occurrence (its creation), not the import's
    start = parse_instant(after["jobs"]["anchored"][0]["properties"]["startTime"], "startTime")
    assert start < datetime.fromtimestamp(real_started, UTC) - timedelta(seconds=3)

    # the dry run listed, per job, exactly the occurrences of the next hour
    planned = {r["name"]: r["nextHour"] for r in dry.json()["results"] if r["kind"] == "job"}
    assert planned["identity"] == {"count": 0, "instants": []}  # disabled
    assert planned["once"] == {"count": 0, "instants": []}  # tomorrow
    counted_next = before["jobs"]["counted"][2][0]["fireTime"]
    assert planned["counted"] == {"count": 1, "instants": [counted_next]}
    table = [line for line in dry_table.out.splitlines() if line.startswith("job ") and "/counted " in line]
    assert len(table) == 1 and table[0].endswith(f"would create  fires 1 time in the next hour: {counted_next}")
    hourly = [parse_instant(o["fireTime"], "fireTime") for o in before["jobs"]["anchored"][2]]
    listed = [parse_instant(t, "instant") for t in planned[ODD_JOB]["instants"]]
    hour = timedelta(hours=1)
    assert planned[ODD_JOB]["count"] == len(listed) >= 1, (planned, hourly, dry_from)  # hourly: one or two an hour
    assert all(t in hourly and dry_from - timedelta(seconds=1) <= t <= dry_until + hour for t in listed)
    assert all(t in listed for t in hourly if dry_until <= t <= dry_from + hour)
