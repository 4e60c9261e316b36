"""The import's plan: every request an import file asks for (collections, their calendars, jobs), decided as
the service will decide it, in the order the real run sends them.

The plan reads the target (its collections with their calendars and jobs, the subscription's Free
collections) and uses the service's own rules: the name rule of the paths (``scheduler_core.api.paths``),
the definition parser (``scheduler_core.definitions.parse_job`` in the import's api-version, with the
collection plan's default retry interval and a stored job's secrets standing in for a replace), the calendar
rules (``parse_calendar_body``, at most ``MAX_CALENDARS`` calendars and ``MAX_CALENDAR_DATES`` dates, a job naming a
calendar the collection lacks), the plan and quota rules (``scheduler_core.service.plans``), ``maxJobCount``
counted over the collection's jobs and those the import creates before, and the refusal of a finished job,
with the same error code and message. For each job it also computes the instants it fires at in the hour
after now (``nextHour``), by the service's recurrence engine, with the fixed dates and the recurring rules
(recurring dates, week days, holidays, iCalendar) of the calendars it names, as the service makes it carry
them; offline, the calendars are those the file creates.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any, cast

from scheduler_core import definitions
from scheduler_core.api.handler import MAX_BODY_BYTES
from scheduler_core.api.paths import CALENDAR, COLLECTION, JOB, RESOURCE_GROUP, SUBSCRIPTION, check_name
from scheduler_core.cli.client import SchedulerClient
from scheduler_core.cli.secrets import SECRET_NAMES, stand_ins
from scheduler_core.cli.series import next_hour, read_calendar
from scheduler_core.definitions import CollectionSpec, JobSpec, Wire
from scheduler_core.definitions._json import read_json
from scheduler_core.errors import (
    ConflictError,
    PayloadTooLargeError,
    QuotaExceededError,
    SchedulerError,
    ValidationError,
)
from scheduler_core.identity import IdentityScope
from scheduler_core.model import JobCollection, JobDefinition, JobState
from scheduler_core.model.calendars import CalendarRules
from scheduler_core.model.collection import Calendar
from scheduler_core.recurrence import format_instant
from scheduler_core.schedules import definition_schedule
from scheduler_core.service import plans
from scheduler_core.service.jobs import calendars_of, with_calendars
from scheduler_core.service.reads import collection_not_found
from scheduler_core.storage.keys import CollectionRef, JobRef, escape_key

FINAL_STATES = {"completed": "Completed", "faulted": "Faulted"}
#: The kinds of request an import sends, in the order it sends them.
KINDS = ("collection", "calendar", "job")
OUTCOMES = ("create", "replace", "keep", "skip", "fail")


@dataclass(frozen=True)
class Target:
    """Where one request goes: a collection, one of its calendars (``calendar``) or one of its jobs (``job``)."""

    subscription: str
    resource_group: str
    collection: str
    job: str | None = None
    calendar: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (escape_key(self.subscription), escape_key(self.resource_group), escape_key(self.collection))

    @property
    def label(self) -> str:
        base = f"{self.resource_group}/{self.collection}"
        if self.calendar is not None:
            return f"{base}/calendars/{self.calendar}"
        return f"{base}/{self.job}" if self.job is not None else base

    def collection_ref(self) -> CollectionRef:
        return CollectionRef(self.subscription, self.resource_group, self.collection)


@dataclass
class Item:
    """One request the file asks for: a collection, calendar or job PUT (``target`` None: it cannot be
    addressed)."""

    kind: str  # one of KINDS
    source: str
    target: Target | None
    body: dict[str, Any]
    problem: str | None = None  # why it cannot be sent at all


@dataclass
class Result:
    """What happens to one item: planned (``--dry-run``) or done. ``send``: the real run sends it.
    ``next_hour``: a job's instants in the hour after the plan was made (``{"count", "instants"}``)."""

    kind: str
    source: str
    target: Target | None
    outcome: str  # one of OUTCOMES
    status: int | None = None
    code: str | None = None
    message: str | None = None
    hint: str | None = None
    send: bool = False
    body: dict[str, Any] = field(default_factory=dict, repr=False)
    next_hour: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        t = self.target
        names = {"job": t.job, "calendar": t.calendar} if t else {}
        return {
            "kind": self.kind,
            "source": self.source,
            "subscription": t.subscription if t else None,
            "resourceGroup": t.resource_group if t else None,
            "collection": t.collection if t else None,
            "name": names.get(self.kind, t.collection) if t else None,
            "outcome": self.outcome,
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "nextHour": self.next_hour,
        }


