"""Jobs: the PUT/PATCH body of a ``JobDefinition``, its canonical output, secrets and limits.

Durations keep the style they were written in (TimeSpan in, TimeSpan out; ISO 8601 in, ISO 8601 out), so
that both the plain azure-mgmt-scheduler client (ISO 8601 only) and one patched with
``azure.mgmt.scheduler.patch.patch_client`` (TimeSpan only) read back what they wrote. A duration the
service fills in (the default ``retryInterval``) takes the *job's style*: TimeSpan when every duration the
body carries is a TimeSpan, ISO 8601 otherwise (also when it carries none, as the API documents ISO 8601).

A PATCH is merged into the stored definition, whose durations are stored in their styles, and parsed
again: a duration the PATCH changes takes the PATCH's style, the others keep theirs, and a default filled
in takes the style of the merged job (so a TimeSpan job stays TimeSpan throughout).

The wire (:class:`~scheduler_core.definitions.Wire`) decides what a request may write and sees: the
classic wire (2016-03-01) neither takes nor shows a preview property, and a classic write keeps the stored
job's (:func:`~scheduler_core.definitions._preview.keep_preview`); the preview wire takes and shows them
all. The stores keep the preview form, plus the dates of the job's calendars (:func:`job_json`).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from dateutil.relativedelta import relativedelta

from scheduler_core.definitions._actions import (
    Prior,
    job_action_json,
    parse_action,
    read_job_action,
    restore_secrets,
)
from scheduler_core.definitions._durations import (
    ISO,
    TIMESPAN,
    DurationStyle,
    duration_style,
    format_duration,
    read_duration,
)
from scheduler_core.definitions._json import Fields, enum_value, preview_only
from scheduler_core.definitions._notifications import notifications_json, parse_notifications, read_notifications
from scheduler_core.definitions._preview import (
    PREVIEW_PROPERTIES,
    RECURRENCE_EXTRAS,
    check_jitter,
    check_notification_placeholders,
    check_placeholders,
    exclusions_json,
    keep_preview,
    parse_exclusions,
    parse_jitter,
    parse_policies,
    policies_json,
    read_exclusions,
    read_policies,
    split_recurrence,
)
from scheduler_core.definitions._versions import Wire
from scheduler_core.errors import ValidationError
from scheduler_core.identity import IdentityScope
from scheduler_core.model import JobDefinition, JobState
from scheduler_core.model.actions import JobAction, Notifications
from scheduler_core.model.retry import DEFAULT_RETRY_INTERVAL, Duration
from scheduler_core.recurrence import (
    Recurrence,
    format_instant,
    parse_recurrence,
    parse_start_time,
    validate_against_quota,
)

__all__ = [
    "MAX_JOB_CHARS",
    "JobSpec",
    "job_json",
    "job_output",
    "job_wire",
    "parse_job",
    "read_job_definition",
    "recurrence_exceeds_quota",
    "restore_secrets",
]

#: Largest job definition, in characters of compact JSON (includes/scheduler-limits-table.md: "16K").
MAX_JOB_CHARS = 16_000
#: How far ahead a job may start, and how long its recurrence may span (limits table: 18 months).
MAX_AHEAD = relativedelta(months=18)

_CLIENT_STATES = {"enabled": "Enabled", "disabled": "Disabled"}
_ALL_STATES = _CLIENT_STATES | {"completed": "Completed", "faulted": "Faulted"}
_PROPERTIES = ("startTime", "action", "recurrence", "state")
_READ_ONLY = ("id", "type", "name")
#: The recurrence's fields of the preview wire, in lower case (an error with a classic api-version).
_RECURRENCE_PREVIEW = frozenset(name.lower() for name in (*RECURRENCE_EXTRAS, "cron"))
#: Where the app's identity may go when no scope is given: the default endpoints, no extra host.
_PUBLIC_CLOUD = IdentityScope()
#: The fields of an action that hold durations (at any depth, in any casing).
_DURATION_FIELDS = frozenset({"retryinterval", "maxretryinterval", "timetolive"})


@dataclass(frozen=True)
class JobSpec:
    """A validated job: the typed ``definition`` and ``state``. The same at the wire is written from them
    when asked for (:func:`job_json`): ``properties`` is the canonical ``JobProperties`` JSON without
    ``status`` and without secrets, ``secrets`` maps dotted paths inside it
    (``action.request.authentication.password``) to the write-only values. Neither is in ``repr``, so a
    logged spec leaks nothing."""

    definition: JobDefinition
    state: JobState
    #: The style of the durations the service fills in (see the module's docstring).
    duration_style: DurationStyle = ISO

    @functools.cached_property
    def _json(self) -> tuple[dict[str, Any], dict[str, str]]:
        return job_json(self.definition, self.state)

    @property
    def properties(self) -> dict[str, Any]:
        return self._json[0]

    @property
    def secrets(self) -> dict[str, str]:
        return self._json[1]

    @property
    def start_time(self) -> datetime | None:
        return self.definition.start_time

    @property
    def recurrence(self) -> Recurrence | None:
        return self.definition.recurrence

    @property
    def action_types(self) -> tuple[str, ...]:
        return self.definition.action.action_types

    @property
    def uses_authentication(self) -> bool:
        return self.definition.action.uses_authentication


def written_style(value: object) -> DurationStyle:
    """The job's duration style: TimeSpan when every duration in ``value`` (a job's ``action``, at any
    depth) is a TimeSpan and there is at least one; ISO 8601 otherwise."""
    styles: set[DurationStyle | None] = set()
    pending: list[object] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            for key, item in node.items():
                if isinstance(key, str) and key.lower() in _DURATION_FIELDS and isinstance(item, str):
                    styles.add(duration_style(item))
                else:
                    pending.append(item)
        elif isinstance(node, list):
            pending.extend(node)
    return TIMESPAN if styles == {TIMESPAN} else ISO


def _definition_size(body: Mapping[str, Any]) -> int:
    """Characters of the body as compact JSON, without the read-only parts a client may echo back."""
    trimmed: dict[str, Any] = {k: v for k, v in body.items() if not (isinstance(k, str) and k.lower() in _READ_ONLY)}
    for key, value in list(trimmed.items()):
        if isinstance(key, str) and key.lower() == "properties" and isinstance(value, Mapping):
            trimmed[key] = {k: v for k, v in value.items() if not (isinstance(k, str) and k.lower() == "status")}
    return len(json.dumps(trimmed, ensure_ascii=False, separators=(",", ":"), default=str))


def parse_job(
    body: Mapping[str, Any],
    *,
    previous: JobDefinition | None = None,
    now: datetime | None = None,
    validate_limits: bool = True,
    identity: IdentityScope | None = None,
    default_retry_interval: timedelta = DEFAULT_RETRY_INTERVAL,
    wire: Wire = Wire.CLASSIC,
) -> JobSpec:
    """Validate the body of a job PUT (``{"properties": {...}}``), or a PATCH merged into the stored job.

    ``wire`` is the request's: the classic wire refuses every preview property as an unknown field (as
    2016-03-01 always did) and keeps those of ``previous`` (:func:`keep_preview`); the preview wire takes
    them (a PUT that leaves one out resets it to its default, as a PUT does). A job's calendars are names
    here; the service checks they exist and fills in their dates.

    ``previous`` is the stored job's definition: a secret the body omits is kept from it while the action kind, the
    authentication type and its identity (username; tenant + clientId; certificate thumbprint; storage
    account + queue; namespace + sasKeyName) and, for HTTP, the URI's scheme, host and port are unchanged.

    ``validate_limits=False`` reads a stored job back: the size and time-window limits (which depend on
    when the job was written) are skipped, and the service-set states Completed and Faulted are accepted.
    ``now`` (aware; default: the current time) is the reference for the time windows.

    ``identity`` is where the app's own identity may be presented: a Storage queue or Service Bus action
    without a SAS token or key whose host is outside it is refused (400 naming ``storageAccount`` or
    ``namespace``). The service passes the scope of its settings (``IdentityScope.from_settings``); by
    default it is that of the default endpoints (public cloud) with no extra host. A stored job read back
    (``validate_limits=False``) is not checked (the executor checks again before sending).

    ``default_retry_interval`` is the ``retryInterval`` of a retry policy (main or error action) that gives
    none, written in the job's style: 30 seconds, or a plan's default (Free: an hour).
    """
    props = _job_properties(body, wire, validate_limits=validate_limits)
    recurrence, extras = _parse_recurrence(props, wire, previous)
    start_time = parse_start_time(props.get("startTime"), recurrence, props.where("startTime"))
    preview, jitter_where = _parse_preview(props, extras, wire)
    state = _parse_state(props, validate_limits=validate_limits)
    notified = _parse_notifications(props, previous, validate_limits, identity, default_retry_interval)
    action, style = _parse_job_action(
        props,
        previous,
        validate_limits=validate_limits,
        identity=identity,
        default_retry_interval=default_retry_interval,
        wire=wire,
    )

    if validate_limits:
        _check_time_windows(props, start_time, recurrence, now or datetime.now(UTC))

    definition = JobDefinition(action, start_time, recurrence, notifications=notified, **preview)
    if previous is not None and not wire.preview:
        definition = keep_preview(definition, previous)
    if validate_limits:
        check_jitter(definition, jitter_where or f"{props.where('recurrence')}.jitter (kept from the stored job)")
        check_placeholders(definition.action, props.where("action"))
    return JobSpec(definition, state, style)


def _job_properties(body: Mapping[str, Any], wire: Wire, *, validate_limits: bool) -> Fields:
    """The job's ``properties``, after the size limit (when ``validate_limits``) and the top level are
    checked; a field ``wire`` does not take is refused as unknown."""
    if validate_limits and isinstance(body, Mapping):
        size = _definition_size(body)
        if size > MAX_JOB_CHARS:
            raise ValidationError(  # 400, as Azure Scheduler answered (413 is for a body over the byte cap)
                "", f"the job definition is {size:,} characters of JSON; at most {MAX_JOB_CHARS:,} are allowed"
            )
    top = Fields(body, "", ("properties",), ignored=_READ_ONLY, hint="; the job's fields belong inside 'properties'")
    if "properties" not in top:
        raise ValidationError("properties", "is required (a JSON object with at least an action)")
    known = _PROPERTIES + (PREVIEW_PROPERTIES if wire.preview else ())
    preview = () if wire.preview else PREVIEW_PROPERTIES
    return Fields(top.get("properties"), top.where("properties"), known, ignored=("status",), preview=preview)


def _parse_recurrence(
    props: Fields, wire: Wire, previous: JobDefinition | None
) -> tuple[Recurrence | None, dict[str, tuple[str, Any]]]:
    """The job's ``recurrence`` and, on the preview wire, its preview fields (see :func:`split_recurrence`;
    none on the classic wire, where each is an error naming the api-version that accepts it).

    The classic wire shows a cron job's recurrence without its cron strings (and so without a frequency); a
    classic write of such a recurrence (no ``frequency``) keeps the stored strings, with the written
    ``count`` and ``endTime``, and the written ``timeZone`` or else the stored one (azure-mgmt-scheduler's
    model has no ``timeZone``: its read-modify-write would otherwise move the job to UTC)."""
    recurrence_data, extras = (
        split_recurrence(props.get("recurrence")) if wire.preview else (props.get("recurrence"), {})
    )
    if not wire.preview and isinstance(recurrence_data, Mapping):
        for key in recurrence_data:
            if isinstance(key, str) and key.lower() in _RECURRENCE_PREVIEW:
                raise preview_only(f"{props.where('recurrence')}.{key}")
        stored = previous.recurrence if previous is not None else None
        if stored is not None and stored.cron and not _names(recurrence_data, "frequency"):
            kept = {"cron": stored.to_json()["cron"]}
            if stored.time_zone is not None and not _names(recurrence_data, "timeZone"):
                kept["timeZone"] = stored.time_zone  # 2016-03-01's SDK has no timeZone: it would read in UTC
            recurrence_data = {**recurrence_data, **kept}
    return parse_recurrence(recurrence_data, props.where("recurrence")), extras


def _names(data: Mapping[Any, Any], name: str) -> bool:
    """Whether ``data`` has the key ``name`` (in any casing) with a value other than null."""
    return any(
        isinstance(key, str) and key.lower() == name.lower() and value is not None for key, value in data.items()
    )


def _parse_preview(props: Fields, extras: Mapping[str, tuple[str, Any]], wire: Wire) -> tuple[dict[str, Any], str]:
    """The preview properties as JobDefinition fields (policies, then the recurrence's ``jitter`` and
    ``exclusions``), and where the body wrote ``jitter`` ("" when it did not)."""
    preview: dict[str, Any] = parse_policies(props) if wire.preview else {}
    jitter_where = f"{props.where('recurrence')}.{extras['jitter'][0]}" if "jitter" in extras else ""
    if "jitter" in extras:
        preview["jitter"] = parse_jitter(extras["jitter"][1], jitter_where)
    if "exclusions" in extras:
        key, value = extras["exclusions"]
        preview["exclusions"] = parse_exclusions(value, f"{props.where('recurrence')}.{key}")
    return preview, jitter_where


def _parse_state(props: Fields, *, validate_limits: bool) -> JobState:
    """The job's ``state`` (default Enabled); Completed and Faulted only when not ``validate_limits``."""
    if "state" not in props:
        return JobState.ENABLED
    state = JobState(enum_value(props.get("state"), props.where("state"), _ALL_STATES))
    if validate_limits and state not in _CLIENT_STATES.values():
        raise ValidationError(
            props.where("state"),
            f"'{state}' is set by the service when a job ends; a client may set only Enabled or Disabled",
        )
    return state


