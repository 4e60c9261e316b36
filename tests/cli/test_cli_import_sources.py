"""``import --from crontab|kubernetes|eventbridge|cloud-scheduler`` (``scheduler_core/cli/sources``).

Against the real function app on the local host (Azurite): each committed sample of ``tests/data/import_sources``
is imported into a collection and read back through the API, field by field, with every item it could not carry
reported (and nothing created for a source entry without an HTTP request); a malformed cron fails with the
service's 400 while the others are created; ``--dry-run`` sends nothing and prints this service's occurrences
beside the source system's. Without a host (``--offline``, or no command at all): the conversions of the shell
commands and EventBridge's day numbering, and hostile inputs (an empty file, binary garbage, a YAML alias bomb, a
crontab of 10,000 lines, a wrong ``--from``).

The samples' dates are in 2027 (a schedule has to start within 18 months of now): :func:`sample` moves them on
by whole years once 2027 is this year, and :data:`Y` is the sample's 2027 as moved.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from scheduler_core.cli import main
from scheduler_core.cli.sources._shell import NotCarried, http_call
from scheduler_core.cli.sources.eventbridge import unix_weekdays
from scheduler_core.recurrence import format_instant
from tests.cli.conftest import RG, ROOT, Cli

DATA = ROOT / "tests" / "data" / "import_sources"
#: How many years the samples' dates are moved on (0 while 2027 is ahead).
SHIFT = max(0, datetime.now(UTC).year + 1 - 2027)
Y = 2027 + SHIFT


def on_host(test: Any) -> Any:
    """The test runs the command line against the function app on the local host (Azurite)."""
    return pytest.mark.azurite(pytest.mark.e2e(test))


def sample(tmp_path: Path, name: str) -> str:
    """The committed sample ``name``, copied with its years moved by :data:`SHIFT`."""
    text = (DATA / name).read_text(encoding="utf-8")
    if SHIFT:
        text = re.sub(r"\b(202[6-9])\b", lambda m: str(int(m.group(1)) + SHIFT), text)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def jobs_of(cli: Cli, collection: str) -> dict[str, dict[str, Any]]:
    listed = cli("jobs", "list", "-c", collection, "-g", RG, "-o", "json")
    assert listed.code == 0, listed.err
    return {job["name"].split("/", 1)[1]: job["properties"] for job in listed.json()}


def imported(cli: Cli, *argv: str) -> dict[str, Any]:
    """``import --from ... -o json``, succeeded."""
    ran = cli("import", *argv, "--no-progress", "-o", "json")
    assert ran.code == 0, ran.out + ran.err
    result: dict[str, Any] = ran.json()
    return result


def noted(report: dict[str, Any], folder: Path) -> list[tuple[str, str]]:
    """(where, what) of each note, where without the files' ``folder``."""
    return [(n["where"].removeprefix(f"{folder}/"), n["what"]) for n in report["notCarried"]]


def request(props: dict[str, Any]) -> dict[str, Any]:
    action: dict[str, Any] = props["action"]
    return {k: v for k, v in action["request"].items() if k != "authentication"}


