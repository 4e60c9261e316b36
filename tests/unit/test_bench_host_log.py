"""The burst benchmark reads the local host's invocation lines (category ``Function.<name>``) from its log."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from bench.burst import read_host_log
from local_host.hostjson import invocation_log


def test_invocation_lines_of_the_host_are_read(tmp_path: Path) -> None:
    path = tmp_path / "host.log"
    handler = logging.FileHandler(path)
    formatter = logging.Formatter("%(asctime)sZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")
    formatter.converter = lambda *_: datetime(2026, 11, 30, 11, 19, 1, tzinfo=UTC).timetuple()
    handler.setFormatter(formatter)
    for function, ms in (("scan_shard", 12.5), ("execute_occurrence", 89.3), ("execute_occurrence", 40.0)):
        logger = invocation_log(function)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            logger.info(
                "function=%s trigger=queue queue=%s message=%s dequeue_count=%s -> %s in %.1f ms (invocation %s)",
                function,
                "q",
                "m",
                1,
                "ok",
                ms,
                "i",
            )
        finally:
            logger.removeHandler(handler)
    handler.close()

    log = read_host_log(path, datetime(2026, 11, 30, 11, 19, tzinfo=UTC), datetime(2026, 11, 30, 11, 20, tzinfo=UTC))

    assert log.executions == {"execute_occurrence": [89.3, 40.0]}
    assert log.outcomes == {"ok": 2}
    assert log.scans_done == datetime(2026, 11, 30, 11, 19, 1, tzinfo=UTC)
