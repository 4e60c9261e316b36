"""``export`` and ``import``: every collection and job to a JSON file, and back into a deployment.

The import plans first, then acts. The plan reads the target (its collections, their jobs, the
subscription's Free collections) and decides each request as the service will: the same name rule
(``scheduler_core.api.paths``), the same definition parser (``scheduler_core.definitions.parse_job``,
with the collection plan's default retry interval and the stored job's secrets standing in for a
replace), the same plan and quota rules (``scheduler_core.service.plans``), ``maxJobCount`` counted over
the collection's jobs and those the import creates before, the same refusal of a finished job, in the
service's order, and the same error code and message. ``--dry-run`` prints that plan; the real run sends
every request of it (those predicted to fail too, so that the service has the last word) and reports
what the service answered.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from scheduler_core import definitions
from scheduler_core.api.handler import MAX_BODY_BYTES
from scheduler_core.api.paths import COLLECTION, JOB, RESOURCE_GROUP, SUBSCRIPTION, check_name
from scheduler_core.cli.client import API_VERSION, ApiError, SchedulerClient
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
from scheduler_core.cli.output import JSON, Progress, add_output_option, json_text, write_json, write_line, write_table
from scheduler_core.cli.resources import id_segments
from scheduler_core.cli.secrets import SECRET_NAMES, put_secret, secret_slots, stand_ins, strip_secrets
from scheduler_core.definitions import CollectionSpec, JobSpec
from scheduler_core.definitions._json import read_json
from scheduler_core.errors import (
    ConflictError,
    PayloadTooLargeError,
    QuotaExceededError,
    SchedulerError,
    ValidationError,
)
from scheduler_core.identity import IdentityScope
from scheduler_core.model import JobCollection, JobDefinition
from scheduler_core.service import plans
from scheduler_core.service.reads import collection_not_found
from scheduler_core.storage.keys import CollectionRef, JobRef, escape_key

FORMAT = "scheduler-export"
FORMAT_VERSION = 1
COLLECTION_TYPE = "microsoft.scheduler/jobcollections"
JOB_TYPE = "microsoft.scheduler/jobcollections/jobs"
FINAL_STATES = {"completed": "Completed", "faulted": "Faulted"}

# ================================================================================================ export


def _collection_entry(collection: Mapping[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": collection.get("id"),
        "name": collection.get("name"),
        "location": collection.get("location"),
        "tags": collection.get("tags") or {},
        "properties": collection.get("properties") or {},
        "jobs": jobs,
    }


def build_export(
    client: SchedulerClient,
    group: str | None,
    only: str | None,
    progress: Callable[[int], Progress],
) -> dict[str, Any]:
    """The export document of the subscription (or of one resource group, or of one collection)."""
    if only:
        if not group:
            raise CliError("--collection needs a resource group: pass -g or set SCHEDULER_RESOURCE_GROUP")
        collections = [client.get_collection(group, only)]
    else:
        collections = client.list_collections(group)
    entries: list[dict[str, Any]] = []
    to_reenter: list[dict[str, Any]] = []
    with progress(len(collections)) as bar:
        for collection in collections:
            segments = id_segments(str(collection.get("id") or ""))
            rg = segments.get("resourcegroups") or group or ""
            name = str(collection.get("name") or segments.get("jobcollections") or "")
            jobs: list[dict[str, Any]] = []
            for job in client.list_jobs(rg, name):
                clean = copy.deepcopy(job)
                props = clean.get("properties")
                if isinstance(props, dict):
                    strip_secrets(props)
                    for slot in secret_slots(props):
                        to_reenter.append(
                            {
                                "job": clean.get("id"),
                                "path": f"properties.{slot.path}",
                                "required": slot.required,
                                "note": slot.note,
                                "value": None,
                            }
                        )
                jobs.append(clean)
            entries.append(_collection_entry(collection, jobs))
            bar.advance(f"{name} ({len(jobs)} jobs)")
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "apiVersion": API_VERSION,
        "exportedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "source": {"endpoint": client.endpoint, "subscription": client.conn.subscription},
        "collections": entries,
        "secretsToReenter": to_reenter,
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
        "collections": len(document["collections"]),
        "jobs": jobs,
        "secretsToReenter": len(secrets),
        "requiredSecrets": sum(1 for s in secrets if s["required"]),
    }
    stream = sys.stderr if args.file == "-" else sys.stdout
    if args.output == JSON:
        write_json(summary, stream)
    else:
        write_line(
            f"exported {summary['collections']} collections and {jobs} jobs to {args.file}; "
            f"{len(secrets)} secret places to re-enter ({summary['requiredSecrets']} required): "
            "see secretsToReenter",
            stream,
        )
    return EXIT_OK


# ================================================================================================ import


@dataclass(frozen=True)
class Target:
    subscription: str
    resource_group: str
    collection: str
    job: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (escape_key(self.subscription), escape_key(self.resource_group), escape_key(self.collection))

    @property
    def label(self) -> str:
        base = f"{self.resource_group}/{self.collection}"
        return f"{base}/{self.job}" if self.job is not None else base

    def collection_ref(self) -> CollectionRef:
        return CollectionRef(self.subscription, self.resource_group, self.collection)


@dataclass
class Item:
    """One request the file asks for: a collection or a job PUT (``target`` None: it cannot be addressed)."""

    kind: str  # "collection" | "job"
    source: str
    target: Target | None
    body: dict[str, Any]
    problem: str | None = None  # why it cannot be sent at all


@dataclass
class Result:
    """What happens to one item: planned (``--dry-run``) or done. ``send``: the real run sends it."""

    kind: str
    source: str
    target: Target | None
    outcome: str  # create | replace | keep | skip | fail
    status: int | None = None
    code: str | None = None
    message: str | None = None
    hint: str | None = None
    send: bool = False
    body: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        t = self.target
        return {
            "kind": self.kind,
            "source": self.source,
            "subscription": t.subscription if t else None,
            "resourceGroup": t.resource_group if t else None,
            "collection": t.collection if t else None,
            "name": (t.job if self.kind == "job" else t.collection) if t else None,
            "outcome": self.outcome,
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class Options:
    subscription: str | None = None
    resource_group: str | None = None
    collection: str | None = None
    create_collection: str | None = None  # a location
    if_exists: str = "skip"  # skip | replace | fail
    completed_as: str | None = None  # Disabled | Enabled | skip | None (sent as it is: refused)


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
    collections: list[Item]
    jobs: list[Item]
    warnings: list[str]


@dataclass
class _Resources:
    """A file's resources before they are addressed: each collection and job with where the file holds it
    (its ``source``: ``collections[0].jobs[1]``, ``#3``), the secret values the file fills in (job id in
    lower case to (path under ``properties``, value) pairs) and the warnings about the file."""

    collections: list[tuple[str, Any]] = field(default_factory=list)
    jobs: list[tuple[str, Any]] = field(default_factory=list)
    secrets: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _read_export(document: Mapping[str, Any], origin: str) -> _Resources:
    """The collections, jobs and secrets of an export file (:func:`build_export`); refused when its version
    is not :data:`FORMAT_VERSION` or its ``collections`` is no list. An optional secret without a value is
    left out, with a warning."""
    if document.get("version") != FORMAT_VERSION:
        raise CliError(f"{origin}: export format version {document.get('version')!r} is not supported")
    exported = document.get("collections")
    if not isinstance(exported, list):
        raise CliError(f"{origin}: 'collections' must be a list")
    found = _Resources()
    for number, entry in enumerate(exported):
        found.collections.append((f"collections[{number}]", entry))
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
    """The collections and jobs of an export file, or of an Azure Scheduler REST listing (a JSON list of
    jobs and/or collections, or ``{"value": [...]}``)."""
    if isinstance(document, dict) and document.get("format") == FORMAT:
        found = _read_export(document, origin)
    else:
        found = _read_listing(document, origin)
    collections = [_collection_item(source, resource, origin, options) for source, resource in found.collections]
    jobs = [_job_item(source, resource, origin, options, found) for source, resource in found.jobs]
    if options.create_collection:
        collections.extend(_missing_collections(collections, jobs, options.create_collection))
    return Source(collections, jobs, found.warnings)


# ------------------------------------------------------------------------------------- the target


class TargetState:
    """What the target holds, read once per collection (``clients`` None: offline, nothing is read)."""

    def __init__(self, clients: Callable[[str], SchedulerClient] | None) -> None:
        self.clients = clients
        self._collections: dict[tuple[str, str, str], dict[str, Any] | None] = {}
        self._jobs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._free: dict[str, list[dict[str, Any]]] = {}

    @property
    def offline(self) -> bool:
        return self.clients is None

    def collection(self, target: Target) -> dict[str, Any] | None:
        if self.clients is None:
            return None
        if target.key not in self._collections:
            client = self.clients(target.subscription)
            self._collections[target.key] = client.find_collection(target.resource_group, target.collection)
        return self._collections[target.key]

    def jobs(self, target: Target) -> list[dict[str, Any]]:
        if self.clients is None or self.collection(target) is None:
            return []
        if target.key not in self._jobs:
            client = self.clients(target.subscription)
            self._jobs[target.key] = client.list_jobs(target.resource_group, target.collection)
        return self._jobs[target.key]

    def free_collections(self, subscription: str) -> list[dict[str, Any]]:
        if self.clients is None:
            return []
        key = escape_key(subscription)
        if key not in self._free:
            items = self.clients(subscription).list_collections()
            self._free[key] = [c for c in items if ((c.get("properties") or {}).get("sku") or {}).get("name") == "Free"]
        return self._free[key]


@dataclass
class _Job:
    """A job of a collection as the plan knows it: stored, or created earlier in this import."""

    name: str  # as stored
    state: str
    previous: JobDefinition


@dataclass
class _Collection:
    name: str  # as stored (or as this import creates it)
    limits: CollectionSpec
    jobs: dict[str, _Job]
    assumed: bool = False  # offline: not read, assumed to exist with the Standard plan
    planned: bool = False  # created by this import


def _error(result: Result, exc: SchedulerError) -> Result:
    result.outcome = "fail"
    result.status = exc.status
    result.code = exc.code
    result.message = exc.message
    result.hint = hint_for(exc.code, exc.message)
    return result


def read_as_the_service(body: dict[str, Any]) -> None:
    """The service's rules of a request body, decided on ``body`` as the command line sends it: 413 over
    ``MAX_BODY_BYTES``, 400 when it nests deeper than the API reads (the service's own
    :func:`~scheduler_core.definitions._json.read_json`), with the service's message."""
    sent = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if len(sent.encode()) > MAX_BODY_BYTES:
        raise PayloadTooLargeError("", f"the request body is larger than {MAX_BODY_BYTES} bytes")
    read_json(sent, "the request body")


