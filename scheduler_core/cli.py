"""Command line of ``python -m scheduler_core``.

Subcommands are registered in :func:`build_parser`; each has a handler ``(args) -> exit code``.

``preview JOB.json [--count N] [--after ISO] [--now ISO]`` prints the next N occurrences of a job
definition (the ARM JSON of a job, or just its ``properties``; ``-`` reads standard input), one ISO 8601
UTC instant per line and nothing else. ``--now`` is the job's creation time (default: the current time,
to the second) and ``--after`` defaults to it. A bad definition prints ``error: ...`` on standard error
and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import (
    compile_schedule,
    format_instant,
    parse_instant,
    parse_recurrence,
    parse_start_time,
)

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_INVALID = 2

Handler = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A problem to report on standard error with exit status 2."""


def _instant_arg(value: str) -> datetime:
    try:
        return parse_instant(value, "instant")
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(exc.rule) from None


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}")
    return number


def _read_json(path: str, stdin: TextIO) -> Any:
    try:
        if path == "-":
            text = stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path} is not valid JSON: {exc}") from None


def preview(args: argparse.Namespace) -> int:
    """Print the next ``args.count`` occurrences of the job definition in ``args.job``."""
    document = _read_json(args.job, sys.stdin)
    if not isinstance(document, dict):
        raise CliError("the job definition must be a JSON object")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scheduler_core", description="Tools for the Azure Scheduler successor."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    p = commands.add_parser(
        "preview",
        help="print the next occurrences of a job definition",
        description="Print the next occurrences of a job (its ARM JSON, or just its properties), "
        "one ISO 8601 UTC instant per line.",
    )
    p.add_argument("job", metavar="JOB.json", help="job definition file, or - for standard input")
    p.add_argument("--count", type=_positive, default=10, help="how many occurrences (default 10)")
    p.add_argument("--after", type=_instant_arg, help="list occurrences at or after this instant (default: --now)")
    p.add_argument("--now", type=_instant_arg, help="the job's creation time (default: the current time)")
    p.set_defaults(handler=preview)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except (ValidationError, CliError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_INVALID
