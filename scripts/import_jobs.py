#!/usr/bin/env python3
"""Compatibility wrapper: ``python -m scheduler_core import`` took over this script (docs/cli.md).

The old options keep working and mean what they meant:

    python scripts/import_jobs.py --dry-run backup.json         # offline: the definitions are checked
    SCHEDULER_API_KEY=sks_... python scripts/import_jobs.py backup.json \\
        --endpoint https://func-xyz.azurewebsites.net --create-collection westeurope

``--job-collection`` is ``--collection``; a job that exists is replaced (``--if-exists replace``, as the
old script's PUT did); ``--dry-run`` without ``--endpoint`` predicts offline, with ``--endpoint`` it also
reads the target (collections, quotas, existing jobs). Exit status: 0 all imported, 1 a job failed,
2 a bad command line or backup file, 3 no answer, 4 a refused API key.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler_core.cli import main as cli_main


def translate(argv: list[str] | None) -> list[str]:
    """The ``python -m scheduler_core import`` command line of the old one."""
    parser = argparse.ArgumentParser(
        prog="import_jobs.py", description="Import an Azure Scheduler job collection backup (JSON) into this service."
    )
    parser.add_argument("backup", help='JSON file: a list of jobs or {"value": [...]}')
    parser.add_argument("--endpoint")
    parser.add_argument("--api-key")
    parser.add_argument("--functions-key-header", action="store_true")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'")
    parser.add_argument("--subscription")
    parser.add_argument("--resource-group")
    parser.add_argument("--job-collection")
    parser.add_argument("--create-collection", metavar="LOCATION")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if not args.dry_run and not args.endpoint:
        parser.error("--endpoint is required (or use --dry-run)")
    command = ["import", args.backup, "--if-exists", "replace"]
    if args.dry_run:
        command += ["--dry-run"] if args.endpoint else ["--dry-run", "--offline"]
    for flag, value in (
        ("--endpoint", args.endpoint),
        ("--api-key", args.api_key),
        ("--subscription", args.subscription),
        ("--resource-group", args.resource_group),
        ("--collection", args.job_collection),
        ("--create-collection", args.create_collection),
    ):
        if value:
            command += [flag, value]
    if args.functions_key_header:
        command.append("--functions-key-header")
    for header in args.header:
        command += ["--header", header]
    return command


def main(argv: list[str] | None = None) -> int:
    return cli_main(translate(argv))


if __name__ == "__main__":
    raise SystemExit(main())