def hint_for(code: str | None, message: str | None) -> str | None:
    """What to do about a refusal (from its ARM code and message: the same for a prediction and an answer)."""
    if code != "BadRequest" or not message:
        return None
    field_path = message.split(": ", 1)[0] if ": " in message else ""
    if field_path.rsplit(".", 1)[-1] in SECRET_NAMES:
        return (
            "the file has no value for this secret: fill in its 'value' in secretsToReenter (an export), "
            "or add it to the job's properties (an Azure Scheduler listing never held secrets)"
        )
    if "is set by the service when a job ends" in message:
        return "a finished job: pass --completed-as Disabled (or Enabled, or skip)"
    return None


def _identity_scope(environ: Mapping[str, str]) -> IdentityScope:
    """Where the service presents its identity: as the service's settings of the same names say (set them
    here as the deployment does; the defaults are the service's: the public cloud)."""
    defaults = IdentityScope()
    hosts = tuple(
        h for h in (environ.get("SCHEDULER_IDENTITY_ALLOWED_HOSTS") or "").replace(",", ";").split(";") if h.strip()
    )
    return IdentityScope(
        service_bus_endpoint=(environ.get("SCHEDULER_SERVICE_BUS_ENDPOINT") or "").strip()
        or defaults.service_bus_endpoint,
        storage_queue_endpoint=(environ.get("SCHEDULER_STORAGE_QUEUE_ENDPOINT") or "").strip()
        or defaults.storage_queue_endpoint,
        extra_hosts=tuple(h.strip() for h in hosts),
    )


