"""``calendars list|put|delete``: a collection's named calendars (api-version 2026-12-01-preview).

``put`` creates or replaces a calendar from its options: ``--date`` (YYYY-MM-DD), ``--recurring`` (MM-DD
every year), ``--weekday`` (a day name) and ``--holidays COUNTRY[/SUBDIVISION]``, each repeatable but the
last, and ``--ics FILE`` (an iCalendar file of all-day events, read by the service into dates and recurring
dates). The service validates everything (its 400 is printed as it is); the jobs that name the calendar are
written again with its new dates and rules."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scheduler_core.cli.client import SchedulerClient
from scheduler_core.cli.common import (
    ENV_COLLECTION,
    EXIT_OK,
    CliError,
    add_connection_options,
    connection,
    environment,
)
from scheduler_core.cli.output import JSON, add_output_option, write_json, write_line, write_table

__all__ = ["add_calendar_commands"]

_HEADERS = ("name", "dates", "recurring dates", "week days", "holidays")


def _client(args: argparse.Namespace) -> tuple[SchedulerClient, str, str]:
    client = SchedulerClient(connection(args))
    collection = args.collection or environment().get(ENV_COLLECTION)
    if not collection:
        raise CliError(f"no job collection: pass --collection (-c) or set {ENV_COLLECTION}")
    return client, client.conn.require_resource_group(), collection


def _row(item: dict[str, Any]) -> list[Any]:
    properties = item.get("properties") or {}
    holidays = properties.get("holidays")
    entries = [holidays] if isinstance(holidays, dict) else list(holidays or [])
    return [
        str(item.get("name") or "").rsplit("/", 1)[-1],
        len(properties.get("dates") or []),
        ", ".join(properties.get("recurringDates") or []),
        ", ".join(properties.get("weekDays") or []),
        ", ".join("/".join(filter(None, (e.get("country"), e.get("subdivision")))) for e in entries),
    ]


def calendars_list(args: argparse.Namespace) -> int:
    client, group, collection = _client(args)
    items = client.list_calendars(group, collection)
    if args.output == JSON:
        write_json(items)
    else:
        write_table(_HEADERS, [_row(item) for item in items])
    return EXIT_OK


def _properties(args: argparse.Namespace) -> dict[str, Any]:
    """The calendar's ``properties`` from the command's options (the service checks each value)."""
    properties: dict[str, Any] = {}
    if args.date:
        properties["dates"] = list(args.date)
    if args.recurring:
        properties["recurringDates"] = list(args.recurring)
    if args.weekday:
        properties["weekDays"] = list(args.weekday)
    if args.holidays:
        country, _, subdivision = args.holidays.partition("/")
        properties["holidays"] = {"country": country, **({"subdivision": subdivision} if subdivision else {})}
    if args.ics:
        try:
            with open(args.ics, encoding="utf-8") as source:
                properties["iCalendar"] = source.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read {args.ics}: {exc}") from None
    if not properties:
        raise CliError("give at least one of --date, --recurring, --weekday, --holidays, --ics")
    return properties


def calendars_put(args: argparse.Namespace) -> int:
    client, group, collection = _client(args)
    answer = client.put_calendar(group, collection, args.name, {"properties": _properties(args)})
    if args.output == JSON:
        write_json(answer.body)
        return EXIT_OK
    verb = "created" if answer.status == 201 else "replaced"
    write_line(f"calendar {collection}/{args.name} {verb}", sys.stdout)
    write_table(_HEADERS, [_row(answer.body)])
    return EXIT_OK


def calendars_delete(args: argparse.Namespace) -> int:
    client, group, collection = _client(args)
    client.delete_calendar(group, collection, args.name)
    write_line(f"calendar {collection}/{args.name} deleted", sys.stdout)
    return EXIT_OK


def _command(commands: Any, name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help_text, description=help_text)
    parser.add_argument("-c", "--collection", help=f"job collection (default: ${ENV_COLLECTION})")
    add_connection_options(parser)
    add_output_option(parser)
    parser.set_defaults(handler=handler)
    return parser


def add_calendar_commands(commands: Any) -> None:
    """``calendars`` with list, put and delete."""
    top = commands.add_parser("calendars", help="list, create or replace, delete a collection's calendars")
    sub = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    _command(sub, "list", "list the calendars of a collection", calendars_list)
    p = _command(sub, "put", "create or replace a calendar (the jobs naming it get its new dates)", calendars_put)
    p.add_argument("name", metavar="CALENDAR")
    p.add_argument("--date", action="append", default=[], metavar="YYYY-MM-DD", help="a date (repeatable)")
    p.add_argument("--recurring", action="append", default=[], metavar="MM-DD", help="a date every year (repeatable)")
    p.add_argument("--weekday", action="append", default=[], metavar="DAY", help="a day of the week (repeatable)")
    p.add_argument("--holidays", metavar="COUNTRY[/SUBDIVISION]", help="a country's public holidays (DE/BY, US)")
    p.add_argument("--ics", metavar="FILE", help="an iCalendar file of all-day events")
    p = _command(sub, "delete", "delete a calendar no unfinished job names", calendars_delete)
    p.add_argument("name", metavar="CALENDAR")
