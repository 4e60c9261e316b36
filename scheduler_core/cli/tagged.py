"""``jobs pause|resume|delete --tag NAME=VALUE ...``: one command for every job of a collection whose tags
match (``$filter`` with api-version 2026-12-01-preview, so the service decides what matches). The matching
jobs are counted and named on standard error first; ``--dry-run`` stops there, otherwise the command asks
(``--yes`` answers) and then acts on each job in turn, one line per job, exit status 1 when any failed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from scheduler_core.cli.client import ApiError, SchedulerClient
from scheduler_core.cli.common import ENV_COLLECTION, EXIT_API_ERROR, EXIT_OK, CliError, environment
from scheduler_core.cli.output import write_line

__all__ = ["Act", "act_on_tagged"]

#: What to do to one job: (client, resource group, collection, job name).
Act = Callable[[SchedulerClient, str, str, str], object]


def act_on_tagged(
    args: argparse.Namespace,
    client: SchedulerClient,
    group: str,
    verb: str,
    act: Act,
    confirm: Callable[[str, bool], None],
) -> int:
    """Count and name the jobs matching ``args.tag``, then (unless ``args.dry_run``) ask with ``confirm``
    and ``act`` on each."""
    if args.job:
        raise CliError("give a JOB or --tag, not both")
    collection = args.collection or environment().get(ENV_COLLECTION)
    if not collection:
        raise CliError(f"no job collection: pass --collection (-c) or set {ENV_COLLECTION}")
    jobs = client.list_jobs(group, collection, tags=args.tag)
    names = [str(job.get("name") or "").rsplit("/", 1)[-1] for job in jobs]
    shown = ", ".join(f"{name}={value}" for name, value in args.tag)
    write_line(f"{len(names)} job(s) of {collection} tagged {shown}: {', '.join(names) or 'none'}", sys.stderr)
    if args.dry_run or not names:
        return EXIT_OK
    confirm(f"{verb.capitalize()} these {len(names)} job(s)?", args.yes)
    failed = 0
    for name in names:
        try:
            act(client, group, collection, name)
        except ApiError as exc:
            failed += 1
            write_line(f"{name}: failed: {exc}", sys.stdout)
        else:
            write_line(f"{name}: {verb}", sys.stdout)
    return EXIT_API_ERROR if failed else EXIT_OK