def _parse_job_action(
    props: Fields,
    previous: JobDefinition | None,
    *,
    validate_limits: bool,
    identity: IdentityScope | None,
    default_retry_interval: timedelta,
    wire: Wire,
) -> tuple[JobAction, DurationStyle]:
    """The job's (required) ``action`` and the job's duration style (:func:`written_style`); a secret the
    body omits is kept from ``previous`` as :func:`parse_job` describes."""
    if "action" not in props:
        raise ValidationError(props.where("action"), "is required")
    prior = _prior_action(previous) if previous is not None else None
    style = written_style(props.get("action"))
    parsed = parse_action(
        props.get("action"),
        props.where("action"),
        prior,
        limits=validate_limits,
        style=style,
        identity=(identity or _PUBLIC_CLOUD) if validate_limits else None,
        default_retry_interval=default_retry_interval,
        preview=wire.preview,
    )
    return parsed.action, style


def _properties(
    definition: JobDefinition, action: dict[str, Any], state: JobState, *, preview: bool, stored: bool
) -> dict[str, Any]:
    """The canonical ``JobProperties`` (key order: startTime, action, recurrence, state, then the preview
    properties that differ from their defaults). ``preview``: with the preview wire's properties;
    ``stored``: also with what only the stores keep (the dates of the job's calendars)."""
    properties: dict[str, Any] = {}
    if definition.start_time is not None:
        properties["startTime"] = format_instant(definition.start_time)
    properties["action"] = action
    if definition.recurrence is not None:
        recurrence = definition.recurrence.to_json(preview=preview)
        if preview and definition.jitter is not None:
            recurrence["jitter"] = format_duration(definition.jitter.value, definition.jitter.style)
        if preview and definition.exclusions is not None:
            recurrence["exclusions"] = exclusions_json(definition.exclusions, stored=stored)
        properties["recurrence"] = recurrence
    properties["state"] = str(state)
    if preview:
        properties.update(policies_json(definition))
        if definition.notifications is not None:
            properties["notifications"] = notifications_json(definition.notifications)[0]
    return properties


