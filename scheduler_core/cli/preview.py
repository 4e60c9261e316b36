"""``preview JOB.json [--count N] [--after ISO] [--now ISO]``: the next N occurrences of a job definition
(the ARM JSON of a job, or just its ``properties``; ``-`` reads standard input), one ISO 8601 UTC instant
per line and nothing else. ``--now`` is the job's creation time (default: the current time, to the second)
and ``--after`` defaults to it. A bad definition prints ``error: ...`` on standard error and exits with
status 2. No connection: the service's recurrence engine runs here."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from scheduler_core.cli.common import EXIT_OK, CliError, read_json_file
from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import (
    compile_schedule,
    format_instant,
    parse_instant,
    parse_recurrence,
    parse_start_time,
)


def instant_arg(value: str) -> datetime:
    try:
        return parse_instant(value, "instant")
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(exc.rule) from None


def positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}")
    return number


def preview(args: argparse.Namespace) -> int:
    """Print the next ``args.count`` occurrences of the job definition in ``args.job``."""
    document = read_json_file(args.job, sys.stdin)
    if not isinstance(document, dict):
        raise CliError("the job definition must be a JSON object")
    properties: Any
    if "properties" in document:
        properties, prefix = document["properties"], "properties."
        if not isinstance(properties, dict):
            raise ValidationError("properties", "must be a JSON object")
    else:
        properties, prefix = document, ""
    now: datetime = args.now if args.now is not None else datetime.now(UTC).replace(microsecond=0)
    recurrence = parse_recurrence(properties.get("recurrence"), f"{prefix}recurrence")
    start = parse_start_time(properties.get("startTime"), recurrence, f"{prefix}startTime")
    schedule = compile_schedule(start, recurrence, now, f"{prefix}recurrence")
    after: datetime = args.after if args.after is not None else now
    for occurrence in schedule.occurrences(after, args.count):
        sys.stdout.write(format_instant(occurrence) + "\n")
    return EXIT_OK


def add_preview_command(commands: Any) -> None:
    p: argparse.ArgumentParser = commands.add_parser(
        "preview",
        help="print the next occurrences of a job definition (a file; no connection)",
        description="Print the next occurrences of a job (its ARM JSON, or just its properties), "
        "one ISO 8601 UTC instant per line.",
    )
    p.add_argument("job", metavar="JOB.json", help="job definition file, or - for standard input")
    p.add_argument("--count", type=positive, default=10, help="how many occurrences (default 10)")
    p.add_argument("--after", type=instant_arg, help="list occurrences at or after this instant (default: --now)")
    p.add_argument("--now", type=instant_arg, help="the job's creation time (default: the current time)")
    p.set_defaults(handler=preview)