class Planner:
    """Decides each item as the service will, in the order the real run sends them."""

    def __init__(self, state: TargetState, options: Options, identity: IdentityScope) -> None:
        self.state = state
        self.options = options
        self.identity = identity
        self.collections: dict[tuple[str, str, str], _Collection | None] = {}
        self.planned_free: dict[str, list[tuple[str, str, str]]] = {}

    # ----------------------------------------------------------------------------------- collections

    def _known(self, target: Target) -> _Collection | None:
        if target.key not in self.collections:
            stored = self.state.collection(target)
            if stored is None:
                if not self.state.offline:
                    self.collections[target.key] = None
                    return None
                limits = definitions.parse_collection({"location": "offline"}, name=target.collection)
                self.collections[target.key] = _Collection(target.collection, limits, {}, assumed=True)
                return self.collections[target.key]
            body = {"location": stored.get("location"), "tags": stored.get("tags") or {}}
            body["properties"] = stored.get("properties") or {}
            limits = definitions.parse_collection(body, name=str(stored.get("name")), validate_limits=False)
            jobs: dict[str, _Job] = {}
            for job in self.state.jobs(target):
                props = {k: v for k, v in (job.get("properties") or {}).items() if k != "status"}
                name = str(job.get("name") or "").rsplit("/", 1)[-1]
                spec = definitions.read_job_definition(props, stand_ins(props))
                jobs[escape_key(name)] = _Job(name, str(props.get("state")), spec)
            self.collections[target.key] = _Collection(str(stored.get("name")), limits, jobs)
        return self.collections[target.key]

    def plan_collection(self, item: Item) -> Result:
        result = Result("collection", item.source, item.target, "create", body=item.body)
        if item.target is None:
            result.outcome, result.code, result.message = "fail", "InvalidInput", item.problem
            return result
        target = item.target
        known = self.collections.get(target.key)
        if known is None and not self.state.offline and target.key not in self.collections:
            known = self._known(target)
        if known is not None:
            result.outcome = "keep"
            result.message = "created earlier in this import" if known.planned else "exists; kept as it is"
            return result
        result.send = True
        try:
            for field_name, name in (
                (SUBSCRIPTION, target.subscription),
                (RESOURCE_GROUP, target.resource_group),
                (COLLECTION, target.collection),
            ):
                check_name(field_name, name)
            read_as_the_service(item.body)
            spec = definitions.parse_collection(item.body, name=target.collection)
            if spec.sku == "Free":
                sub = escape_key(target.subscription)
                others: list[Any] = [*self.state.free_collections(target.subscription), *self.planned_free.get(sub, [])]
                plans.check_free_collections(target.collection_ref(), spec, cast("list[JobCollection]", others))
                self.planned_free.setdefault(sub, []).append(target.key)
        except SchedulerError as exc:
            return _error(result, exc)
        result.status = 201
        self.collections[target.key] = _Collection(target.collection, spec, {}, planned=True)
        return result

    # ------------------------------------------------------------------------------------------ jobs

    def plan_job(self, item: Item) -> Result:
        result = Result("job", item.source, item.target, "create", body=item.body)
        if item.target is None or item.target.job is None:
            result.outcome, result.code, result.message = "fail", "InvalidInput", item.problem
            return result
        target = item.target
        name = target.job
        assert name is not None
        body = item.body
        props = body.get("properties")
        if isinstance(props, dict):
            state_key = next((k for k in props if isinstance(k, str) and k.lower() == "state"), None)
            state = str(props.get(state_key, "")).lower() if state_key else ""
            if state in FINAL_STATES and self.options.completed_as is not None:
                if self.options.completed_as == "skip":
                    result.outcome = "skip"
                    result.message = f"state {FINAL_STATES[state]} (--completed-as skip)"
                    return result
                props = {**props, state_key: self.options.completed_as}
                body = {**body, "properties": props}
                result.body = body
        collection = self._known(target)
        if collection is not None:
            existing = collection.jobs.get(escape_key(name))
            if existing is not None and self.options.if_exists != "replace":
                what = f"job '{existing.name}' already exists in job collection '{collection.name}'"
                if self.options.if_exists == "skip":
                    result.outcome, result.message = "skip", f"{what} (--if-exists skip)"
                else:
                    result.outcome, result.code, result.message = "fail", "AlreadyExists", f"{what} (--if-exists fail)"
                return result
        result.send = True
        try:
            spec = self._decide(target, name, body, collection)
        except SchedulerError as exc:
            return _error(result, exc)
        assert collection is not None
        created = escape_key(name) not in collection.jobs
        result.outcome, result.status = ("create", 201) if created else ("replace", 200)
        collection.jobs[escape_key(name)] = _Job(name, str(spec.state), spec.definition)
        if collection.assumed:
            result.message = "offline: the collection, its quota and its jobs were not read"
        return result

    def _decide(self, target: Target, name: str, body: dict[str, Any], collection: _Collection | None) -> JobSpec:
        """The service's decision for ``PUT .../jobs/{name}`` with ``body``: its spec, or its error."""
        for field_name, value in (
            (SUBSCRIPTION, target.subscription),
            (RESOURCE_GROUP, target.resource_group),
            (COLLECTION, target.collection),
            (JOB, name),
        ):
            check_name(field_name, value)
        read_as_the_service(body)
        if collection is None:
            raise collection_not_found(target.collection_ref())
        ref = JobRef(CollectionRef(target.subscription, target.resource_group, collection.name), name)
        limits = collection.limits
        retry = plans.default_retry_interval(limits)
        existing = collection.jobs.get(escape_key(name))
        # The service's first try does not read the job (most PUTs create); it reads it and decides again
        # when the body does not parse alone, or when it finds the job or a full collection.
        try:
            first: JobSpec | None = definitions.parse_job(body, identity=self.identity, default_retry_interval=retry)
        except ValidationError:
            if existing is None:
                raise
            first = None
        if first is not None:
            plans.check_job_fits(ref, first.definition, limits)
            if existing is None:
                if len(collection.jobs) >= limits.quota.max_job_count:
                    raise QuotaExceededError(
                        f"job collection '{collection.name}' already has {limits.quota.max_job_count} jobs, "
                        "its quota.maxJobCount"
                    )
                return first
        assert existing is not None
        if existing.state in FINAL_STATES.values():
            raise ConflictError(
                f"job '{existing.name}' is {existing.state}; a finished job cannot be updated, only deleted"
            )
        spec = definitions.parse_job(
            body, previous=existing.previous, identity=self.identity, default_retry_interval=retry
        )
        plans.check_job_fits(ref, spec.definition, limits)
        return spec


