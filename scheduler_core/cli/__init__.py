"""Command line of ``python -m scheduler_core`` (``docs/cli.md``).

- ``preview JOB.json``: the next occurrences of a job definition (no connection; :mod:`.preview`);
- ``collections list|show|create|delete|enable|disable`` and ``jobs list|show|create|update|delete|pause|
  resume|run|rerun|history|preview``: the management API of a deployment (:mod:`.resources`);
- ``export FILE`` and ``import FILE``: every collection and job to a file and back (:mod:`.transfer`);
- ``region status|demote|promote``: which of two deployments is active, from the witness (:mod:`.regions`).

The commands that call the API use ``requests`` against its REST paths (:mod:`.client`); endpoint, API
key, subscription and resource group come from flags or environment variables (:mod:`.common`). Tables
are for people, ``--output json`` for scripts; an ARM error is printed as the service sent it and the
exit status says what kind of failure it was. Nothing here is imported by the function app.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from scheduler_core.cli.calendars import add_calendar_commands
from scheduler_core.cli.common import EXIT_INVALID, CliError
from scheduler_core.cli.output import write_error
from scheduler_core.cli.preview import add_preview_command
from scheduler_core.cli.regions import add_region_commands
from scheduler_core.cli.resources import add_resource_commands
from scheduler_core.cli.transfer import add_transfer_commands
from scheduler_core.cli.verify import add_verify_command
from scheduler_core.errors import ValidationError

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler_core",
        description="Tools for the Azure Scheduler successor: job collections and jobs of a deployment, "
        "export and import, and the recurrence preview. See docs/cli.md.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_preview_command(commands)
    add_resource_commands(commands)
    add_calendar_commands(commands)
    add_transfer_commands(commands)
    add_verify_command(commands)
    add_region_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except CliError as exc:
        write_error(str(exc))  # a message may quote what a server or a file said: printed visibly
        return exc.code
    except ValidationError as exc:
        write_error(str(exc))
        return EXIT_INVALID
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
