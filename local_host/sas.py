"""``python -m local_host sas --queue NAME``: a SAS token for a Storage queue action that runs against the local
Azurite.

Under ``make run`` the queue endpoint is Azurite over http, and the Azure Storage SDK sends the app's token over
https only, so a Storage queue job needs a ``sasToken`` locally. Azurite accepts SAS tokens signed with its
well-known development account key (:data:`local_host.azurite.DEV_KEY`, published by Microsoft: no secret); this
prints one for ``queueMessage.sasToken``, allowing only what the action does (add messages) unless told
otherwise. It is of no use against a real storage account, whose keys differ.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

from azure.storage.queue import QueueSasPermissions, generate_queue_sas

from local_host.azurite import DEV_ACCOUNT, DEV_KEY

#: The permissions a token may carry (the letters of Azure Storage's queue SAS).
PERMISSION_LETTERS = "raup"


def queue_sas(queue: str, hours: float, permission: str, now: datetime | None = None) -> str:
    """A SAS token for ``queue`` of Azurite's development account, valid for ``hours`` from ``now``."""
    start = (now or datetime.now(UTC)).replace(microsecond=0)
    return generate_queue_sas(
        DEV_ACCOUNT,
        queue,
        DEV_KEY,
        permission=QueueSasPermissions.from_string(permission),
        start=start - timedelta(minutes=5),  # a clock a little behind Azurite's still accepts it
        expiry=start + timedelta(hours=hours),
    )


def permission_arg(value: str) -> str:
    letters = value.strip().lower()
    if not letters or any(letter not in PERMISSION_LETTERS for letter in letters):
        raise argparse.ArgumentTypeError(f"must be letters of '{PERMISSION_LETTERS}' (a: add), not {value!r}")
    return letters


def hours_arg(value: str) -> float:
    try:
        hours = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of hours, not {value!r}") from None
    if not 0 < hours <= 24 * 366:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most a year (8784 hours), not {value!r}")
    return hours


def add_sas_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "sas",
        help="print a SAS token for a Storage queue action against the local Azurite",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--queue", required=True, help="the queue's name (queueMessage.queueName)")
    parser.add_argument("--hours", type=hours_arg, default=24 * 30, help="how long it is valid (default: 30 days)")
    parser.add_argument(
        "--permission", type=permission_arg, default="a", help="queue SAS permissions (default: a, add only)"
    )
    parser.set_defaults(handler=_print_sas)


def _print_sas(args: argparse.Namespace) -> int:
    print(queue_sas(args.queue, args.hours, args.permission))
    return 0