def plan(source: Source, state: TargetState, options: Options, identity: IdentityScope) -> list[Result]:
    planner = Planner(state, options, identity)
    results = [planner.plan_collection(item) for item in source.collections]
    results.extend(planner.plan_job(item) for item in source.jobs)
    return results


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
    counts: dict[str, dict[str, int]] = {
        kind: dict.fromkeys(("create", "replace", "keep", "skip", "fail"), 0) for kind in ("collection", "job")
    }
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
    return " ".join(parts)


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
    write_line(f"{prefix}{line('collection')}; {line('job')}")


def _clients(conn: Connection) -> Callable[[str], SchedulerClient]:
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
    """Plan (and unless ``dry_run``, carry out) the import of ``document``; ``conn`` None: offline."""
    source = load_source(document, origin, options)
    clients = _clients(conn) if conn is not None else None
    identity = _identity_scope(environment() if environ is None else environ)
    results = plan(source, TargetState(clients), options, identity)
    if dry_run:
        return results, source.warnings
    assert clients is not None
    with Progress("import", sum(1 for r in results if r.send), enabled=progress) as bar:
        return execute(results, clients, bar), source.warnings


def import_command(args: argparse.Namespace) -> int:
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

    p = commands.add_parser(
        "import",
        help="create the collections and jobs of an export file or of an Azure Scheduler REST listing",
        description="Create the job collections and jobs of an export file (python -m scheduler_core export) "
        'or of an Azure Scheduler REST listing (a JSON list of jobs, or {"value": [...]}). Each is '
        "validated as the service will; --dry-run prints that prediction and sends nothing.",
    )
    p.add_argument("file", metavar="FILE", help="export file or REST listing (- for standard input)")
    p.add_argument("--dry-run", action="store_true", help="read the target, predict every outcome, send nothing")
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
