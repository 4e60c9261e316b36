"""Faults: storage lost in the middle of ``python -m scheduler_core export``.

The set-up of ``tests/e2e/test_faults_transfer.py`` (its ``transfer`` fixture and jobs): the function app on
the local host (HTTP triggers) reaching Azurite only through fault-injecting TCP proxies, the command line as a
child process, and an HTTP front that cuts storage at an exact point of the command's work, here when the
export has read half of the jobs' occurrences. A module of its own, so that it runs beside the import's.

The promise: an export that loses storage fails clearly (one error line, no traceback, a non-zero exit status,
nothing on standard output) and writes no file at all (a file already there is left as it was, and no
temporary file is left behind); once storage is back, the same command writes the whole file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_faults_transfer import JOBS, Transfer, build, no_traceback, transfer
from tests.support.waiting import wait_until

__all__ = ["transfer"]  # the fixture of test_faults_transfer, used here

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]


@pytest.mark.parametrize(("mode", "timeout", "status"), [("down", "60", 1), ("blackhole", "5", 3)])
@pytest.mark.parametrize("to_stdout", [False, True], ids=["to a file", "to standard output"])
def test_an_export_that_loses_storage_fails_clearly_and_writes_nothing(
    transfer: Transfer, tmp_path: Path, mode: str, timeout: str, status: int, to_stdout: bool
) -> None:
    build(transfer)
    folder = tmp_path / "backups"
    folder.mkdir()
    target = folder / "export.json"
    earlier = '{"format": "scheduler-export", "note": "yesterday\'s backup"}\n'
    target.write_text(earlier, encoding="utf-8")
    # Storage goes when the export has read half of the jobs' occurrences (it reads them to anchor each job).
    half = JOBS // 2

    def cut_half_way(method: str, path: str) -> None:
        if method == "GET" and path.endswith("/occurrences") and transfer.front.count("GET", "/occurrences") == half:
            transfer.storage(mode)

    transfer.front.hook = cut_half_way
    argv = ["export", "-" if to_stdout else str(target), "--no-progress", "--timeout", timeout]
    code, out, err = transfer.cli(*argv)
    transfer.front.hook = lambda method, path: None
    assert transfer.front.count("GET", "/occurrences") == half, "storage was not cut half way"
    assert code == status, (code, out[-2000:], err[-2000:])
    no_traceback(out, err)
    assert out == "", out[:2000]  # no document, not even a partial one, on standard output
    assert err.startswith("error: ") and err.count("\n") == 1, err
    # The file that was there is as it was; nothing else was written next to it (no temporary file).
    assert target.read_text(encoding="utf-8") == earlier
    assert sorted(p.name for p in folder.iterdir()) == ["export.json"]
    transfer.storage("pass")
    wait_until(transfer.front.idle, timeout=120, what="the requests held by the outage came back")
    # Once storage is back, the same command writes the whole file.
    code, out, err = transfer.cli("export", str(target), "--no-progress", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["jobs"] == JOBS
    document = json.loads(target.read_text(encoding="utf-8"))
    assert sum(len(c["jobs"]) for c in document["collections"]) == JOBS
    assert sorted(p.name for p in folder.iterdir()) == ["export.json"]
