"""``import --from SOURCE FILE...``: convert, then import through the export file's machinery, then report.

The converted jobs go to the import's planner and real run (:func:`scheduler_core.cli.transfer.run_import`)
as an Azure Scheduler listing of jobs in ``--collection``, sent with api-version 2026-12-01-preview (cron
and the preview properties exist there only), so each is decided by the service's own rules and a refusal
is the service's 400 with its message. ``--dry-run`` also prints, per job, its first ``--count``
occurrences by this service's engine beside those the source system would have run (:mod:`._compare`).
Every note of what was not carried is printed after the jobs, in the order of the source.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from scheduler_core.cli.common import (
    ENV_RESOURCE_GROUP,
    ENV_SUBSCRIPTION,
    EXIT_API_ERROR,
    EXIT_OK,
    CliError,
    connection,
    environment,
)
from scheduler_core.cli.import_plan import Options, Result
from scheduler_core.cli.output import JSON, write_json, write_line, write_table
from scheduler_core.cli.sources._compare import Comparison, compare
from scheduler_core.cli.sources._model import Conversion, Names
from scheduler_core.cli.sources._reading import read_documents, read_text
from scheduler_core.cli.sources.cloud_scheduler import convert_cloud_scheduler
from scheduler_core.cli.sources.crontab import convert_crontab
from scheduler_core.cli.sources.eventbridge import convert_eventbridge
from scheduler_core.cli.sources.kubernetes import convert_kubernetes
from scheduler_core.definitions import PREVIEW_VERSION

__all__ = ["MAX_SOURCE_JOBS", "SOURCES", "convert_files", "import_from_source"]

#: The most jobs one import from a source may hold: the largest maxJobCount of a plan (P20Premium); more
#: cannot go into one collection, and each is validated as the service does (which takes its time).
MAX_SOURCE_JOBS = 1000


def _documents(convert: Callable[[list[Any], str, Names], Conversion]) -> Callable[[str, str, Names], Conversion]:
    def read(text: str, origin: str, names: Names) -> Conversion:
        return convert(read_documents(text, origin), origin, names)

    return read


#: The sources ``--from`` takes, and how each file of one is converted.
SOURCES: dict[str, Callable[[str, str, Names], Conversion]] = {
    "crontab": convert_crontab,
    "kubernetes": _documents(convert_kubernetes),
    "eventbridge": _documents(convert_eventbridge),
    "cloud-scheduler": _documents(convert_cloud_scheduler),
}


def convert_files(source: str, paths: list[str]) -> Conversion:
    """The jobs and notes of ``paths``, each read as ``source`` (one name space: names are unique across
    the files); a file with neither a job nor a note is refused (an empty or foreign file), and so are more
    than :data:`MAX_SOURCE_JOBS` jobs."""
    names = Names()
    found = Conversion()
    for path in paths:
        converted = SOURCES[source](read_text(path), path, names)
        if not converted.jobs and not converted.notes:
            raise CliError(f"{path}: no {source} entries found (an empty file, or not a {source} file)")
        found.extend(converted)
    if len(found.jobs) > MAX_SOURCE_JOBS:
        raise CliError(
            f"{', '.join(paths)}: {len(found.jobs):,} jobs, more than a job collection holds (at most "
            f"{MAX_SOURCE_JOBS:,}, the largest plan's maxJobCount): split the source and import each part into "
            "its own collection"
        )
    return found


def _options(args: argparse.Namespace) -> Options:
    if not args.collection:
        raise CliError(
            f"--from {args.source_format} needs --collection: the source has no job collections; name the one to "
            "put the jobs in (with --create-collection LOCATION to create it when it is missing)"
        )
    if args.api_version not in (None, PREVIEW_VERSION):
        raise CliError(
            f"--from writes cron schedules and preview properties, which only api-version {PREVIEW_VERSION} "
            f"takes, not {args.api_version}"
        )
    env = environment()
    subscription = (args.subscription or env.get(ENV_SUBSCRIPTION) or "").strip()
    group = (args.resource_group or env.get(ENV_RESOURCE_GROUP) or "").strip()
    if not subscription:
        raise CliError(f"no subscription: pass --subscription or set {ENV_SUBSCRIPTION}")
    if not group:
        raise CliError(f"no resource group: pass --resource-group (-g) or set {ENV_RESOURCE_GROUP}")
    return Options(
        subscription=subscription,
        resource_group=group,
        collection=args.collection,
        create_collection=args.create_collection,
        if_exists=args.if_exists,
        api_version=PREVIEW_VERSION,
    )


def _where_of(results: list[Result], found: Conversion) -> dict[int, str]:
    """The source location of each job result (by its index in ``results``): jobs come in listing order."""
    jobs = iter(found.jobs)
    return {index: next(jobs).where for index, result in enumerate(results) if result.kind == "job"}


def import_from_source(args: argparse.Namespace) -> int:
    """``import --from``: see the module's docstring."""
    from scheduler_core.cli.transfer import run_import, summary_of

    if args.offline and not args.dry_run:
        raise CliError("--offline needs --dry-run (a real import reads and writes the target)")
    options = _options(args)
    found = convert_files(args.source_format, list(args.file))
    listing = [{"name": job.name, "properties": job.body["properties"]} for job in found.jobs]
    conn = None if args.offline else connection(args)
    now = datetime.now(UTC).replace(microsecond=0)
    origin = ", ".join(args.file)
    results, warnings = run_import(listing, origin, options, conn, args.dry_run, not args.no_progress)
    comparisons: list[Comparison] = []
    if args.dry_run:
        after = args.after or now
        comparisons = [compare(job, now, after, args.count) for job in found.jobs]
    where = _where_of(results, found)
    failed = any(r.outcome == "fail" for r in results)
    if args.output == JSON:
        write_json(
            {
                "dryRun": args.dry_run,
                "offline": args.offline,
                "source": args.source_format,
                "files": list(args.file),
                "results": [{**r.to_json(), "where": where.get(i)} for i, r in enumerate(results)],
                "summary": summary_of(results),
                "comparisons": [c.to_json() for c in comparisons],
                "notCarried": [note.to_json() for note in found.notes],
                "warnings": warnings,
            }
        )
        return EXIT_API_ERROR if failed else EXIT_OK
    _report_table(args, results, warnings, comparisons, found)
    return EXIT_API_ERROR if failed else EXIT_OK


