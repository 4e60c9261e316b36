"""The Bicep templates parse with pycep-parser and pass checkov, offline (tools from .venv-infra)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import INFRA, ROOT, TOOL_TIMEOUT, bicep_files

pytestmark = pytest.mark.timeout(2 * TOOL_TIMEOUT)

SKIP_COMMENT = re.compile(r"checkov:skip=([A-Za-z0-9_]+)(?::\s*(.*))?")


def test_there_are_templates() -> None:
    names = {path.relative_to(INFRA).as_posix() for path in bicep_files()}
    assert "main.bicep" in names
    assert any(name.startswith("modules/") for name in names)


@pytest.mark.parametrize("path", bicep_files(), ids=lambda p: p.relative_to(INFRA).as_posix())
def test_every_bicep_file_parses_with_pycep(path: Path, pycep_results: dict[str, dict[str, Any]]) -> None:
    entry = pycep_results[path.relative_to(ROOT).as_posix()]
    assert entry["ok"], f"{path.name}: {entry.get('error')}"
    assert entry["result"].get("resources") or entry["result"].get("modules"), "nothing declared?"


@pytest.mark.parametrize("path", bicep_files(), ids=lambda p: p.relative_to(INFRA).as_posix())
def test_no_syntax_that_pycep_cannot_parse(path: Path) -> None:
    """pycep-parser 0.5.1 (checkov's) cannot parse `import` or `@export()`: checkov would skip the file."""
    text = path.read_text()
    assert not re.search(r"^\s*import\s", text, re.MULTILINE)
    assert "@export(" not in text


def test_checkov_passes_with_no_failed_checks(checkov_report: dict[str, Any]) -> None:
    summary = checkov_report["summary"]
    assert summary["parsing_errors"] == 0, summary
    assert summary["resource_count"] > 0, summary
    assert summary["passed"] > 0, summary
    failed = [
        f"{c['check_id']} {c['check_name']} on {c['resource']} ({c['file_path']}:{c['file_line_range']})"
        for c in checkov_report["results"]["failed_checks"]
    ]
    assert not failed, "checkov failed checks:\n" + "\n".join(failed)


def test_checkov_scanned_every_module(checkov_report: dict[str, Any]) -> None:
    results = checkov_report["results"]
    scanned = {
        Path(c["file_path"].lstrip("/")).as_posix()
        for key in ("passed_checks", "skipped_checks", "failed_checks")
        for c in results.get(key, [])
    }
    for module in ("modules/storage.bicep", "modules/functionapp.bicep", "modules/keyvault.bicep"):
        assert module in scanned, scanned


def test_every_checkov_skip_has_a_reason(checkov_report: dict[str, Any]) -> None:
    for check in checkov_report["results"].get("skipped_checks", []):
        reason = (check.get("check_result") or {}).get("suppress_comment", "")
        assert reason and reason != "No comment provided", check["check_id"]
        assert len(reason.strip()) >= 20, (check["check_id"], reason)


def test_every_inline_skip_comment_names_one_check_and_a_reason() -> None:
    for path in bicep_files():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if "checkov:skip" not in line:
                continue
            match = SKIP_COMMENT.search(line)
            assert match, f"{path.name}:{number}: malformed skip comment"
            assert re.fullmatch(r"CKV2?_AZURE_\d+", match.group(1)), f"{path.name}:{number}"
            assert match.group(2) and len(match.group(2).strip()) >= 20, f"{path.name}:{number}: no reason"


def test_checkov_config_skips_nothing_without_a_reason() -> None:
    """.checkov.yaml keeps checkov offline; a skip added there must carry a reason comment on its line."""
    text = (ROOT / ".checkov.yaml").read_text()
    assert re.search(r"^skip-download:\s*true", text, re.MULTILINE)
    in_skip_list = False
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^skip-check\s*:", line):
            in_skip_list = True
            continue
        if in_skip_list and stripped.startswith("- "):
            assert "#" in stripped and len(stripped.split("#", 1)[1].strip()) >= 20, line
        elif in_skip_list and stripped and not stripped.startswith("#"):
            in_skip_list = False
