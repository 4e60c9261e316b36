"""``region status|demote|promote``: which of two deployments is active (docs/regions.md), read from the witness and
told to it directly, with the deployment's witness settings in the environment (``SchedulerWitness`` or
``SchedulerWitness__blobServiceUri``, ``SCHEDULER_WITNESS_BLOB``, ``SCHEDULER_REGION_NAME``).

``demote`` keeps a region standby in every instance of it until ``promote``: it stops renewing its lease, and the
other region takes over once the lease has run out (at most a minute); ``promote`` lets it be active again and
takes the lease at once when it is free."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from scheduler_core import settings
from scheduler_core.cli.common import EXIT_INVALID, EXIT_OK, EXIT_UNREACHABLE, CliError, environment
from scheduler_core.cli.output import JSON, add_output_option, write_json, write_line
from scheduler_core.errors import ConfigurationError
from scheduler_core.regions import RegionRole, Witness, WitnessState, WitnessUnreachable

__all__ = ["add_region_commands"]

ACTIONS = {
    "status": "show which region holds the witness's lease, its epoch, and the demoted regions",
    "demote": "keep a region standby in every instance until promoted (the other takes over within a minute)",
    "promote": "let a demoted region be active again (it takes the lease at once when it is free)",
}


def add_region_commands(commands: Any) -> None:
    """``region status|demote|promote``."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "region",
        help="which of two deployments is active; demote or promote a region (docs/regions.md)",
        description="Read or tell the regions' witness, with the deployment's witness settings in the environment "
        "(SchedulerWitness or SchedulerWitness__blobServiceUri, SCHEDULER_WITNESS_BLOB, SCHEDULER_REGION_NAME).",
    )
    actions = parser.add_subparsers(dest="region_action", metavar="ACTION", required=True)
    for action, text in ACTIONS.items():
        sub = actions.add_parser(action, help=text, description=text)
        sub.add_argument("--region", metavar="NAME", help="the region (default: SCHEDULER_REGION_NAME)")
        add_output_option(sub)
        sub.set_defaults(handler=partial(region_command, action))


def region_command(action: str, args: argparse.Namespace) -> int:
    witness, region = _witness(args, needs_region=action != "status")
    try:
        if action == "demote":
            RegionRole(region, witness).demote()
        elif action == "promote":
            RegionRole(region, witness).promote()
        state = witness.read()
    except WitnessUnreachable as error:
        raise CliError(f"the witness did not answer: {error}", EXIT_UNREACHABLE) from error
    document = _document(state)
    if args.output == JSON:
        write_json(document)
        return EXIT_OK
    if action == "demote":
        write_line(
            f"region {region} demoted: it no longer renews the lease; the other region takes over once the "
            "lease has run out (at most a minute)"
        )
    elif action == "promote":
        write_line(f"region {region} promoted" + ("" if state.held_by(region) else ": standby until the lease is free"))
    active = document["active"]
    if active is not None:
        write_line(f"active region: {active} (epoch {state.epoch})")
    elif state.holder is not None:
        write_line(f"active region: none (last held by {state.holder}, epoch {state.epoch}; its lease has run out)")
    else:
        write_line("active region: none (the witness was never held)")
    write_line("demoted: " + (", ".join(document["demoted"]) or "none"))
    if document["handingBack"] is not None:
        write_line(f"handing back: {document['handingBack']} (it stays out of the lease until another region takes it)")
    return EXIT_OK


def _document(state: WitnessState) -> dict[str, Any]:
    return {
        "active": state.holder if state.leased else None,
        "epoch": state.epoch,
        "lastHolder": state.holder,
        "demoted": sorted(state.demoted),
        "handingBack": state.handing_back,
    }


def _witness(args: argparse.Namespace, *, needs_region: bool) -> tuple[Witness, str]:
    try:
        found = settings.region_settings(environment(), require_region=False)
    except ConfigurationError as error:
        raise CliError(str(error), EXIT_INVALID) from error
    account = found["witness"]
    if account is None:
        raise CliError(
            "no witness: set SchedulerWitness (or SchedulerWitness__blobServiceUri) as the deployment has it"
        )
    region = args.region or found["region_name"]
    if needs_region and not region:
        raise CliError("name the region: --region NAME (or SCHEDULER_REGION_NAME)")
    from scheduler_core.adapters.azure.witness import blob_witness

    return blob_witness(account, *found["witness_blob"]), region