def _prior_action(previous: JobDefinition) -> Prior:
    """The stored ``action`` and its secrets (paths relative to it), as a PUT or PATCH may keep them."""
    output, secrets = job_action_json(previous.action)
    return Prior(output, {path.removeprefix("action."): value for path, value in secrets.items()})


def _parse_notifications(
    props: Fields,
    previous: JobDefinition | None,
    limits: bool,
    identity: IdentityScope | None,
    default_retry_interval: timedelta,
) -> Notifications | None:
    """The job's ``notifications`` (the preview wire's; None without), keeping the secrets the body omits (as the
    action's); with ``limits`` (a client's write), where the app's identity may go and their placeholders are
    checked."""
    if "notifications" not in props:
        return None
    notifications = parse_notifications(
        props.get("notifications"),
        props.where("notifications"),
        _prior_notifications(previous),
        limits=limits,
        style=written_style(props.get("action")),
        identity=(identity or _PUBLIC_CLOUD) if limits else None,
        default_retry_interval=default_retry_interval,
    )
    if limits:
        check_notification_placeholders(notifications, props.where("notifications"))
    return notifications


def _prior_notifications(previous: JobDefinition | None) -> Prior | None:
    """The stored ``notifications`` and their secrets (paths relative to it), as a PUT or PATCH may keep them."""
    if previous is None or previous.notifications is None:
        return None
    output, secrets = notifications_json(previous.notifications)
    return Prior(output, {path.removeprefix("notifications."): value for path, value in secrets.items()})