@dataclass(frozen=True)
class Options:
    subscription: str | None = None
    resource_group: str | None = None
    collection: str | None = None
    create_collection: str | None = None  # a location
    if_exists: str = "skip"  # skip | replace | fail
    completed_as: str | None = None  # Disabled | Enabled | skip | None (sent as it is: refused)
    api_version: str | None = None  # None: the file's (an export's apiVersion; 2016-03-01 for a listing)


class TargetState:
    """What the target holds, read once per collection (``clients`` None: offline, nothing is read)."""

    def __init__(self, clients: Callable[[str], SchedulerClient] | None) -> None:
        self.clients = clients
        self._collections: dict[tuple[str, str, str], dict[str, Any] | None] = {}
        self._jobs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._calendars: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
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

    def calendars(self, target: Target) -> list[dict[str, Any]]:
        """The collection's calendars (none when it does not exist, or the api-version is a classic one)."""
        if self.clients is None or self.collection(target) is None:
            return []
        client = self.clients(target.subscription)
        if not client.preview:
            return []
        if target.key not in self._calendars:
            self._calendars[target.key] = client.list_calendars(target.resource_group, target.collection)
        return self._calendars[target.key]

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
    calendars: dict[str, Calendar] = field(default_factory=dict)  # by name in lower case
    assumed: bool = False  # offline: not read, assumed to exist with the Standard plan
    planned: bool = False  # created by this import

    def as_stored(self, ref: CollectionRef) -> JobCollection:
        """The collection as the service's rules take it (its plan, quota and calendars)."""
        spec = self.limits
        calendars = tuple(sorted(self.calendars.values(), key=lambda item: item.name.lower()))
        return JobCollection(
            ref,
            spec.location,
            spec.tags,
            spec.sku,
            spec.state,
            spec.quota,
            datetime.now(UTC),
            calendars=calendars,
            history_retention=spec.history_retention,
        )


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


def identity_scope(environ: Mapping[str, str]) -> IdentityScope:
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


def _check_names(target: Target, *more: tuple[str, str]) -> None:
    for field_name, value in (
        (SUBSCRIPTION, target.subscription),
        (RESOURCE_GROUP, target.resource_group),
        (COLLECTION, target.collection),
        *more,
    ):
        check_name(field_name, value)


def _final_state_override(body: dict[str, Any], completed_as: str | None) -> tuple[dict[str, Any], str | None]:
    """The body of a job to send, with a finished state (``Completed``, ``Faulted``) replaced as
    ``--completed-as`` says; and the state's name when ``--completed-as skip`` leaves the job out."""
    props = body.get("properties")
    if not isinstance(props, dict) or completed_as is None:
        return body, None
    state_key = next((k for k in props if isinstance(k, str) and k.lower() == "state"), None)
    state = str(props.get(state_key, "")).lower() if state_key else ""
    if state not in FINAL_STATES:
        return body, None
    if completed_as == "skip":
        return body, FINAL_STATES[state]
    assert state_key is not None
    return {**body, "properties": {**props, state_key: completed_as}}, None


