"""``export`` and ``import``: every collection and job to a JSON file, and back into a deployment.

The export reads with the connection's api-version (default: the newest, 2026-12-01-preview), so every
property of every job and each collection's calendars are in the file, with each unfinished recurring job's
effective start and runs left written out (:mod:`.series`); secrets, which the API never returns, are
listed to re-enter.

The import plans first, then acts (:mod:`.import_plan`: every request decided as the service will, in the
order the real run sends them: collections, their calendars, jobs). ``--dry-run`` prints that plan with
what each job fires in the next hour; the real run sends every request of it (those predicted to fail too,
so that the service has the last word), in the export's api-version, and reports what the service answered.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scheduler_core.cli.client import CLASSIC_API_VERSION, ApiError, SchedulerClient
from scheduler_core.cli.common import (
    EXIT_API_ERROR,
    EXIT_OK,
    CliError,
    Connection,
    add_connection_options,
    connection,
    environment,
    read_json_file,
)
from scheduler_core.cli.import_plan import (
    KINDS,
    OUTCOMES,
    Item,
    Options,
    Planner,
    Result,
    Target,
    TargetState,
    hint_for,
    identity_scope,
    plan,
)
from scheduler_core.cli.output import JSON, Progress, add_output_option, json_text, write_json, write_line, write_table
from scheduler_core.cli.preview import instant_arg, positive
from scheduler_core.cli.resources import id_segments
from scheduler_core.cli.secrets import put_secret, secret_slots, strip_secrets
from scheduler_core.cli.series import anchor, calendars_by_name
from scheduler_core.cli.sources import SOURCES, import_from_source
from scheduler_core.definitions import API_VERSIONS, wire_of
from scheduler_core.model.collection import Calendar

FORMAT = "scheduler-export"
FORMAT_VERSION = 1
COLLECTION_TYPE = "microsoft.scheduler/jobcollections"
JOB_TYPE = "microsoft.scheduler/jobcollections/jobs"

# ================================================================================================ export


def _collection_entry(
    collection: Mapping[str, Any], calendars: list[dict[str, Any]], jobs: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": collection.get("id"),
        "name": collection.get("name"),
        "location": collection.get("location"),
        "tags": collection.get("tags") or {},
        "properties": collection.get("properties") or {},
        "calendars": calendars,
        "jobs": jobs,
    }


@dataclass
class _Exported:
    """What the export gathers besides the collections: the secrets to re-enter and the jobs' schedules it
    wrote out (:func:`scheduler_core.cli.series.anchor`)."""

    secrets: list[dict[str, Any]] = field(default_factory=list)
    adjustments: list[dict[str, Any]] = field(default_factory=list)


def _export_calendars(client: SchedulerClient, group: str, name: str) -> list[dict[str, Any]]:
    """The collection's calendars, ``{"name", "properties"}`` each, with every property the API answers
    (fixed dates and recurring rules; none with a classic api-version, which has no calendars)."""
    if not client.preview:
        return []
    return [
        {"name": str(item.get("name") or "").rsplit("/", 1)[-1], "properties": item.get("properties") or {}}
        for item in client.list_calendars(group, name)
    ]


def _export_job(
    client: SchedulerClient,
    group: str,
    name: str,
    job: dict[str, Any],
    calendars: Mapping[str, Calendar],
    found: _Exported,
) -> dict[str, Any]:
    """One job of the export: anchored (its effective start and runs left written out, by the fixed dates and
    recurring rules of the collection's ``calendars``), its secrets removed and listed in ``found``."""
    clean = copy.deepcopy(job)
    adjusted = anchor(client, group, name, clean, calendars)
    if adjusted is not None:
        found.adjustments.append({"job": clean.get("id"), **adjusted})
    props = clean.get("properties")
    if isinstance(props, dict):
        strip_secrets(props)
        for slot in secret_slots(props):
            found.secrets.append(
                {
                    "job": clean.get("id"),
                    "path": f"properties.{slot.path}",
                    "required": slot.required,
                    "note": slot.note,
                    "value": None,
                }
            )
    return clean


def build_export(
    client: SchedulerClient,
    group: str | None,
    only: str | None,
    progress: Callable[[int], Progress],
) -> dict[str, Any]:
    """The export document of the subscription (or of one resource group, or of one collection), read with
    the client's api-version: with the preview (the default) every property of every job, each collection's
    calendars, and each unfinished recurring job's effective start and runs left (``adjustments``)."""
    if only:
        if not group:
            raise CliError("--collection needs a resource group: pass -g or set SCHEDULER_RESOURCE_GROUP")
        collections = [client.get_collection(group, only)]
    else:
        collections = client.list_collections(group)
    entries: list[dict[str, Any]] = []
    found = _Exported()
    with progress(len(collections)) as bar:
        for collection in collections:
            segments = id_segments(str(collection.get("id") or ""))
            rg = segments.get("resourcegroups") or group or ""
            name = str(collection.get("name") or segments.get("jobcollections") or "")
            calendars = _export_calendars(client, rg, name)
            rules = calendars_by_name(calendars)
            jobs = [_export_job(client, rg, name, job, rules, found) for job in client.list_jobs(rg, name)]
            entries.append(_collection_entry(collection, calendars, jobs))
            bar.advance(f"{name} ({len(jobs)} jobs)")
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "apiVersion": client.api_version,
        "exportedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": {"endpoint": client.endpoint, "subscription": client.conn.subscription},
        "collections": entries,
        "secretsToReenter": found.secrets,
        "adjustments": found.adjustments,
    }