def job_json(definition: JobDefinition, state: JobState) -> tuple[dict[str, Any], dict[str, str]]:
    """A job's canonical ``JobProperties`` JSON as stored (without ``status``, without secrets; with the
    preview properties and the dates of its calendars) and its secrets by dotted path inside them."""
    output, secrets = job_action_json(definition.action)
    if definition.notifications is not None:
        secrets.update(notifications_json(definition.notifications)[1])
    return _properties(definition, output, state, preview=True, stored=True), secrets


def job_wire(definition: JobDefinition, state: JobState, wire: Wire) -> dict[str, Any]:
    """A job's canonical ``JobProperties`` JSON as ``wire`` answers it (without ``status`` and secrets):
    the classic wire shows no preview property, so a 2016-03-01 client sees exactly what it always saw."""
    output, _ = job_action_json(definition.action, preview=wire.preview)
    return _properties(definition, output, state, preview=wire.preview, stored=False)


def read_job_definition(properties: Mapping[str, Any], secrets: Mapping[str, str]) -> JobDefinition:
    """The definition of a stored job: ``properties`` is its canonical ``JobProperties`` (as
    :func:`job_json` wrote them), ``secrets`` its secrets by dotted path. Trusted: nothing is validated
    again and no certificate is opened; gives what :func:`parse_job` gave for the body that defined it."""
    recurrence_data, extras = split_recurrence(properties.get("recurrence"))
    recurrence = parse_recurrence(recurrence_data)
    jitter = extras.get("jitter")
    exclusions = extras.get("exclusions")
    return JobDefinition(
        action=read_job_action(properties, secrets),
        start_time=parse_start_time(properties.get("startTime"), recurrence),
        recurrence=recurrence,
        jitter=Duration(*read_duration(jitter[1], "jitter")) if jitter is not None else None,
        exclusions=read_exclusions(exclusions[1]) if exclusions is not None else None,
        notifications=read_notifications(properties, secrets),
        **read_policies(properties),
    )