def last_weekday(year: int, month: int, weekday: int) -> date:
    """The last ``weekday`` (Monday 0) of the month."""
    day = date(year, month, calendar.monthrange(year, month)[1])
    return day - timedelta(days=(day.weekday() - weekday) % 7)


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th ``weekday`` (Monday 0) of the month."""
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def at(day: date, hour: int, minute: int, zone: str = "Europe/Berlin") -> str:
    """The wall time ``day hour:minute`` in ``zone`` as the API writes an instant (UTC)."""
    return format_instant(datetime.combine(day, dt_time(hour, minute), ZoneInfo(zone)).astimezone(UTC))


# ------------------------------------------------------------------------------------------ round trips


@on_host
def test_crontab_round_trips_and_lists_what_it_cannot_carry(cli: Cli, tmp_path: Path) -> None:
    path = sample(tmp_path, "crontab.txt")
    report = imported(cli, "--from", "crontab", path, "--collection", "cron", "--create-collection", "westeurope")
    assert report["summary"]["job"]["create"] == 5 and report["summary"]["collection"]["create"] == 1
    lines = {r["name"]: r["where"].rsplit(" ", 1)[-1] for r in report["results"] if r["kind"] == "job"}
    jobs = jobs_of(cli, "cron")
    assert sorted(jobs) == sorted(lines)  # nothing else was created
    by_line = {lines[name]: props for name, props in jobs.items()}
    assert sorted(by_line) == ["10", "16", "17", "8", "9"]

    ping = by_line["8"]
    assert ping["recurrence"] == {"cron": "*/15 * * * *"}
    assert request(ping) == {"uri": "https://hc.example.org/ping/7f3a2c9e", "method": "GET"}
    assert ping["action"]["retryPolicy"] == {"retryType": "Exponential", "retryInterval": "PT15S", "retryCount": 3}
    report_job = by_line["9"]
    assert report_job["recurrence"] == {"cron": "0 6 * * 1-5"}
    assert request(report_job) == {
        "uri": "https://api.example.com/v1/reports/daily",
        "method": "POST",
        "headers": {"Content-Type": "application/json", "X-Api-Key": "k-8b1f"},
        "body": '{"format":"pdf","recipients":["ops@example.org"]}',
    }
    assert report_job["action"]["retryPolicy"] == {"retryType": "None"}  # cron ran the command once
    assert by_line["10"]["recurrence"] == {"cron": "@hourly"}
    assert request(by_line["10"]) == {"uri": "https://status.example.com/heartbeat", "method": "GET"}
    nightly = by_line["16"]
    assert nightly["recurrence"] == {"cron": "30 2 * * *", "timeZone": "Europe/Berlin"}
    assert request(nightly) == {
        "uri": "https://reports.example.eu/nightly/run",
        "method": "POST",
        "headers": {"Content-Type": "application/x-www-form-urlencoded"},
        "body": "scope=all&notify=1",
    }
    assert nightly["action"]["request"]["authentication"] == {"type": "Basic", "username": "reporter"}
    billing = by_line["17"]
    assert billing["recurrence"] == {"cron": "0 9 1 * *", "timeZone": "Europe/Berlin"}
    assert request(billing) == {
        "uri": "https://billing.example.eu/invoices/close-month?note=month%20end",
        "method": "PUT",
    }
    assert all(props["state"] == "Enabled" for props in jobs.values())

    assert noted(report, tmp_path) == [
        ("crontab.txt line 3", "SHELL=/bin/bash"),
        ("crontab.txt line 4", "PATH=/usr/local/bin:/usr/bin:/bin"),
        ("crontab.txt line 5", "MAILTO=ops@example.org"),
        ("crontab.txt line 11", "30 3 * * 0 /usr/local/bin/backup.sh --full >> /var/log/backup.log 2>&1"),
        ("crontab.txt line 12", "@reboot /usr/local/bin/start-agent.sh"),
        ("crontab.txt line 17", "--max-time 30"),
        ("crontab.txt line 18", "15 8 * * MON-FRI /usr/bin/php /var/www/app/artisan schedule:run"),
        (
            "crontab.txt line 19",
            '0 12 * * * curl -fsS -H "Authorization: Bearer $API_TOKEN" https://api.example.eu/sync',
        ),
        ("crontab.txt", "3 line(s) without CRON_TZ"),
    ]
    why = {n["where"].rsplit(" ", 1)[-1]: n["why"] for n in report["notCarried"]}
    assert "runs 'backup.sh', not curl or wget" in why["11"]
    assert "@reboot runs at boot" in why["12"]
    assert "shell expansion" in why["19"]

    # The names are derived from the lines alone: the same crontab again names the same jobs (kept).
    again = imported(cli, "--from", "crontab", path, "--collection", "cron")
    assert {r["name"] for r in again["results"]} == set(lines)
    assert {r["outcome"] for r in again["results"]} == {"skip"}


@on_host
def test_kubernetes_cronjobs_round_trip(cli: Cli, tmp_path: Path) -> None:
    path = sample(tmp_path, "cronjobs.yaml")
    report = imported(cli, "--from", "kubernetes", path, "--collection", "k8s", "--create-collection", "westeurope")
    jobs = jobs_of(cli, "k8s")
    assert sorted(jobs) == ["cache-warmer", "nightly-report", "tmp-cleanup"]

    nightly = jobs["nightly-report"]
    assert nightly["recurrence"] == {"cron": "30 2 * * *", "timeZone": "Europe/Berlin"}
    assert nightly["state"] == "Enabled"
    assert nightly["overlapPolicy"] == "Skip"  # concurrencyPolicy: Forbid
    assert nightly["missedRunPolicy"] == {"mode": "RunOnce", "window": "PT5M"}  # startingDeadlineSeconds: 300
    assert request(nightly) == {
        "uri": "https://reports.example.com/api/run",
        "method": "POST",
        "headers": {"Content-Type": "application/json"},
        "body": '{"report":"nightly","format":"csv"}',
    }
    assert nightly["action"]["retryPolicy"] == {  # backoffLimit: 2
        "retryType": "Exponential",
        "retryInterval": "PT15S",
        "retryCount": 2,
        "maxRetryInterval": "PT6M",
    }
    warmer = jobs["cache-warmer"]
    assert warmer["state"] == "Disabled"  # suspend: true
    assert warmer["recurrence"] == {"cron": "*/10 * * * *"}
    assert "overlapPolicy" not in warmer  # Allow: AllowAll, the default (not written out)
    assert request(warmer) == {"uri": "https://www.example.com/warm", "method": "GET", "headers": {"X-Warm": "1"}}
    assert warmer["action"]["retryPolicy"] == {"retryType": "None"}  # backoffLimit: 0
    cleanup = jobs["tmp-cleanup"]
    assert cleanup["recurrence"] == {"cron": "0 */6 * * *", "timeZone": "America/New_York"}
    assert request(cleanup) == {"uri": "https://api.example.com/v1/tmp?older-than=7d", "method": "DELETE"}
    assert cleanup["action"]["retryPolicy"]["retryCount"] == 6  # Kubernetes' default backoffLimit
    assert "missedRunPolicy" not in cleanup and "overlapPolicy" not in cleanup

    assert noted(report, tmp_path) == [
        ("cronjobs.yaml document 1 (CronJob reports/nightly-report)", "successfulJobsHistoryLimit: 3"),
        ("cronjobs.yaml document 1 (CronJob reports/nightly-report)", "failedJobsHistoryLimit: 1"),
        ("cronjobs.yaml document 3 (CronJob api/tmp-cleanup)", "concurrencyPolicy: Replace"),
        ("cronjobs.yaml document 3 (CronJob api/tmp-cleanup)", "startingDeadlineSeconds: 5000000"),
        ("cronjobs.yaml document 3 (CronJob api/tmp-cleanup)", "jobTemplate.spec.activeDeadlineSeconds: 120"),
        ("cronjobs.yaml document 3 (CronJob api/tmp-cleanup)", "serviceAccountName: cleanup-bot"),
        ("cronjobs.yaml document 4 (CronJob data/db-vacuum)", "the container's command"),
        ("cronjobs.yaml document 5 (CronJob api/token-sync)", "the container's command"),
        ("cronjobs.yaml document 6", "kind 'ConfigMap'"),
        ("cronjobs.yaml", "CronJobs without spec.timeZone: cache-warmer"),
    ]
    why = [n["why"] for n in report["notCarried"]]
    assert "runs 'psql'" in why[6] and "$(API_TOKEN), whose value comes from secretKeyRef" in why[7]


@on_host
def test_eventbridge_schedules_round_trip(cli: Cli, tmp_path: Path) -> None:
    paths = [sample(tmp_path, "eventbridge-payroll.json"), sample(tmp_path, "eventbridge-schedules.json")]
    report = imported(cli, "--from", "eventbridge", *paths, "--collection", "eb", "--create-collection", "westeurope")
    jobs = jobs_of(cli, "eb")
    assert sorted(jobs) == ["launch-announcement", "month-end-export", "patch-tuesday", "payroll-close", "status-ping"]

    payroll = jobs["payroll-close"]
    assert payroll["recurrence"] == {  # 6L: the last Friday (EventBridge's 6), unix 5
        "cron": "0 18 ? * 5L",
        "timeZone": "America/New_York",
        "endTime": f"{Y}-12-31T04:59:59Z",  # one second before EndDate
        "jitter": "PT15M",  # FlexibleTimeWindow
    }
    assert payroll["startTime"] == f"{Y}-01-01T05:00:00Z"
    assert request(payroll) == {
        "uri": "https://payroll.example.com/api/periods/close",
        "method": "POST",
        "headers": {"Content-Type": "application/json", "X-Tenant": "acme"},
        "body": '{"period":"current","notify":true}',
    }
    assert payroll["action"]["retryPolicy"] == {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 3}
    ping = jobs["status-ping"]
    assert ping["recurrence"] == {"frequency": "Minute", "interval": 5}
    assert ping["state"] == "Disabled"
    assert ping["action"]["retryPolicy"]["retryCount"] == 20  # 185 in EventBridge: the most here
    launch = jobs["launch-announcement"]
    assert "recurrence" not in launch
    assert launch["startTime"] == f"{Y}-06-15T08:30:00Z"  # 09:30 in London (BST)
    assert launch["deleteAfterCompletion"] is True
    assert request(launch) == {
        "uri": "https://news.example.co.uk/api/announce",
        "method": "PUT",
        "body": "launch=summer",
    }
    assert launch["action"]["retryPolicy"] == {"retryType": "None"}
    patch = jobs["patch-tuesday"]
    assert patch["recurrence"] == {  # 3#2: the second Tuesday (EventBridge's 3), unix 2; the year: bounds
        "cron": "0 9 ? * 2#2",
        "timeZone": "Europe/Berlin",
        "endTime": f"{Y}-12-31T22:59:59Z",
    }
    assert patch["startTime"] == f"{Y - 1}-12-31T23:00:00Z"
    assert request(patch) == {"uri": "https://patching.example.de/api/windows/open", "method": "POST"}
    month_end = jobs["month-end-export"]
    assert month_end["recurrence"] == {"cron": "15 23 L * ?", "timeZone": "Europe/Berlin"}

    notes = noted(report, tmp_path)
    assert ("eventbridge-schedules.json[4] (schedule default/queue-drain)", "cron(0/30 8-17 ? * MON-FRI *)") in notes
    assert [what for where, what in notes if "payroll-close" in where] == [
        "MaximumEventAgeInSeconds: 3600",
        "Target.Arn arn:aws:lambda:us-east-1:123456789012:function:http-invoker",
        "Target.RoleArn arn:aws:iam::123456789012:role/scheduler-invoke-http",
        "Target.DeadLetterConfig",
        "Description: Close the payroll period on the last Friday of each month",
    ]
    assert next(what for where, what in notes if "status-ping" in where) == "MaximumRetryAttempts: 185"
    drained = next(n for n in report["notCarried"] if "queue-drain" in n["where"])
    assert "arn:aws:sqs:eu-central-1:123456789012:drain-requests is not an HTTP request" in drained["why"]


@on_host
def test_cloud_scheduler_json_and_yaml_round_trip(cli: Cli, tmp_path: Path) -> None:
    paths = [sample(tmp_path, "cloud-scheduler-invoice-sync.json"), sample(tmp_path, "cloud-scheduler-jobs.yaml")]
    report = imported(cli, "--from", "cloud-scheduler", *paths, "--collection", "gcs", "--create-collection", "westus")
    jobs = jobs_of(cli, "gcs")
    assert sorted(jobs) == ["invoice-sync", "purge-old-events", "weekly-digest"]

    sync = jobs["invoice-sync"]
    assert sync["recurrence"] == {"cron": "*/30 8-18 * * 1-5", "timeZone": "Europe/Paris"}
    assert sync["state"] == "Enabled"
    assert request(sync) == {
        "uri": "https://billing.example.com/hooks/sync",
        "method": "POST",
        "headers": {
            "Content-Type": "application/json",
            "User-Agent": "Google-Cloud-Scheduler",
            "X-Sync-Mode": "incremental",
        },
        "body": '{"full":false,"source":"cloud-scheduler"}',  # base64 in the source
    }
    assert sync["action"]["retryPolicy"] == {
        "retryType": "Exponential",  # maxDoublings 2
        "retryInterval": "PT20S",
        "retryCount": 3,
        "maxRetryInterval": "PT5M",
    }
    digest = jobs["weekly-digest"]
    assert digest["state"] == "Disabled"  # PAUSED
    assert digest["recurrence"] == {"cron": "0 7 * * 1", "timeZone": "America/Los_Angeles"}
    assert request(digest) == {
        "uri": "https://mail.example.com/digest/weekly?list=all",
        "method": "GET",
        "headers": {"User-Agent": "Google-Cloud-Scheduler", "X-Digest-Kind": "weekly"},
    }
    assert digest["action"]["retryPolicy"] == {"retryType": "None"}  # retryCount 0 (unset)
    purge = jobs["purge-old-events"]
    assert purge["recurrence"] == {"cron": "45 1 1,15 * *", "timeZone": "UTC"}  # Etc/UTC, as the service spells it
    assert request(purge)["body"] == "table=events&retention=90d"
    assert purge["action"]["retryPolicy"] == {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 5}

    assert noted(report, tmp_path) == [
        ("cloud-scheduler-invoice-sync.json (job invoice-sync)", "httpTarget.oidcToken"),
        ("cloud-scheduler-invoice-sync.json (job invoice-sync)", "retryConfig.maxDoublings 2"),
        ("cloud-scheduler-invoice-sync.json (job invoice-sync)", "attemptDeadline 180s"),
        (
            "cloud-scheduler-invoice-sync.json (job invoice-sync)",
            "description: Sync invoices from the billing system during office hours",
        ),
        (
            "cloud-scheduler-jobs.yaml document 1 (job weekly-digest)",
            "description: Weekly digest mail, paused during the migration",
        ),
        ("cloud-scheduler-jobs.yaml document 2 (job purge-old-events)", "httpTarget.oauthToken"),
        ("cloud-scheduler-jobs.yaml document 2 (job purge-old-events)", "retryConfig.maxRetryDuration 3600s"),
        (
            "cloud-scheduler-jobs.yaml document 3 (job fanout-refresh)",
            "projects/acme-prod/locations/us-west1/jobs/fanout-refresh",
        ),
    ]
    assert "ManagedServiceIdentity" in report["notCarried"][0]["why"]
    assert "pubsubTarget" in report["notCarried"][-1]["why"]


@on_host
def test_a_malformed_cron_fails_with_the_services_400_and_the_others_are_imported(cli: Cli, tmp_path: Path) -> None:
    crontab = tmp_path / "crontab"
    crontab.write_text(
        "61 * * * * curl -fsS https://a.example.org/every-61st-minute\n0 * * * * curl -fsS https://b.example.org/hourly\n",
        encoding="utf-8",
    )
    ran = cli(
        "import",
        "--from",
        "crontab",
        str(crontab),
        "--collection",
        "mixed",
        "--create-collection",
        "westus",
        "--no-progress",
        "-o",
        "json",
    )
    assert ran.code == 1, ran.out
    results = [(r["kind"], r["outcome"], r["status"], r["code"]) for r in ran.json()["results"]]
    assert results == [
        ("collection", "create", 201, None),
        ("job", "fail", 400, "BadRequest"),
        ("job", "create", 201, None),
    ]
    assert ran.json()["results"][1]["message"] == (
        "properties.recurrence.cron: at position 1 (minute): 61 is outside 0-59, in '61 * * * *'"
    )
    assert [props["action"]["request"]["uri"] for props in jobs_of(cli, "mixed").values()] == [
        "https://b.example.org/hourly"
    ]
    table = cli("import", "--from", "crontab", str(crontab), "--collection", "mixed", "--no-progress")
    assert table.code == 1
    assert "FAILED" in table.out and "61 is outside 0-59" in table.out


# ------------------------------------------------------------------------------------------------ dry run


@on_host
def test_dry_run_sends_nothing_and_compares_with_the_source(cli: Cli, tmp_path: Path) -> None:
    path = sample(tmp_path, "crontab.txt")
    spring = last_weekday(Y, 3, 6)  # Europe/Berlin springs forward on the last Sunday of March
    after = at(spring - timedelta(days=2), 0, 0, "UTC")
    ran = cli(
        "import",
        "--from",
        "crontab",
        path,
        "--collection",
        "dry",
        "--create-collection",
        "westeurope",
        "--dry-run",
        "--after",
        after,
        "--count",
        "4",
        "--no-progress",
        "-o",
        "json",
    )
    assert ran.code == 0, ran.out + ran.err
    report = ran.json()
    assert report["dryRun"] is True
    assert [r["outcome"] for r in report["results"]] == ["create"] * 6
    assert cli("collections", "show", "dry", "-g", RG).code == 5  # nothing was sent
    compared = {c["where"].rsplit(" ", 1)[-1]: c for c in report["comparisons"]}
    assert sorted(compared) == ["10", "16", "17", "8", "9"]
    for line in ("8", "9", "10", "17"):
        assert not compared[line]["differs"], compared[line]
        assert all(row["same"] for row in compared[line]["rows"]) and len(compared[line]["rows"]) == 4
    # 30 2 * * * in Europe/Berlin across the spring-forward day: Vixie cron and cronie (man 8 cron) run a job
    # of a fixed time that the change skipped at once after it, at 03:00 CEST (01:00Z); this service does not
    # run a wall time that does not exist (docs/recurrence.md).
    nightly = compared["16"]
    assert nightly["differs"] is True and nightly["sourceSystem"] == "cron (Vixie/cronie)"
    day = timedelta(days=1)
    assert nightly["rows"] == [
        {"service": at(spring - 2 * day, 2, 30), "source": at(spring - 2 * day, 2, 30), "same": True},
        {"service": at(spring - day, 2, 30), "source": at(spring - day, 2, 30), "same": True},
        {"service": None, "source": at(spring, 3, 0), "same": False},
        {"service": at(spring + day, 2, 30), "source": at(spring + day, 2, 30), "same": True},
    ]
    assert len(report["notCarried"]) == 9

    table = cli(
        "import",
        "--from",
        "crontab",
        path,
        "--collection",
        "dry",
        "--create-collection",
        "westeurope",
        "--dry-run",
        "--after",
        after,
        "--count",
        "4",
        "--no-progress",
    )
    assert table.code == 0
    out = table.out
    assert "THIS SERVICE" in out and "CRON (VIXIE/CRONIE)" in out
    assert "DIFFERS" in out and f"-{' ' * 26}{spring.isoformat()}T03:00:00+02:00  <> differs" in out
    assert "not carried (9):" in out
    assert cli("collections", "show", "dry", "-g", RG).code == 5


@on_host
def test_dry_run_of_eventbridge_agrees_with_its_own_semantics(cli: Cli, tmp_path: Path) -> None:
    paths = [sample(tmp_path, "eventbridge-payroll.json"), sample(tmp_path, "eventbridge-schedules.json")]
    ran = cli(
        "import",
        "--from",
        "eventbridge",
        *paths,
        "--collection",
        "eb-dry",
        "--create-collection",
        "westus",
        "--dry-run",
        "--after",
        f"{Y}-01-01T00:00:00Z",
        "--count",
        "5",
        "--no-progress",
        "-o",
        "json",
    )
    assert ran.code == 0, ran.out
    compared = {c["job"]: c for c in ran.json()["comparisons"]}
    for name in ("payroll-close", "patch-tuesday", "month-end-export", "launch-announcement", "status-ping"):
        assert compared[name]["differs"] is False, compared[name]
        assert compared[name]["serviceError"] is None and compared[name]["sourceError"] is None
    payroll = [row["service"] for row in compared["payroll-close"]["rows"]]
    new_york = "America/New_York"
    assert payroll[:3] == [at(last_weekday(Y, month, 4), 18, 0, new_york) for month in (1, 2, 3)]  # last Fridays
    patch = [row["service"] for row in compared["patch-tuesday"]["rows"]]
    assert patch[:2] == [at(nth_weekday(Y, month, 1, 2), 9, 0) for month in (1, 2)]  # second Tuesdays
    assert [row["service"] for row in compared["launch-announcement"]["rows"]] == [f"{Y}-06-15T08:30:00Z"]
    assert cli("collections", "show", "eb-dry", "-g", RG).code == 5


# ------------------------------------------------------------------------------------ without a host


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The command line in this process, offline (no endpoint is reached)."""
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


