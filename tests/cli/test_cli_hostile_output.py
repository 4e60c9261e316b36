"""The command line prints what comes from outside (an import file, the service's answers) with every
character a terminal acts on escaped visibly, and reads a hostile JSON file into a clear error: run as
``python -m scheduler_core`` in a child process, as a person would, offline and against the real function
app on the local host.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.cli.common import MAX_FILE_DEPTH
from scheduler_core.definitions._json import MAX_DEPTH
from tests.cli.conftest import CLI_VARIABLES, RG, ROOT, SUB, Cli, Ran
from tests.support.jobs import http_action, job_body

#: Escape sequences that retitle the terminal, recolour and clear it, a C1 CSI, DEL, a right-to-left
#: override, an isolate, a line separator, a carriage return and a newline that forge a line.
HOSTILE = "x\x1b]0;pwned\x07\x1b[31mRED\x1b[2J\x9b2J\x7f\u202eevil\u2066iso\u2069\u2028\rforged\nerror: fake"
#: What a terminal may act on (tabs and the newlines ending lines aside).
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
#: How HOSTILE shows once escaped.
SHOWN = r"x\x1b]0;pwned\x07\x1b[31mRED\x1b[2J\x9b2J\x7f\u202eevil\u2066iso\u2069\u2028\rforged\nerror: fake"
#: ... and in a table's cell, where a run of whitespace (U+2028, CR, LF) is one space: a row is one line.
CELL = r"x\x1b]0;pwned\x07\x1b[31mRED\x1b[2J\x9b2J\x7f\u202eevil\u2066iso\u2069 forged error: fake"


def run(*argv: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
    """``python -m scheduler_core`` in a child process with no connection settings of the caller's."""
    environment = {k: v for k, v in os.environ.items() if k not in CLI_VARIABLES}
    environment.update(env or {"SCHEDULER_ENDPOINT": "http://127.0.0.1:9"})
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_core", *argv],
        cwd=ROOT,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def assert_nothing_hidden(ran: Ran) -> None:
    for name, text in (("stdout", ran.out), ("stderr", ran.err)):
        found = HIDDEN.search(text)
        assert found is None, f"{name} holds {found.group()!r}: {text!r}"


def listing() -> list[dict[str, Any]]:
    """An Azure Scheduler listing whose names, property names and values are hostile."""
    action = http_action("http://example.org/", method="GET", body=None)
    base = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs"
    return [
        {"id": f"/subscriptions/s/resourceGroups/rg{HOSTILE}/providers/Microsoft.Scheduler/jobCollections/jc/jobs/a"},
        {"id": f"{base}/b", "properties": {"action": action, HOSTILE: 1}},
        {"id": f"{base}/c", "properties": {"action": action, "state": HOSTILE}},
        {"id": f"{base}/d{HOSTILE}", "properties": {"action": action}},
    ]


def test_import_dry_run_prints_a_hostile_files_control_characters_escaped(tmp_path: Path) -> None:
    path = tmp_path / "listing.json"
    path.write_text(json.dumps(listing(), ensure_ascii=False), encoding="utf-8")

    table = run("import", str(path), "--dry-run", "--offline")
    assert table.code == 1, table.err  # every job would fail
    assert_nothing_hidden(table)
    assert table.out.count(CELL) == 3, table.out  # the group, the field's name, the job's name
    assert "\nerror: fake" not in table.out  # no forged line
    assert len(table.out.splitlines()) == 1 + 4 + 1  # the header, a row per job, the summary

    report = run("import", str(path), "--dry-run", "--offline", "-o", "json")
    assert report.code == 1, report.err
    assert_nothing_hidden(report)
    results = json.loads(report.out)["results"]  # the same values for a program, escaped as JSON
    assert results[0]["resourceGroup"] == "rg" + HOSTILE
    assert HOSTILE in results[1]["message"]
    assert results[3]["name"] == "d" + HOSTILE