def _write_file(path: str, document: Any) -> None:
    """``document`` as JSON (:func:`json_text`: what a terminal would act on is written as JSON escapes, so
    that ``-`` or a ``cat`` of the file shows it) to ``path`` (``-``: standard output), replaced atomically."""
    text = json_text(document) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    target = Path(path)
    try:
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=target.parent, prefix=f".{target.name}.", delete=False
        ) as handle:
            handle.write(text)
        os.replace(handle.name, target)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def export_command(args: argparse.Namespace) -> int:
    client = SchedulerClient(connection(args))
    client.conn.require_subscription()
    if not client.preview:
        write_line(
            f"warning: api-version {client.api_version} shows no preview property and no calendar: the file "
            "leaves them out, and the jobs without startTime are not anchored (the default api-version keeps all)",
            sys.stderr,
        )
    document = build_export(
        client,
        client.conn.resource_group,
        args.collection,
        lambda total: Progress("export", total, enabled=not args.no_progress),
    )
    _write_file(args.file, document)
    jobs = sum(len(c["jobs"]) for c in document["collections"])
    secrets = document["secretsToReenter"]
    summary = {
        "file": args.file,
        "apiVersion": document["apiVersion"],
        "collections": len(document["collections"]),
        "calendars": sum(len(c["calendars"]) for c in document["collections"]),
        "jobs": jobs,
        "secretsToReenter": len(secrets),
        "requiredSecrets": sum(1 for s in secrets if s["required"]),
        "adjustments": len(document["adjustments"]),
    }
    stream = sys.stderr if args.file == "-" else sys.stdout
    if args.output == JSON:
        write_json(summary, stream)
    else:
        write_line(
            f"exported {summary['collections']} collections ({summary['calendars']} calendars) and {jobs} jobs "
            f"to {args.file} with api-version {summary['apiVersion']}; {len(secrets)} secret places to re-enter "
            f"({summary['requiredSecrets']} required): see secretsToReenter; {summary['adjustments']} jobs' "
            "effective start or runs left written out: see adjustments",
            stream,
        )
    return EXIT_OK


# ================================================================================================ import


# ----------------------------------------------------------------------------------------- the file


def _type_of(resource: Mapping[str, Any]) -> str:
    kind = str(resource.get("type") or "").lower()
    if kind:
        return kind
    segments = id_segments(str(resource.get("id") or ""))
    if "jobs" in segments:
        return JOB_TYPE
    if "jobcollections" in segments:
        return COLLECTION_TYPE
    props = resource.get("properties")
    if isinstance(props, dict) and any(str(k).lower() == "sku" for k in props):
        return COLLECTION_TYPE
    return JOB_TYPE