class Planner:
    """Decides each item as the service will, in the order the real run sends them. ``now`` is the instant
    the jobs' next hour is counted from."""

    def __init__(
        self, state: TargetState, options: Options, identity: IdentityScope, wire: Wire, now: datetime
    ) -> None:
        self.state = state
        self.options = options
        self.identity = identity
        self.wire = wire
        self.now = now
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
            self.collections[target.key] = self._stored(target, stored)
        return self.collections[target.key]

    def _stored(self, target: Target, stored: Mapping[str, Any]) -> _Collection:
        """A collection of the target as read: its plan and quota, its jobs and its calendars."""
        body = {"location": stored.get("location"), "tags": stored.get("tags") or {}}
        body["properties"] = stored.get("properties") or {}
        limits = definitions.parse_collection(body, name=str(stored.get("name")), validate_limits=False, wire=self.wire)
        jobs: dict[str, _Job] = {}
        for job in self.state.jobs(target):
            props = {k: v for k, v in (job.get("properties") or {}).items() if k != "status"}
            name = str(job.get("name") or "").rsplit("/", 1)[-1]
            spec = definitions.read_job_definition(props, stand_ins(props))
            jobs[escape_key(name)] = _Job(name, str(props.get("state")), spec)
        calendars = {calendar.name.lower(): calendar for calendar in map(read_calendar, self.state.calendars(target))}
        return _Collection(str(stored.get("name")), limits, jobs, calendars)

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
            _check_names(target)
            read_as_the_service(item.body)
            spec = definitions.parse_collection(item.body, name=target.collection, wire=self.wire)
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

    # ------------------------------------------------------------------------------------- calendars

    def plan_calendar(self, item: Item) -> Result:
        result = Result("calendar", item.source, item.target, "create", body=item.body)
        if item.target is None or item.target.calendar is None:
            result.outcome, result.code, result.message = "fail", "InvalidInput", item.problem
            return result
        target, name = item.target, item.target.calendar
        collection = self._known(target)
        existing = collection.calendars.get(name.lower()) if collection is not None else None
        if collection is not None and existing is not None and self.options.if_exists != "replace":
            what = f"calendar '{existing.name}' already exists in job collection '{collection.name}'"
            if self.options.if_exists == "skip":
                result.outcome, result.message = "skip", f"{what} (--if-exists skip)"
            else:
                result.outcome, result.code, result.message = "fail", "AlreadyExists", f"{what} (--if-exists fail)"
            return result
        result.send = True
        try:
            dates, rules = self._decide_calendar(target, name, item.body, collection)
        except SchedulerError as exc:
            return _error(result, exc)
        assert collection is not None
        result.outcome, result.status = ("create", 201) if existing is None else ("replace", 200)
        stored_name = existing.name if existing is not None else name
        collection.calendars[name.lower()] = Calendar(stored_name, dates, rules)
        return result

    def _decide_calendar(
        self, target: Target, name: str, body: dict[str, Any], collection: _Collection | None
    ) -> tuple[tuple[date, ...], CalendarRules]:
        """The service's decision for ``PUT .../calendars/{name}`` with ``body``: its fixed dates and recurring
        rules (which the jobs naming it carry), or its error."""
        _check_names(target, (CALENDAR, name))
        if not self.wire.preview:
            raise ValidationError("api-version", f"calendars need api-version {definitions.PREVIEW_VERSION}")
        read_as_the_service(body)
        if collection is None:
            raise collection_not_found(target.collection_ref())
        dates, rules = definitions.parse_calendar_body(body)
        definitions.check_calendar_limits(target.collection, name, dates, collection.calendars.values())
        return dates, rules

    # ------------------------------------------------------------------------------------------ jobs

    def plan_job(self, item: Item) -> Result:
        result = Result("job", item.source, item.target, "create", body=item.body)
        if item.target is None or item.target.job is None:
            result.outcome, result.code, result.message = "fail", "InvalidInput", item.problem
            return result
        target, name = item.target, item.target.job
        body, skipped_state = _final_state_override(item.body, self.options.completed_as)
        if skipped_state is not None:
            result.outcome, result.message = "skip", f"state {skipped_state} (--completed-as skip)"
            return result
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
        result.next_hour = self._next_hour(target, collection, spec)
        if collection.assumed:
            result.message = "offline: the collection, its quota and its jobs were not read"
        return result

    def _next_hour(self, target: Target, collection: _Collection, spec: JobSpec) -> dict[str, Any]:
        """The instants the job fires at in the hour after :attr:`now`, written then (none unless enabled)."""
        if spec.state != JobState.ENABLED:
            return {"count": 0, "instants": []}
        ref = JobRef(CollectionRef(target.subscription, target.resource_group, collection.name), target.job or "")
        instants, total = next_hour(definition_schedule(spec.definition, self.now, ref.identity), self.now)
        return {"count": total, "instants": [format_instant(instant) for instant in instants]}

    def _decide(self, target: Target, name: str, body: dict[str, Any], collection: _Collection | None) -> JobSpec:
        """The service's decision for ``PUT .../jobs/{name}`` with ``body``: its spec, or its error."""
        _check_names(target, (JOB, name))
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
            first: JobSpec | None = self._parse(body, None, retry)
        except ValidationError:
            if existing is None:
                raise
            first = None
        if first is not None:
            first = self._with_calendars(first, ref, collection)
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
        spec = self._with_calendars(self._parse(body, existing.previous, retry), ref, collection)
        plans.check_job_fits(ref, spec.definition, limits)
        return spec

    def _parse(self, body: dict[str, Any], previous: JobDefinition | None, retry: Any) -> JobSpec:
        return definitions.parse_job(
            body, previous=previous, identity=self.identity, default_retry_interval=retry, wire=self.wire
        )

    @staticmethod
    def _with_calendars(spec: JobSpec, ref: JobRef, collection: _Collection) -> JobSpec:
        """``spec`` with the dates of the calendars it names (a 400 naming one the collection lacks)."""
        content = calendars_of(spec.definition, collection.as_stored(ref.collection))
        return spec if content is None else replace(spec, definition=with_calendars(spec.definition, content))


def plan(
    collections: list[Item],
    calendars: list[Item],
    jobs: list[Item],
    planner: Planner,
) -> list[Result]:
    """Every item's result, in the order the real run sends them: collections, calendars, jobs."""
    results = [planner.plan_collection(item) for item in collections]
    results.extend(planner.plan_calendar(item) for item in calendars)
    results.extend(planner.plan_job(item) for item in jobs)
    return results