def test_a_hostile_warning_of_an_export_file_is_printed_escaped(tmp_path: Path) -> None:
    job_id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j"
    document = {
        "format": "scheduler-export",
        "version": 1,
        "collections": [
            {
                "id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc",
                "name": "jc",
                "location": "westus",
                "properties": {"sku": {"name": "Standard"}},
                "jobs": [{"id": job_id, "name": "jc/j", "properties": {"state": "Enabled"}}],
            }
        ],
        "secretsToReenter": [{"job": job_id, "path": f"properties.{HOSTILE}.password", "value": "v"}],
    }
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    ran = run("import", str(path), "--dry-run", "--offline")
    assert_nothing_hidden(ran)
    assert f"warning: collections[0].jobs[0]: secretsToReenter names {SHOWN}.password" in ran.out, ran.out


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("[" * 5000 + "]" * 5000, f"must not nest deeper than {MAX_FILE_DEPTH} levels"),
        ('{"value": ' + "[" * 100_000, f"must not nest deeper than {MAX_FILE_DEPTH} levels"),
        ("[" + "9" * 5000 + "]", "is not valid JSON (a number has too many digits)"),
    ],
    ids=["5,000 levels", "100,000 open", "5,000 digits"],
)
def test_a_hostile_json_file_is_a_clear_error_and_exit_status_2(tmp_path: Path, text: str, rule: str) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(text, encoding="utf-8")
    for argv, stdin, name in (
        (("import", str(path), "--dry-run", "--offline"), None, str(path)),
        (("import", "-", "--dry-run", "--offline"), text, "-"),
        (("preview", str(path)), None, str(path)),
    ):
        ran = run(*argv, stdin=stdin)
        assert ran.code == 2, (argv, ran.err[-500:])
        assert "Traceback" not in ran.err, ran.err[-500:]
        assert ran.err == f"error: {name} {rule}" + (" (arrays and objects)\n" if "nest" in rule else "\n"), ran.err
        assert ran.out == ""


def test_what_the_service_stores_and_answers_is_printed_escaped(cli: Cli, tmp_path: Path) -> None:
    """A real import and its answers, ``collections show`` and ``export -``, against the function app."""
    collection = {
        "id": f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/jc",
        "type": "Microsoft.Scheduler/jobCollections",
        "name": "jc",
        "location": "westus",
        "tags": {"owner": HOSTILE},
        "properties": {"sku": {"name": "Standard"}},
    }
    job = {
        "id": f"{collection['id']}/jobs/j",
        **job_body(None, http_action("http://example.org/", method="GET", body=None)),
    }
    job["properties"][HOSTILE] = True  # the service refuses it, naming the field in its answer
    path = tmp_path / "listing.json"
    path.write_text(json.dumps([collection, job]), encoding="utf-8")

    imported = cli.process("import", str(path), "--no-progress")
    assert imported.code == 1, imported.err  # the collection created, the job refused by the service
    assert_nothing_hidden(imported)
    assert f"properties.{CELL}: is not a known field" in imported.out, imported.out

    shown = cli.process("collections", "show", "jc")
    assert shown.code == 0, shown.err
    assert_nothing_hidden(shown)
    assert "'owner': '" in shown.out and "pwned" in shown.out

    exported = cli.process("export", "-", "--no-progress")
    assert exported.code == 0, exported.err
    assert_nothing_hidden(exported)
    document = json.loads(exported.out)  # the same value, written as JSON escapes
    assert document["collections"][0]["tags"] == {"owner": HOSTILE}


def test_a_dry_run_predicts_the_services_depth_refusal_word_for_word(cli: Cli, tmp_path: Path) -> None:
    """A job nested deeper than the API reads, in a file the command line reads: predicted, then answered,
    as the same 400 with the same message; nothing is created."""
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH + 2):
        deep = [deep]
    collection = f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.Scheduler/jobCollections/jc"
    listing = [
        {"id": collection, "type": "Microsoft.Scheduler/jobCollections", "location": "westus"},
        {"id": f"{collection}/jobs/deep", "properties": {"action": {"type": "Http"}, "x": deep}},
    ]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(listing), encoding="utf-8")
    rule = f"the request body must not nest deeper than {MAX_DEPTH} levels (arrays and objects)"

    predicted = cli.process("import", str(path), "--dry-run", "-o", "json")
    assert predicted.code == 1, predicted.err
    done = cli.process("import", str(path), "--no-progress", "-o", "json")
    assert done.code == 1, done.err
    for ran in (predicted, done):
        job = ran.json()["results"][1]
        assert (job["outcome"], job["status"], job["code"], job["message"]) == ("fail", 400, "BadRequest", rule)
    assert cli.process("jobs", "list", "-c", "jc", "-o", "json").json() == []
