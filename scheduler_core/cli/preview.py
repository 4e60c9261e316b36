"""``preview JOB.json [--count N] [--after ISO] [--now ISO]``: the next N occurrences of a job definition
(the ARM JSON of a job, or just its ``properties``; ``-`` reads standard input), one ISO 8601 UTC instant
per line and nothing else. ``--now`` is the job's creation time (default: the current time, to the second)
and ``--after`` defaults to it.

The file is read as ``jobs create`` sends it (``{"properties": ...}`` without the read-only ``status``) and
validated by the service's own parser for a PUT with the newest api-version
(:func:`scheduler_core.definitions.parse_job`, with ``--now`` as the request's time): a file ``jobs create``
would have refused for its content is refused here with the same message (``error: ...`` on standard error,
exit status 2). What depends on the target collection (its plan's limits, its calendars) is not known here:
occurrences on a named calendar's dates are not left out (a note says so). The instants are the scheduled
ones: a ``jitter`` moves each by a stable offset below it (a note says so). No connection: the service's
recurrence engine runs here."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from scheduler_core import definitions
from scheduler_core.cli.common import EXIT_OK, job_body, read_json_file
from scheduler_core.cli.output import write_line
from scheduler_core.definitions import Wire
from scheduler_core.definitions._durations import format_duration
from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import format_instant, parse_instant
from scheduler_core.schedules import definition_schedule


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
    body = job_body(document, args.job)
    now: datetime = args.now if args.now is not None else datetime.now(UTC).replace(microsecond=0)
    definition = definitions.parse_job(body, now=now, wire=Wire.PREVIEW).definition
    exclusions = definition.exclusions
    if exclusions is not None and exclusions.calendars:
        names = ", ".join(exclusions.calendars)
        write_line(f"note: the dates of the calendars {names} are not known here: not left out", sys.stderr)
    if definition.jitter is not None:
        jitter = format_duration(definition.jitter.value, definition.jitter.style)
        write_line(
            f"note: scheduled instants; with jitter each fires up to {jitter} later (a stable offset of the job's "
            "identity)",
            sys.stderr,
        )
    schedule = definition_schedule(replace(definition, jitter=None), now, "")
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
