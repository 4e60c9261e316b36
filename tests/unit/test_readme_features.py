"""The README's feature table ("How it compares") stays true to what the suite shows.

Every row of this project's column must be a "yes" backed by tests named below the table; each named file must
exist, hold test functions and be about the row's feature. Peers' cells must be one of yes / no / partial / n/a,
and a bare "partial" must point at a numbered note that exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HEADING = "## How it compares"
COLUMNS = [
    "feature",
    "this project",
    "Azure Scheduler (retired)",
    "EventBridge Scheduler",
    "Cloud Scheduler",
    "Temporal Schedules",
    "Kubernetes CronJob",
    "Logic Apps",
]
# Each row issue 16 asks for, with a word that at least one of the row's cited test files must contain
# (case-insensitive), so that a citation is about the feature and not just any test file.
ROWS = {
    "Recurrence with time zones and DST": "timeZone",
    "Cron strings": "cron",
    "Fires at the due second": "second",
    "Each occurrence runs and is recorded once": "once",
    "Retries with backoff": "exponential",
    "Error action": "error_action",
    "Retries that listen to the target": "retryOn",
    "Error action knows the failure": "failure.status",
    "Long-running calls (202 polling)": "asyncPolling",
    "Replay a failed occurrence": "rerun",
    "Alerts per job": "onFailure",
    "Flow control per target": "flowControl",
    "Overlap policy": "BufferOne",
    "Missed-run policy (catch-up window)": "RunAll",
    "Pause after failures": "pauseAfterFailures",
    "Delete after completion": "deleteAfterCompletion",
    "History retention": "historyRetention",
    "Backfill": "backfill",
    "Jitter": "jitter",
    "Calendar exclusions": "exclusions",
    "Business days and holiday calendars": "NextBusinessDay",
    "Labels, search and bulk actions": "tags",
    "Payload placeholders": "@{",
    "Signed webhooks (Standard Webhooks)": "StandardWebhooks",
    "Managed identity calls": "ManagedServiceIdentity",
    "Targets: HTTP, Storage queue, Service Bus": "ServiceBus",
    "Old Azure Scheduler API and SDK": "azure.mgmt.scheduler",
    "Entra ID roles on the API": "Reader",
    "Metrics, traces and health": "span",
    "Web console": "dashboard",
    "CLI with import and export": "import",
    "Import from other schedulers": "crontab",
    "Self-hosted in your own subscription": "bicep",
    "Survives the loss of a region": "takeover",
}
VERDICT = re.compile(r"^(yes|no|partial|n/a)\b")
NOTE_REF = re.compile(r"\[(\d+)\]")


def section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(HEADING + "\n")
    end = text.index("\n## ", start + len(HEADING))
    return text[start:end]


def table() -> list[list[str]]:
    lines = [line for line in section().splitlines() if line.startswith("|")]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    assert rows and rows[1][0].startswith("---"), "the section's table has a header and a separator line"
    return [rows[0], *rows[2:]]


def notes() -> dict[str, str]:
    found: dict[str, str] = {}
    for match in re.finditer(r"^(\d+)\. (.+?)(?=^\d+\. |^\S|\Z)", section(), re.MULTILINE | re.DOTALL):
        found[match.group(1)] = " ".join(match.group(2).split())
    return found


def citations() -> dict[str, list[str]]:
    text = section()
    listing = text[text.index("Where each **yes** of this project is tested:") :]
    cited: dict[str, list[str]] = {}
    for item in re.split(r"^- ", listing, flags=re.MULTILINE)[1:]:
        row, _, files = " ".join(item.split()).partition(": `")
        cited[row] = re.findall(r"`?(tests/[\w/]+\.py)`", "`" + files)
    return cited


def test_the_section_sits_after_the_summary_and_before_getting_started() -> None:
    text = README.read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[:2] == [HEADING, "## The two commands"]
    assert text.count("](#how-it-compares)") == 1, "one link elsewhere in the README points at the section"


def test_the_columns_are_this_project_and_the_peers_issue_16_names() -> None:
    header, *rows = table()
    assert header == COLUMNS
    assert all(len(row) == len(COLUMNS) for row in rows), [row[0] for row in rows if len(row) != len(COLUMNS)]


def test_every_row_issue_16_asks_for_is_there_once() -> None:
    names = [row[0] for row in table()[1:]]
    assert sorted(names) == sorted(ROWS)


def test_every_cell_is_a_verdict_and_every_bare_partial_points_at_a_note() -> None:
    defined = notes()
    used: set[str] = set()
    for row in table()[1:]:
        for column, cell in zip(COLUMNS[1:], row[1:], strict=True):
            assert VERDICT.match(cell), f"{row[0]} / {column}: {cell!r} does not start with yes, no, partial or n/a"
            refs = NOTE_REF.findall(cell)
            used.update(refs)
            if cell.startswith("partial") and not cell.startswith("partial:"):
                assert refs, f"{row[0]} / {column}: a partial without a reason needs a numbered note"
    assert used <= defined.keys(), f"notes used but not written: {sorted(used - defined.keys())}"
    assert defined.keys() <= used, f"notes written but not used: {sorted(defined.keys() - used)}"
    assert sorted(defined, key=int) == [str(n) for n in range(1, len(defined) + 1)]


def test_this_projects_column_is_yes_on_every_row_and_each_row_cites_tests() -> None:
    cited = citations()
    for row in table()[1:]:
        assert row[1].startswith("yes"), f"{row[0]}: this project's cell is {row[1]!r}"
    assert sorted(cited) == sorted(ROWS), "the list of tests has one entry per row, named as in the table"
    assert all(cited.values()), [row for row, files in cited.items() if not files]


def functions_named_test(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    ]


@pytest.mark.parametrize("row", sorted(ROWS))
def test_each_cited_file_exists_holds_tests_and_is_about_the_row(row: str) -> None:
    files = citations()[row]
    texts: list[str] = []
    for name in files:
        path = ROOT / name
        assert path.is_file(), f"{row}: {name} does not exist"
        assert path.name.startswith("test_"), f"{row}: {name} is not a file pytest collects"
        assert functions_named_test(path), f"{row}: {name} holds no test function"
        texts.append(path.read_text(encoding="utf-8").lower())
    word = ROWS[row].lower()
    assert any(word in text for text in texts), f"{row}: none of {files} mentions {ROWS[row]!r}"


def test_the_links_inside_the_section_point_at_headings_of_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    slugs = {
        re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    for anchor in re.findall(r"\]\(#([^)]+)\)", section()):
        assert anchor in slugs, anchor