def _job_body(job: Mapping[str, Any]) -> dict[str, Any]:
    """The PUT body of a job of the file: its ``properties`` without the read-only ``status``."""
    key = next((k for k in job if isinstance(k, str) and k.lower() == "properties"), None)
    if key is None:
        return {}
    props = job[key]
    if isinstance(props, dict):
        props = {k: copy.deepcopy(v) for k, v in props.items() if not (isinstance(k, str) and k.lower() == "status")}
    return {"properties": props}


def _collection_body(collection: Mapping[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(collection[k]) for k in ("location", "tags", "properties") if k in collection}


def _retarget(segments: Mapping[str, str], options: Options, name_hint: str = "") -> tuple[str, str, str, list[str]]:
    subscription = options.subscription or segments.get("subscriptions", "")
    group = options.resource_group or segments.get("resourcegroups", "")
    collection = options.collection or segments.get("jobcollections", "") or name_hint
    missing = [
        label
        for label, value in (
            ("subscription (--subscription)", subscription),
            ("resource group (-g)", group),
            ("job collection (--collection)", collection),
        )
        if not value
    ]
    return subscription, group, collection, missing


@dataclass
class Source:
    """What a file asks for: its collections, their calendars and its jobs, in the api-version to send them
    with, and the warnings about the file."""

    collections: list[Item]
    calendars: list[Item]
    jobs: list[Item]
    warnings: list[str]
    api_version: str = CLASSIC_API_VERSION


@dataclass
class _Resources:
    """A file's resources before they are addressed: each collection and job with where the file holds it
    (its ``source``: ``collections[0].jobs[1]``, ``#3``), the secret values the file fills in (job id in
    lower case to (path under ``properties``, value) pairs) and the warnings about the file."""

    collections: list[tuple[str, Any]] = field(default_factory=list)
    #: (source, calendar, index of its collection in ``collections``)
    calendars: list[tuple[str, Any, int]] = field(default_factory=list)
    jobs: list[tuple[str, Any]] = field(default_factory=list)
    api_version: str = CLASSIC_API_VERSION
    secrets: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _read_export(document: Mapping[str, Any], origin: str) -> _Resources:
    """The collections, calendars, jobs and secrets of an export file (:func:`build_export`) and the
    api-version it was read with; refused when its version is not :data:`FORMAT_VERSION`, its
    ``collections`` is no list or its ``apiVersion`` is none the service accepts. An optional secret without
    a value is left out, with a warning."""
    if document.get("version") != FORMAT_VERSION:
        raise CliError(f"{origin}: export format version {document.get('version')!r} is not supported")
    exported = document.get("collections")
    if not isinstance(exported, list):
        raise CliError(f"{origin}: 'collections' must be a list")
    found = _Resources(api_version=_file_api_version(document.get("apiVersion"), origin))
    for number, entry in enumerate(exported):
        found.collections.append((f"collections[{number}]", entry))
        its_calendars = entry.get("calendars") if isinstance(entry, dict) else None
        for index, calendar in enumerate(its_calendars if isinstance(its_calendars, list) else []):
            found.calendars.append((f"collections[{number}].calendars[{index}]", calendar, number))
        its_jobs = entry.get("jobs") if isinstance(entry, dict) else None
        for index, job in enumerate(its_jobs if isinstance(its_jobs, list) else []):
            found.jobs.append((f"collections[{number}].jobs[{index}]", job))
    unfilled = 0
    for slot in document.get("secretsToReenter") or []:
        value = slot.get("value") if isinstance(slot, dict) else None
        if isinstance(value, str) and value:
            path = str(slot.get("path") or "").removeprefix("properties.")
            found.secrets.setdefault(str(slot.get("job") or "").lower(), []).append((path, value))
        elif isinstance(slot, dict) and not slot.get("required"):
            unfilled += 1
    if unfilled:
        found.warnings.append(
            f"{unfilled} optional secret(s) in secretsToReenter have no value: those jobs are imported without "
            "them (a Storage queue or Service Bus action then sends with the function app's identity)"
        )
    return found


def _file_api_version(value: Any, origin: str) -> str:
    """An export file's ``apiVersion``: one the service accepts (spelled as it lists them), else refused;
    2016-03-01 when the file names none (the version of the first exports)."""
    if value is None:
        return CLASSIC_API_VERSION
    for known in API_VERSIONS:
        if isinstance(value, str) and value.lower() == known.lower():
            return known
    raise CliError(
        f"{origin}: apiVersion must be one of {', '.join(API_VERSIONS)} (the api-version the export read with), "
        f"not {value!r}"
    )


def _read_listing(document: Any, origin: str) -> _Resources:
    """The collections and jobs of an Azure Scheduler REST listing (a JSON list of jobs and/or collections,
    or ``{"value": [...]}``), told apart by :func:`_type_of`; refused when it is neither or holds an item
    that is no JSON object. One page of a longer listing (a ``nextLink``) is read, with a warning."""
    listing = document.get("value") if isinstance(document, dict) else document
    if not isinstance(listing, list):
        raise CliError(f'{origin}: expected an export file, a JSON list of jobs or {{"value": [...]}}')
    found = _Resources()
    if isinstance(document, dict) and document.get("nextLink"):
        found.warnings.append(
            f"{origin} is one page of a longer listing: its nextLink names more, which are not in the file "
            "(save every page and join their 'value' arrays into one JSON list)"
        )
    for number, resource in enumerate(listing):
        if not isinstance(resource, dict):
            raise CliError(f"{origin}: item #{number + 1} is not a JSON object")
        bucket = found.collections if _type_of(resource) == COLLECTION_TYPE else found.jobs
        bucket.append((f"#{number + 1}", resource))
    return found


def _collection_item(source: str, resource: Any, origin: str, options: Options) -> Item:
    """The PUT of a collection of the file, addressed by its ``id`` and ``name`` as ``options`` retarget them
    (an item with a problem when that leaves a part unknown); refused when it is no JSON object."""
    if not isinstance(resource, dict):
        raise CliError(f"{origin}: {source} is not a JSON object")
    segments = id_segments(str(resource.get("id") or ""))
    sub, group, name, missing = _retarget(segments, options, str(resource.get("name") or ""))
    if missing:
        return Item("collection", source, None, {}, "cannot tell the " + ", ".join(missing))
    return Item("collection", source, Target(sub, group, name), _collection_body(resource))


def _calendar_item(source: str, resource: Any, origin: str, collection: Item) -> Item:
    """The PUT of a calendar of the file (``{"name", "properties": {"dates"}}``) in the collection the file
    holds it in, as that collection is addressed; refused when it is no JSON object."""
    if not isinstance(resource, dict):
        raise CliError(f"{origin}: {source} is not a JSON object")
    name = str(resource.get("name") or "").rsplit("/", 1)[-1]
    body = {"properties": copy.deepcopy(resource.get("properties"))}
    if collection.target is None:
        return Item("calendar", source, None, body, f"{name or source}: its collection: {collection.problem}")
    if not name:
        return Item("calendar", source, None, body, f"{source}: cannot tell the calendar name")
    return Item("calendar", source, replace(collection.target, calendar=name), body)


def _job_item(source: str, resource: Any, origin: str, options: Options, found: _Resources) -> Item:
    """The PUT of a job of the file, addressed by its ``id`` and ``name`` (Azure Scheduler's
    ``collection/job`` too) as ``options`` retarget them (an item with a problem when that leaves a part
    unknown), with the secret values ``found`` holds for it put into its body (a warning in ``found`` for
    each place the job does not have); refused when it is no JSON object."""
    if not isinstance(resource, dict):
        raise CliError(f"{origin}: {source} is not a JSON object")
    segments = id_segments(str(resource.get("id") or ""))
    raw_name = str(resource.get("name") or segments.get("jobs") or "")
    name = raw_name.rsplit("/", 1)[-1]  # Azure Scheduler names jobs "collection/job"
    hint = raw_name.split("/", 1)[0] if "/" in raw_name else ""
    sub, group, collection, missing = _retarget(segments, options, hint)
    if not name:
        missing.insert(0, "job name")
    body = _job_body(resource)
    for path, value in found.secrets.get(str(resource.get("id") or "").lower(), []):
        props = body.get("properties")
        if not (isinstance(props, dict) and put_secret(props, path, value)):
            found.warnings.append(f"{source}: secretsToReenter names {path}, which the job does not have")
    if missing:
        label = raw_name or source
        return Item("job", source, None, body, f"{label}: cannot tell the " + ", ".join(missing))
    return Item("job", source, Target(sub, group, collection, name), body)


def _missing_collections(collections: list[Item], jobs: list[Item], location: str) -> list[Item]:
    """A Standard collection in ``location`` (``--create-collection``) for each collection the ``jobs`` are
    addressed to that none of ``collections`` is, in the order of the jobs."""
    known = {item.target.key for item in collections if item.target is not None}
    created: list[Item] = []
    for item in jobs:
        if item.target is not None and item.target.key not in known:
            known.add(item.target.key)
            target = replace(item.target, job=None)
            body = {"location": location, "properties": {"sku": {"name": "Standard"}}}
            created.append(Item("collection", f"--create-collection {location}", target, body))
    return created


def load_source(document: Any, origin: str, options: Options) -> Source:
    """The collections, calendars and jobs of an export file, or of an Azure Scheduler REST listing (a JSON
    list of jobs and/or collections, or ``{"value": [...]}``), with the api-version to send them with:
    ``--api-version``, else the export's ``apiVersion``, else 2016-03-01 (a listing's)."""
    if isinstance(document, dict) and document.get("format") == FORMAT:
        found = _read_export(document, origin)
    else:
        found = _read_listing(document, origin)
    collections = [_collection_item(source, resource, origin, options) for source, resource in found.collections]
    calendars = [
        _calendar_item(source, resource, origin, collections[number]) for source, resource, number in found.calendars
    ]
    jobs = [_job_item(source, resource, origin, options, found) for source, resource in found.jobs]
    if options.create_collection:
        collections.extend(_missing_collections(collections, jobs, options.create_collection))
    return Source(collections, calendars, jobs, found.warnings, options.api_version or found.api_version)


# -------------------------------------------------------------------------------------- the real run


def execute(results: list[Result], clients: Callable[[str], SchedulerClient], bar: Progress) -> list[Result]:
    """Send every request of the plan, in order; each result is what the service answered."""
    done: list[Result] = []
    for planned in results:
        if not planned.send or planned.target is None:
            done.append(planned)
            continue
        target = planned.target
        client = clients(target.subscription)
        outcome = replace(planned, status=None, code=None, message=None, hint=None)
        try:
            if planned.kind == "collection":
                answer = client.put_collection(target.resource_group, target.collection, planned.body)
            elif planned.kind == "calendar":
                assert target.calendar is not None
                answer = client.put_calendar(target.resource_group, target.collection, target.calendar, planned.body)
            else:
                assert target.job is not None
                answer = client.put_job(target.resource_group, target.collection, target.job, planned.body)
        except ApiError as exc:
            outcome.outcome, outcome.status, outcome.code, outcome.message = (
                "fail",
                exc.status,
                exc.arm_code,
                exc.arm_message,
            )
            outcome.hint = hint_for(exc.arm_code, exc.arm_message)
        else:
            outcome.status = answer.status
            outcome.outcome = "create" if answer.status == 201 else "replace"
            if planned.kind == "job" and planned.message and planned.message.startswith("offline"):
                outcome.message = None
        done.append(outcome)
        bar.advance(target.label)
    return done


# ------------------------------------------------------------------------------------------- report

_WOULD = {"create": "would create", "replace": "would replace", "keep": "keep", "skip": "skip", "fail": "would fail"}
_DID = {"create": "created", "replace": "replaced", "keep": "kept", "skip": "skipped", "fail": "FAILED"}


def summary_of(results: Iterable[Result]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {kind: dict.fromkeys(OUTCOMES, 0) for kind in KINDS}
    for result in results:
        counts[result.kind][result.outcome] += 1
    return counts


def _detail(result: Result) -> str:
    parts = []
    if result.outcome == "fail":
        head = " ".join(str(p) for p in (result.status, result.code) if p)
        parts.append(f"{head}: {result.message}" if head else str(result.message))
    elif result.message:
        parts.append(result.message)
    if result.hint:
        parts.append(f"(hint: {result.hint})")
    if result.next_hour is not None and result.next_hour["count"] and result.outcome in ("create", "replace"):
        parts.append(_next_hour_text(result.next_hour))
    return " ".join(parts)


#: How many of a job's instants in the next hour the table shows (``-o json`` lists up to 100).
SHOWN_INSTANTS = 3


def _next_hour_text(next_hour: Mapping[str, Any]) -> str:
    """How often a job fires in the next hour, and the first :data:`SHOWN_INSTANTS` instants."""
    count, instants = int(next_hour["count"]), list(next_hour["instants"])
    shown = ", ".join(instants[:SHOWN_INSTANTS]) + (", ..." if count > SHOWN_INSTANTS else "")
    return f"fires {count} time{'s' if count != 1 else ''} in the next hour: {shown}"


def report(results: list[Result], dry_run: bool, offline: bool, warnings: list[str], output: str) -> None:
    """The plan or the outcome on standard output: a table and the warnings (every value from the file or the
    service through :mod:`.output`'s :func:`~scheduler_core.cli.output.visible`), or one JSON document."""
    counts = summary_of(results)
    if output == JSON:
        write_json(
            {
                "dryRun": dry_run,
                "offline": offline,
                "results": [r.to_json() for r in results],
                "summary": counts,
                "warnings": warnings,
            }
        )
        return
    words = _WOULD if dry_run else _DID
    rows = [[r.kind, r.target.label if r.target else r.source, words[r.outcome], _detail(r)] for r in results]
    write_table(("kind", "target", "result", "detail"), rows, limit=0)
    for warning in warnings:
        write_line(f"warning: {warning}")

    def line(kind: str) -> str:
        c = counts[kind]
        shown = [f"{c[o]} {words[o]}" for o in ("create", "replace", "keep", "skip", "fail") if c[o]]
        return f"{kind}s: " + (", ".join(shown) if shown else "none")

    prefix = (
        "dry run (nothing sent" + ("; offline: the target was not read" if offline else "") + "): " if dry_run else ""
    )
    kinds = [kind for kind in KINDS if kind != "calendar" or any(counts[kind].values())]
    write_line(f"{prefix}" + "; ".join(line(kind) for kind in kinds))


def _clients(conn: Connection) -> Callable[[str], SchedulerClient]:
    """A client per subscription, sharing one session (the import's api-version is ``conn``'s)."""
    made: dict[str, SchedulerClient] = {}
    shared = SchedulerClient(conn)

    def client(subscription: str) -> SchedulerClient:
        key = subscription.lower()
        if key not in made:
            made[key] = SchedulerClient(replace(conn, subscription=subscription), session=shared.session)
        return made[key]

    return client


def run_import(
    document: Any,
    origin: str,
    options: Options,
    conn: Connection | None,
    dry_run: bool,
    progress: bool = True,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[Result], list[str]]:
    """Plan (and unless ``dry_run``, carry out) the import of ``document``; ``conn`` None: offline. Every
    request is sent with the source's api-version (:func:`load_source`)."""
    source = load_source(document, origin, options)
    clients = _clients(replace(conn, api_version=source.api_version)) if conn is not None else None
    identity = identity_scope(environment() if environ is None else environ)
    planner = Planner(TargetState(clients), options, identity, wire_of(source.api_version), datetime.now(UTC))
    results = plan(source.collections, source.calendars, source.jobs, planner)
    if dry_run:
        return results, source.warnings
    assert clients is not None
    with Progress("import", sum(1 for r in results if r.send), enabled=progress) as bar:
        return execute(results, clients, bar), source.warnings


def import_command(args: argparse.Namespace) -> int:
    if args.source_format is not None:
        return import_from_source(args)
    if len(args.file) != 1:
        raise CliError("import reads one export file or listing (several files are for --from)")
    args.file = args.file[0]
    if args.offline and not args.dry_run:
        raise CliError("--offline needs --dry-run (a real import reads and writes the target)")
    document = read_json_file(args.file)
    options = Options(
        subscription=args.subscription,
        resource_group=args.resource_group,
        collection=args.collection,
        create_collection=args.create_collection,
        if_exists=args.if_exists,
        completed_as=args.completed_as,
        api_version=args.api_version,
    )
    conn = None if args.offline else connection(args)
    results, warnings = run_import(document, args.file, options, conn, args.dry_run, not args.no_progress)
    report(results, args.dry_run, args.offline, warnings, args.output)
    return EXIT_API_ERROR if any(r.outcome == "fail" for r in results) else EXIT_OK


# ------------------------------------------------------------------------------------------- parser


def add_transfer_commands(commands: Any) -> None:
    p: argparse.ArgumentParser = commands.add_parser(
        "export",
        help="write every job collection and job to a JSON file (secrets omitted, listed to re-enter)",
        description="Write every job collection of the subscription (or of -g, or one --collection) with "
        "its jobs to a JSON file. Secrets are never returned by the API: each place one may go is listed in "
        "secretsToReenter.",
    )
    p.add_argument("file", metavar="FILE", help="where to write (- for standard output)")
    p.add_argument("--collection", help="only this job collection (needs -g)")
    p.add_argument("--no-progress", action="store_true", help="no progress on standard error")
    add_connection_options(p)
    add_output_option(p)
    p.set_defaults(handler=export_command)
    _add_import_command(commands)


def _add_import_command(commands: Any) -> None:
    p: argparse.ArgumentParser = commands.add_parser(
        "import",
        help="create the collections and jobs of an export file or of an Azure Scheduler REST listing",
        description="Create the job collections and jobs of an export file (python -m scheduler_core export) "
        'or of an Azure Scheduler REST listing (a JSON list of jobs, or {"value": [...]}), or with --from the jobs '
        "of another scheduler's files into --collection. Each is validated as the service will; --dry-run prints "
        "that prediction and sends nothing.",
    )
    p.add_argument(
        "file", metavar="FILE", nargs="+", help="export file or REST listing, or --from's files (- for standard input)"
    )
    p.add_argument(
        "--from",
        dest="source_format",
        choices=tuple(SOURCES),
        help="read another scheduler's jobs (a crontab, CronJob YAML, EventBridge get-schedule JSON, Cloud "
        "Scheduler describe output) into --collection; what cannot be carried is listed",
    )
    p.add_argument("--dry-run", action="store_true", help="read the target, predict every outcome, send nothing")
    p.add_argument(
        "--count", type=positive, default=5, help="with --from --dry-run: occurrences compared per job (default 5)"
    )
    p.add_argument(
        "--after", type=instant_arg, help="with --from --dry-run: compare occurrences from this instant (default: now)"
    )
    p.add_argument(
        "--offline", action="store_true", help="with --dry-run: do not read the target either (definitions only)"
    )
    p.add_argument("--collection", help="put every job into this job collection (default: each job's own)")
    p.add_argument(
        "--create-collection",
        metavar="LOCATION",
        help="create each missing collection of a REST listing (Standard plan, in LOCATION)",
    )
    p.add_argument(
        "--if-exists",
        choices=("skip", "replace", "fail"),
        default="skip",
        help="a job that already exists in the target: keep it (skip, the default), replace it, or count it as failed",
    )
    p.add_argument(
        "--completed-as",
        choices=("Disabled", "Enabled", "skip"),
        help="import jobs that had finished (Completed, Faulted; the API refuses those states) in this state, "
        "or skip them (default: send them as they are, which the service refuses)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress on standard error")
    add_connection_options(p)
    add_output_option(p)
    p.set_defaults(handler=import_command)