def _check_time_windows(
    props: Fields, start_time: datetime | None, recurrence: Recurrence | None, now: datetime
) -> None:
    if start_time is not None and start_time > now + MAX_AHEAD:
        raise ValidationError(
            props.where("startTime"), "must be at most 18 months from now (the furthest a job may start)"
        )
    if recurrence is None or recurrence.end_time is None:
        return
    where = f"{props.where('recurrence')}.endTime"
    end = recurrence.end_time
    if end <= now:
        raise ValidationError(where, "must be in the future")
    if start_time is not None and end < start_time:
        raise ValidationError(where, f"must not be before {props.where('startTime')}")
    begin = max(start_time, now) if start_time is not None else now
    if end > begin + MAX_AHEAD:
        raise ValidationError(
            where, "must be at most 18 months after the start (a recurrence may span at most 18 months)"
        )


def job_output(spec_properties: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
    """The ``properties`` of a job in a response: the canonical definition and its read-only ``status``
    (the three counters, always; ``lastExecutionTime`` and ``nextExecutionTime`` only when known; and
    ``disabledReason`` when ``status`` has one: the preview wire's, for a job ``pauseAfterFailures``
    disabled). Datetimes in ``status`` may be given as aware datetimes or as formatted text."""
    out = {key: copy.deepcopy(value) for key, value in spec_properties.items() if key != "status"}
    shaped: dict[str, Any] = {}
    for key in ("lastExecutionTime", "nextExecutionTime"):
        value = status.get(key)
        if value is not None:
            shaped[key] = format_instant(value) if isinstance(value, datetime) else value
    for key in ("executionCount", "failureCount", "faultedCount"):
        shaped[key] = int(status.get(key) or 0)
    if status.get("disabledReason"):
        shaped["disabledReason"] = str(status["disabledReason"])
    out["status"] = shaped
    return out


def recurrence_exceeds_quota(
    recurrence: Recurrence | None, max_recurrence: tuple[str, int], start_time: datetime | None = None
) -> bool:
    """True when the job would recur more often than a collection's ``maxRecurrence`` allows (its
    smallest gap between occurrences, by the recurrence engine, is below the quota's)."""
    frequency, interval = max_recurrence
    return not validate_against_quota(recurrence, frequency, interval, start_time)
