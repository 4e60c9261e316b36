"""A separate executor process for the crash test: runs one execution message with the real clock."""

from __future__ import annotations

import sys

from scheduler_core import settings, wiring
from scheduler_core.pipeline.messages import ExecutionMessage

if __name__ == "__main__":
    services = wiring.build(settings.load())
    print("started", flush=True)
    report = services.executor.execute(ExecutionMessage.from_json(sys.argv[1]))
    print(report.outcome.value, flush=True)