def _report_table(
    args: argparse.Namespace,
    results: list[Result],
    warnings: list[str],
    comparisons: list[Comparison],
    found: Conversion,
) -> None:
    from scheduler_core.cli.transfer import report

    report(results, args.dry_run, args.offline, warnings, args.output)
    for comparison in comparisons:
        _comparison_table(comparison)
    write_line()
    if not found.notes:
        write_line("not carried: nothing")
        return
    write_line(f"not carried ({len(found.notes)}):")
    for note in found.notes:
        write_line(f"  {note.where}: {note.what}: {note.why}")


def _comparison_table(comparison: Comparison) -> None:
    zone = comparison.shown_zone()

    def shown(instant: datetime | None) -> str:
        return instant.astimezone(zone).isoformat() if instant is not None else "-"

    verdict = "DIFFERS" if comparison.differs else "same"
    write_line()
    write_line(f"{comparison.job} ({comparison.where}), in {comparison.zone}: {verdict}")
    known = comparison.service_error is None and comparison.source_error is None
    rows = [[shown(a), shown(b), "<> differs" if a != b and known else ""] for a, b in comparison.rows]
    if comparison.service_error is not None:
        rows.append([f"error: {comparison.service_error}", "", ""])
    if comparison.source_error is not None:
        rows.append(["", f"unknown: {comparison.source_error}", ""])
    write_table(("this service", comparison.system, ""), rows, limit=0)