OFFLINE = ("--collection", "c1", "--subscription", "sub1", "-g", "rg1", "--dry-run", "--offline", "--no-progress")


def test_hostile_inputs_are_refused_clearly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("", encoding="utf-8")
    for source in ("crontab", "kubernetes", "eventbridge", "cloud-scheduler"):
        code, _, err = run(capsys, "import", "--from", source, str(empty), *OFFLINE)
        assert (code, err) == (
            2,
            f"error: {empty}: no {source} entries found (an empty file, or not a {source} file)\n",
        )
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 64)
    for source in ("crontab", "kubernetes"):
        code, _, err = run(capsys, "import", "--from", source, str(garbage), *OFFLINE)
        assert code == 2 and err.startswith(f"error: {garbage} is not UTF-8 text"), err
    nul = tmp_path / "nul.txt"
    nul.write_text("* * * * * curl https://x.example.org/\x00\n", encoding="utf-8")
    code, _, err = run(capsys, "import", "--from", "crontab", str(nul), *OFFLINE)
    assert code == 2 and "NUL characters" in err

    levels = ["a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for level in "bcdefghi":
        previous = chr(ord(level) - 1)
        levels.append(f"{level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(levels) + "\n", encoding="utf-8")
    started = time.monotonic()
    code, _, err = run(capsys, "import", "--from", "kubernetes", str(bomb), *OFFLINE)
    assert code == 2 and "more than 200,000 values once its YAML aliases are expanded" in err
    assert time.monotonic() - started < 10
    loop = tmp_path / "loop.yaml"
    loop.write_text("&a [*a]\n", encoding="utf-8")
    code, _, err = run(capsys, "import", "--from", "cloud-scheduler", str(loop), *OFFLINE)
    assert code == 2, err

    with pytest.raises(SystemExit) as wrong:
        main(["import", "--from", "quartz", str(empty), *OFFLINE])
    assert wrong.value.code == 2
    assert "invalid choice: 'quartz'" in capsys.readouterr().err
    code, _, err = run(capsys, "import", "--from", "crontab", str(empty), "--dry-run", "--offline")
    assert code == 2 and "--from crontab needs --collection" in err
    code, _, err = run(
        capsys, "import", "--from", "crontab", str(DATA / "crontab.txt"), *OFFLINE, "--api-version", "2016-03-01"
    )
    assert code == 2 and "api-version 2026-12-01-preview" in err
    code, _, err = run(capsys, "import", str(empty), str(empty), "--dry-run", "--offline")
    assert code == 2 and "several files are for --from" in err


def test_a_crontab_of_ten_thousand_lines_is_read_in_bounded_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = ["CRON_TZ=Europe/Berlin"]
    for i in range(1, 10_000):
        if i % 50 == 0:
            lines.append(f"*/5 * * * * curl -fsS -X POST https://hooks.example.org/job/{i} -d 'n={i}'")
        elif i % 3 == 0:
            lines.append(f"# task {i}")
        else:
            lines.append(f"{i % 60} {i % 24} * * * /usr/local/bin/task-{i}.sh --quiet >> /var/log/task.log 2>&1")
    mixed = tmp_path / "mixed.crontab"
    mixed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    started = time.monotonic()
    code, out, _ = run(capsys, "import", "--from", "crontab", str(mixed), *OFFLINE, "--count", "1", "-o", "json")
    elapsed = time.monotonic() - started
    report = json.loads(out)
    assert len(report["results"]) == 199 and len(report["notCarried"]) == 6533
    assert code == 1  # an offline collection is taken as Standard: 50 jobs at most, the rest predicted to fail
    assert report["summary"]["job"]["create"] == 50
    assert elapsed < 60, elapsed

    every = tmp_path / "every.crontab"
    every.write_text("".join(f"*/5 * * * * curl https://h.example.org/{i}\n" for i in range(10_000)), encoding="utf-8")
    started = time.monotonic()
    code, _, err = run(capsys, "import", "--from", "crontab", str(every), *OFFLINE)
    assert code == 2 and "10,000 jobs, more than a job collection holds (at most 1,000" in err
    assert time.monotonic() - started < 20


# ------------------------------------------------------------------------------------ the conversions


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("curl https://e.example.org/a", ("GET", "https://e.example.org/a", {}, None)),
        (
            "curl -fsSL -XPOST -H 'Content-Type: text/plain' --data-raw '@not-a-file' https://e.example.org/b",
            ("POST", "https://e.example.org/b", {"Content-Type": "text/plain"}, "@not-a-file"),
        ),
        (
            "curl -G -d a=1 -d b=2 https://e.example.org/c?x=0",
            ("GET", "https://e.example.org/c?x=0&a=1&b=2", {}, None),
        ),
        (
            "curl --json '{\"k\": 1}' https://e.example.org/d",
            (
                "POST",
                "https://e.example.org/d",
                {"Accept": "application/json", "Content-Type": "application/json"},
                '{"k": 1}',
            ),
        ),
        ("curl -I https://e.example.org/e", ("HEAD", "https://e.example.org/e", {}, None)),
        (
            "curl --data-urlencode 'q=a b&c' https://e.example.org/f",
            ("POST", "https://e.example.org/f", {"Content-Type": "application/x-www-form-urlencoded"}, "q=a%20b%26c"),
        ),
        ("wget -qO- https://e.example.org/g", ("GET", "https://e.example.org/g", {}, None)),
        (
            "wget --quiet --post-data 'x=1' --header='X-A: b' -O /dev/null https://e.example.org/h",
            (
                "POST",
                "https://e.example.org/h",
                {"X-A": "b", "Content-Type": "application/x-www-form-urlencoded"},
                "x=1",
            ),
        ),
        ("wget -nv --spider https://e.example.org/i", ("HEAD", "https://e.example.org/i", {}, None)),
        ("/usr/bin/curl 'https://e.example.org/j' # trailing comment", ("GET", "https://e.example.org/j", {}, None)),
    ],
)
def test_curl_and_wget_commands_are_read_as_their_requests(
    command: str, expected: tuple[str, str, dict[str, str], str | None]
) -> None:
    call = http_call(command)
    assert (call.method, call.uri, call.headers, call.body) == expected


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("curl https://e.example.org/a && echo done", "more than one command"),
        ("curl https://e.example.org/a | tee /tmp/x", "more than one command"),
        ("curl https://e.example.org/a?b=1&c=2", "more than one command"),
        ("curl -d @payload.json https://e.example.org/a", "reads its body from 'payload.json'"),
        ("curl https://e.example.org/$(hostname)", "shell expansion"),
        ("curl `cat url`", "shell expansion"),
        ("curl https://e.example.org/a https://e.example.org/b", "requests 2 URLs"),
        ("curl ftp://e.example.org/a", "not an http or https URL"),
        ("curl https://e.example.org/[1-3]", "several requests"),
        ("curl --form f=@x https://e.example.org/a", "--form is not understood"),
        ("curl -u alice https://e.example.org/a", "without a password"),
        ("TOKEN=x curl https://e.example.org/a", "sets the environment variable TOKEN"),
        ("curl https://e.example.org/a < body.txt", "reads its input"),
        ("curl 'https://e.example.org/a", "unterminated single quote"),
        ("python3 /opt/job.py", "runs 'python3'"),
    ],
)
def test_other_commands_are_not_carried(command: str, reason: str) -> None:
    with pytest.raises(NotCarried) as refused:
        http_call(command)
    assert reason in str(refused.value)


@pytest.mark.parametrize(
    ("eventbridge", "unix"),
    [
        ("?", "?"),
        ("*", "*"),
        ("1", "0"),  # Sunday
        ("7", "6"),  # Saturday
        ("2-6", "1-5"),  # Monday to Friday
        ("MON-FRI", "1,2,3,4,5"),
        ("6-2", "5,6,0,1"),  # Friday to Monday, wrapping
        ("1,4,7", "0,3,6"),
        ("*/2", "0,2,4,6"),  # every second day from Sunday (unix' */2 of 0-7 would add 7, Sunday again)
        ("2/2", "1,3,5"),
        ("6L", "5L"),  # the last Friday
        ("FRIL", "FRIL"),
        ("L", "SAT"),
        ("3#2", "2#2"),  # the second Tuesday
        ("MON#1", "MON#1"),
        ("9", "9"),  # left for the service to refuse
    ],
)
def test_eventbridge_day_of_week_numbers_become_unix_ones(eventbridge: str, unix: str) -> None:
    assert unix_weekdays(eventbridge) == unix
