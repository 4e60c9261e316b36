"""The properties of api-version 2026-12-01-preview at the wire: parse, write, and keep across classic writes.

* ``properties.overlapPolicy`` (``AllowAll`` | ``Skip`` | ``BufferOne``), ``properties.missedRunPolicy``
  (``{"mode": "RunOnce" | "RunAll" | "Skip", "window": <duration>}``), ``properties.pauseAfterFailures``
  (1 to :data:`MAX_PAUSE_AFTER_FAILURES`), ``properties.deleteAfterCompletion`` (true or false);
* ``recurrence.jitter`` (a duration above zero, at most half the smallest gap between two occurrences) and
  ``recurrence.exclusions`` (``{"dates": [...], "ranges": [{"start", "end"}], "calendars": [names]}``);
* the body of a job's backfill (:func:`parse_backfill`);
* the cross-field rules checked once the whole job is known: the jitter against the schedule, and the
  placeholders of an action with ``expandPlaceholders``.

A value equal to its default (``AllowAll``, ``RunOnce`` without a window, ``false``) is not written out, so a
job that uses none of them is stored and answered exactly as a 2016-03-01 job.

:func:`keep_preview` is the rule of a classic (2016-03-01) PUT or PATCH: the client cannot see or express
the preview properties, so the stored job's are kept (see its docstring).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from scheduler_core.definitions._calendars import (
    MAX_CALENDARS,
    format_local_date,
    parse_dates,
    parse_local_date,
    read_rules,
    rules_json,
)
from scheduler_core.definitions._durations import format_duration, read_duration
from scheduler_core.definitions._json import Fields, enum_value, int_value, join, kind
from scheduler_core.errors import ValidationError
from scheduler_core.model.actions import (
    FAILURE_PLACEHOLDERS,
    PLACEHOLDER_REFERENCE,
    Action,
    HttpAction,
    JobAction,
    ManagedServiceIdentityAuthentication,
    NotificationKind,
    Notifications,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    StorageQueueAction,
    placeholder_name,
)
from scheduler_core.model.job import (
    DEFAULT_MISSED_RUN_POLICY,
    ExclusionRange,
    Exclusions,
    JobDefinition,
    MissedRunMode,
    MissedRunPolicy,
    OverlapPolicy,
)
from scheduler_core.model.retry import Duration, RetryPolicy
from scheduler_core.recurrence import format_instant, minimum_gap, parse_instant
from scheduler_core.uris import origin

__all__ = [
    "MAX_EXCLUDED_DATES",
    "MAX_EXCLUDED_RANGES",
    "MAX_MISSED_RUN_WINDOW",
    "MAX_PAUSE_AFTER_FAILURES",
    "PREVIEW_PROPERTIES",
    "RECURRENCE_EXTRAS",
    "BackfillSpec",
    "check_jitter",
    "check_placeholders",
    "exclusions_json",
    "keep_preview",
    "parse_backfill",
    "parse_exclusions",
    "parse_jitter",
    "parse_policies",
    "policies_json",
    "read_exclusions",
    "read_policies",
    "split_recurrence",
]

#: The top-level ``properties`` of the preview wire.
PREVIEW_PROPERTIES = (
    "overlapPolicy",
    "missedRunPolicy",
    "pauseAfterFailures",
    "deleteAfterCompletion",
    "tags",
    "description",
    "notifications",
)
#: ARM's tag limits: tags per resource, characters of a name and of a value, characters a name may not hold,
#: and the prefixes reserved for Azure.
MAX_TAGS = 50
MAX_TAG_NAME = 512
MAX_TAG_VALUE = 256
_TAG_NAME_FORBIDDEN = set("<>%&\\?/")
_TAG_RESERVED = ("microsoft", "azure", "windows")
MAX_DESCRIPTION = 1024
#: The ``recurrence`` fields of the preview wire.
RECURRENCE_EXTRAS = ("jitter", "exclusions")
MAX_PAUSE_AFTER_FAILURES = 1000
#: The longest ``missedRunPolicy.window``.
MAX_MISSED_RUN_WINDOW = timedelta(days=30)
MAX_EXCLUDED_DATES = 1000
MAX_EXCLUDED_RANGES = 100
#: Where the dates of a job's calendars are kept in its stored definition (never answered).
STORED_CALENDAR_DATES = "calendarDates"
#: ... and the recurring rules of those calendars (never answered).
STORED_CALENDAR_RULES = "calendarRules"

_OVERLAP = {policy.value.lower(): policy for policy in OverlapPolicy}
_MISSED = {mode.value.lower(): mode for mode in MissedRunMode}
_ON_EXCLUDED = {mode.lower(): mode for mode in ("Skip", "NextBusinessDay", "PreviousBusinessDay")}
_LOCAL_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?", re.ASCII)
_LOCAL_RULE = (
    "must be a local date (2026-12-24) or a local date-time without offset (2026-12-24T18:00:00), read in "
    "the job's time zone"
)


# ---------------------------------------------------------------------------------------------- policies


def parse_policies(props: Fields) -> dict[str, Any]:
    """The preview properties of a job's ``properties`` (absent: the defaults), as JobDefinition fields."""
    out: dict[str, Any] = {}
    if "overlapPolicy" in props:
        out["overlap_policy"] = enum_value(props.get("overlapPolicy"), props.where("overlapPolicy"), _OVERLAP)
    if "missedRunPolicy" in props:
        out["missed_run_policy"] = _missed_run(props.get("missedRunPolicy"), props.where("missedRunPolicy"))
    if "pauseAfterFailures" in props:
        out["pause_after_failures"] = int_value(
            props.get("pauseAfterFailures"), props.where("pauseAfterFailures"), 1, MAX_PAUSE_AFTER_FAILURES
        )
    if "deleteAfterCompletion" in props:
        out["delete_after_completion"] = props.boolean("deleteAfterCompletion")
    if "tags" in props:
        out["tags"] = parse_tags(props.get("tags"), props.where("tags"))
    if "description" in props:
        out["description"] = _description(props.get("description"), props.where("description"))
    return out


def parse_tags(data: object, path: str) -> tuple[tuple[str, str], ...]:
    """``tags``: an object of at most 50 string values, by ARM's rules (a name of 1 to 512 characters without
    ``< > % & \\ ? /``, not starting with microsoft, azure or windows; a value of at most 256 characters;
    names unique without regard to case)."""
    if not isinstance(data, Mapping):
        raise ValidationError(path, 'must be a JSON object of tag names and string values, e.g. {"team": "payments"}')
    if len(data) > MAX_TAGS:
        raise ValidationError(path, f"holds {len(data)} tags; at most {MAX_TAGS} are allowed")
    seen: dict[str, str] = {}
    tags: list[tuple[str, str]] = []
    for name, value in data.items():
        where = f"{path}.{name}"
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_TAG_NAME:
            raise ValidationError(where, f"a tag name must be 1 to {MAX_TAG_NAME} characters")
        bad = sorted(_TAG_NAME_FORBIDDEN.intersection(name))
        if bad or any(ord(c) < 32 for c in name):
            shown = " ".join(bad) if bad else "a control character"
            raise ValidationError(where, f"a tag name may not hold {shown} (ARM forbids < > % & \\ ? / and controls)")
        if name.casefold().startswith(_TAG_RESERVED):
            raise ValidationError(where, "tag names starting with microsoft, azure or windows are reserved")
        if name.casefold() in seen:
            raise ValidationError(
                where, f"duplicates the tag {seen[name.casefold()]!r} (tag names are not case-sensitive)"
            )
        if not isinstance(value, str) or len(value) > MAX_TAG_VALUE:
            raise ValidationError(where, f"a tag value must be a string of at most {MAX_TAG_VALUE} characters")
        seen[name.casefold()] = name
        tags.append((name, value))
    return tuple(tags)


def _description(value: object, path: str) -> str | None:
    if not isinstance(value, str) or len(value) > MAX_DESCRIPTION:
        raise ValidationError(path, f"must be a string of at most {MAX_DESCRIPTION:,} characters")
    return value or None


def _missed_run(data: object, path: str) -> MissedRunPolicy:
    fields = Fields(data, path, ("mode", "window"))
    if "mode" not in fields:
        raise ValidationError(fields.where("mode"), "is required (one of RunOnce, RunAll, Skip)")
    mode = enum_value(fields.get("mode"), fields.where("mode"), _MISSED)
    window = None
    if "window" in fields:
        where = fields.where("window")
        if mode is MissedRunMode.SKIP:
            raise ValidationError(
                where, "applies to the modes RunOnce and RunAll only (Skip runs no missed occurrence)"
            )
        value, style = read_duration(fields.get("window"), where)
        if not timedelta(seconds=1) <= value <= MAX_MISSED_RUN_WINDOW:
            raise ValidationError(
                where,
                f"must be between {format_duration(timedelta(seconds=1), style)} and "
                f"{format_duration(MAX_MISSED_RUN_WINDOW, style)} (30 days), not {format_duration(value, style)}",
            )
        window = Duration(value, style)
    return MissedRunPolicy(mode, window)


def policies_json(definition: JobDefinition) -> dict[str, Any]:
    """The preview properties of a job that differ from their defaults, in the wire's order."""
    out: dict[str, Any] = {}
    if definition.overlap_policy is not OverlapPolicy.ALLOW_ALL:
        out["overlapPolicy"] = definition.overlap_policy.value
    policy = definition.missed_run_policy
    if policy != DEFAULT_MISSED_RUN_POLICY:
        written: dict[str, Any] = {"mode": policy.mode.value}
        if policy.window is not None:
            written["window"] = format_duration(policy.window.value, policy.window.style)
        out["missedRunPolicy"] = written
    if definition.pause_after_failures is not None:
        out["pauseAfterFailures"] = definition.pause_after_failures
    if definition.delete_after_completion:
        out["deleteAfterCompletion"] = True
    if definition.tags:
        out["tags"] = dict(definition.tags)
    if definition.description is not None:
        out["description"] = definition.description
    return out


def read_policies(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The preview properties of a stored job's canonical JSON (trusted), as JobDefinition fields."""
    out: dict[str, Any] = {}
    if "overlapPolicy" in properties:
        out["overlap_policy"] = OverlapPolicy(properties["overlapPolicy"])
    missed = properties.get("missedRunPolicy")
    if isinstance(missed, Mapping):
        window = missed.get("window")
        out["missed_run_policy"] = MissedRunPolicy(
            MissedRunMode(missed["mode"]), Duration(*read_duration(window, "window")) if window else None
        )
    if properties.get("pauseAfterFailures") is not None:
        out["pause_after_failures"] = int(properties["pauseAfterFailures"])
    if properties.get("deleteAfterCompletion"):
        out["delete_after_completion"] = True
    tags = properties.get("tags")
    if isinstance(tags, Mapping):
        out["tags"] = tuple((str(name), str(value)) for name, value in tags.items())
    if properties.get("description"):
        out["description"] = str(properties["description"])
    return out


# ------------------------------------------------------------------------------- jitter and exclusions


def split_recurrence(data: Any) -> tuple[Any, dict[str, tuple[str, Any]]]:
    """A ``recurrence`` object without its preview fields, and those fields (canonical name -> (name as
    written, value); null ones left out). Anything that is not an object is returned as it is."""
    if not isinstance(data, Mapping):
        return data, {}
    lowered = {name.lower(): name for name in RECURRENCE_EXTRAS}
    rest: dict[Any, Any] = {}
    extras: dict[str, tuple[str, Any]] = {}
    for key, value in data.items():
        canonical = lowered.get(key.lower()) if isinstance(key, str) else None
        if canonical is None:
            rest[key] = value
            continue
        if canonical in extras:
            raise ValidationError(key, f"duplicates {extras[canonical][0]} (field names are not case-sensitive)")
        if value is not None:
            extras[canonical] = (key, value)
    return rest, extras


def parse_jitter(value: object, path: str) -> Duration:
    """``recurrence.jitter``: a duration above zero (checked against the schedule by :func:`check_jitter`)."""
    length, style = read_duration(value, path)
    if length <= timedelta(0):
        raise ValidationError(path, "must be longer than zero (leave it out for no jitter)")
    return Duration(length, style)


def _local_time(value: object, path: str) -> date | datetime:
    if not isinstance(value, str):
        raise ValidationError(path, f"{_LOCAL_RULE}, not {kind(value)}")
    match = _LOCAL_TIME.fullmatch(value)
    if match is None:
        raise ValidationError(path, _LOCAL_RULE)
    day = parse_local_date(match[1], path)
    if match[2] is None:
        return day
    hour, minute, second = int(match[2]), int(match[3]), int(match[4] or 0)
    micro = int((match[5] or "").ljust(6, "0"))
    try:
        return datetime(day.year, day.month, day.day, hour, minute, second, micro)
    except ValueError as exc:
        raise ValidationError(path, f"{_LOCAL_RULE}; {exc}") from None


def _ranges(value: object, path: str) -> tuple[ExclusionRange, ...]:
    if not isinstance(value, list):
        raise ValidationError(path, f'must be an array of {{"start", "end"}} objects, not {kind(value)}')
    if len(value) > MAX_EXCLUDED_RANGES:
        raise ValidationError(path, f"must hold at most {MAX_EXCLUDED_RANGES} ranges, not {len(value)}")
    out: list[ExclusionRange] = []
    for index, item in enumerate(value):
        fields = Fields(item, f"{path}[{index}]", ("start", "end"))
        for name in ("start", "end"):
            if name not in fields:
                raise ValidationError(fields.where(name), f"is required ({_LOCAL_RULE.removeprefix('must be ')})")
        excluded = ExclusionRange(
            _local_time(fields.get("start"), fields.where("start")), _local_time(fields.get("end"), fields.where("end"))
        )
        if excluded.end_wall <= excluded.start_wall:
            raise ValidationError(
                fields.where("end"), f"must be after {fields.where('start')} (a date as end includes that whole day)"
            )
        if excluded not in out:
            out.append(excluded)
    return tuple(out)


def _calendar_names(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValidationError(path, f"must be an array of calendar names, not {kind(value)}")
    if len(value) > MAX_CALENDARS:
        raise ValidationError(path, f"must name at most {MAX_CALENDARS} calendars, not {len(value)}")
    names: dict[str, str] = {}
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        if not isinstance(item, str) or not item.strip():
            raise ValidationError(where, "must be the name of a calendar of the job collection")
        names.setdefault(item.lower(), item)
    return tuple(names.values())


def parse_exclusions(value: object, path: str) -> Exclusions | None:
    """``recurrence.exclusions``; an empty object is no exclusions (None). The calendars are names only
    here: the service checks they exist and fills in their dates (``calendar_dates``)."""
    fields = Fields(value, path, ("dates", "ranges", "calendars", "onExcluded"))
    dates = parse_dates(fields.get("dates"), fields.where("dates"), MAX_EXCLUDED_DATES) if "dates" in fields else ()
    ranges = _ranges(fields.get("ranges"), fields.where("ranges")) if "ranges" in fields else ()
    calendars = _calendar_names(fields.get("calendars"), fields.where("calendars")) if "calendars" in fields else ()
    on_excluded = "Skip"
    if "onExcluded" in fields:
        on_excluded = enum_value(fields.get("onExcluded"), fields.where("onExcluded"), _ON_EXCLUDED)
    if not (dates or ranges or calendars) and on_excluded == "Skip":
        return None
    return Exclusions(dates, ranges, calendars, on_excluded=on_excluded)


def _format_local_time(value: date | datetime) -> str:
    if not isinstance(value, datetime):
        return format_local_date(value)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.year < 1000:
        text = f"{value.year:04d}{text[len(str(value.year)) :]}"
    return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")


def exclusions_json(exclusions: Exclusions, *, stored: bool) -> dict[str, Any]:
    """``recurrence.exclusions`` as answered; ``stored`` adds the calendars' dates the job carries."""
    out: dict[str, Any] = {}
    if exclusions.dates:
        out["dates"] = [format_local_date(item) for item in exclusions.dates]
    if exclusions.ranges:
        out["ranges"] = [
            {"start": _format_local_time(item.start), "end": _format_local_time(item.end)} for item in exclusions.ranges
        ]
    if exclusions.on_excluded != "Skip":
        out["onExcluded"] = exclusions.on_excluded
    if exclusions.calendars:
        out["calendars"] = list(exclusions.calendars)
        if stored:
            out[STORED_CALENDAR_DATES] = [format_local_date(item) for item in exclusions.calendar_dates]
            if exclusions.calendar_rules:
                out[STORED_CALENDAR_RULES] = rules_json(exclusions.calendar_rules)
    return out


def read_exclusions(data: Mapping[str, Any]) -> Exclusions:
    """The exclusions :func:`exclusions_json` stored (trusted)."""

    def local(text: str) -> date | datetime:
        return datetime.fromisoformat(text) if "T" in text else date.fromisoformat(text)

    return Exclusions(
        dates=tuple(date.fromisoformat(text) for text in data.get("dates", ())),
        ranges=tuple(ExclusionRange(local(item["start"]), local(item["end"])) for item in data.get("ranges", ())),
        calendars=tuple(str(name) for name in data.get("calendars", ())),
        calendar_dates=tuple(date.fromisoformat(text) for text in data.get(STORED_CALENDAR_DATES, ())),
        calendar_rules=read_rules(data.get(STORED_CALENDAR_RULES) or {}),
        on_excluded=str(data.get("onExcluded") or "Skip"),
    )


# ----------------------------------------------------------------------------------- cross-field rules


def check_jitter(definition: JobDefinition, path: str) -> None:
    """The jitter is at most half the smallest gap between two occurrences of the schedule, so that
    occurrences keep their order and each keeps most of its slot (``path``: the jitter's field)."""
    jitter, recurrence = definition.jitter, definition.recurrence
    if jitter is None or recurrence is None:
        return
    limit = jitter.value * 2
    gap = minimum_gap(recurrence, definition.start_time, stop_below=limit)
    if gap < limit:
        raise ValidationError(
            path,
            f"must be at most half the smallest gap between two occurrences of the schedule; occurrences may "
            f"be {format_duration(gap, jitter.style)} apart, so at most {format_duration(gap / 2, jitter.style)}",
        )


def _texts(action: Action) -> list[tuple[str, str, bool]]:
    """(field, text, whether only its query may hold placeholders) of each field placeholders expand in."""
    match action:
        case HttpAction():
            out = [("request.uri", action.uri, True)]
            if action.body is not None:
                out.append(("request.body", action.body, False))
            out.extend((join("request.headers", name), value, False) for name, value in (action.headers or {}).items())
            return out
        case StorageQueueAction():
            return [("queueMessage.message", action.message, False)]
        case ServiceBusQueueAction():
            return [("serviceBusQueueMessage.message", action.message, False)] if action.message is not None else []
        case ServiceBusTopicAction():
            return [("serviceBusTopicMessage.message", action.message, False)] if action.message is not None else []
    return []


def _check_text(text: str, where: str, query_only: bool, error_action: bool, owner: str = "an errorAction") -> None:
    start = text.find("@{")
    while start >= 0:
        match = PLACEHOLDER_REFERENCE.match(text, start)
        if match is None:
            raise ValidationError(where, "has '@{' without a closing '}' (a placeholder is @{name})")
        name = placeholder_name(match[1])
        if name is None:
            shown = repr(match[1]) if len(match[1]) <= 40 else "a long name"
            raise ValidationError(
                where,
                f"names an unknown placeholder {shown}; expandPlaceholders knows @{{scheduledTime}}, "
                "@{actualTime}, @{executionId}, @{attempt}, @{jobName}, @{collectionName} and @{historyUrl}, and in an "
                "errorAction @{failure.status}, @{failure.reason}, @{failure.body}, @{failure.executionId} "
                "and @{failure.attempts}",
            )
        if name in FAILURE_PLACEHOLDERS and not error_action:
            raise ValidationError(where, f"names @{{{name}}}, which only {owner} knows (how the main action failed)")
        if query_only:
            query, fragment = text.find("?"), text.find("#")
            if query < 0 or start < query or 0 <= fragment < start:
                raise ValidationError(where, "may hold placeholders in its query only (after '?')")
        start = text.find("@{", match.end())


def check_placeholders(action: JobAction, path: str) -> None:
    """With ``expandPlaceholders`` on, every ``@{`` in a text the placeholders expand in names a known
    placeholder (``path``: the job's ``action``)."""
    if not action.expand_placeholders:
        return
    for prefix, item in (("", action.main), ("errorAction.", action.error)):
        if item is None:
            continue
        for field, text, query_only in _texts(item):
            _check_text(text, f"{path}.{prefix}{field}", query_only, error_action=bool(prefix))


def check_notification_placeholders(notifications: Notifications | None, path: str) -> None:
    """Every ``@{`` in a notification's texts names a known placeholder (a notification always expands them);
    ``@{failure.*}`` in ``onFailure`` only (``path``: the job's ``notifications``)."""
    for which, notification in notifications.items() if notifications is not None else ():
        knows_failure = which is NotificationKind.ON_FAILURE
        place = f"{path}.{which.value}" + (".action" if which is NotificationKind.DEADLINE else "")
        for field, text, query_only in _texts(notification.action):
            where = f"{place}.{field}"
            _check_text(text, where, query_only, knows_failure, "an errorAction or onFailure")


# ------------------------------------------------------------------------------------ classic writes


def _keep_http(new: Action, old: Action | None) -> Action:
    """An HTTP action of a classic write with the preview parts of the stored one: its ``timeout``; and at the
    same origin its signing, and its ManagedServiceIdentity authentication unless the write sets one
    (NotSpecified too)."""
    if not isinstance(new, HttpAction) or not isinstance(old, HttpAction):
        return new
    if new.timeout is None and old.timeout is not None:  # a bound, not a credential: kept whatever the host
        new = dataclasses.replace(new, timeout=old.timeout)
    if new.async_polling is None and old.async_polling is not None:  # so is how long an operation is polled
        new = dataclasses.replace(new, async_polling=old.async_polling)
    if origin(new.uri) is None or origin(new.uri) != origin(old.uri):
        return new
    kept = new
    if new.signing is None and old.signing is not None:
        kept = dataclasses.replace(kept, signing=old.signing)
    if (
        new.authentication is None
        and not new.not_specified_written
        and isinstance(old.authentication, ManagedServiceIdentityAuthentication)
    ):
        kept = dataclasses.replace(kept, authentication=old.authentication)
    return kept


def _keep_retry(new: RetryPolicy, old: RetryPolicy | None) -> RetryPolicy:
    """A retry policy of a classic write with the stored one's ``retryOn`` and ``maxRetryDuration`` (a policy
    that retries: ``None`` has neither)."""
    if old is None or not new.retries:
        return new
    return dataclasses.replace(new, retry_on=old.retry_on, max_retry_duration=old.max_retry_duration)


def keep_preview(new: JobDefinition, previous: JobDefinition) -> JobDefinition:
    """A definition written with the classic wire (which shows and takes no preview property), with the
    preview properties of the stored ``previous`` kept, as a read-modify-write by an old client expects:
    the policies, tags, description and notifications; the jitter and exclusions while the job still recurs;
    ``expandPlaceholders`` and ``flowControl``; the retry policies' ``retryOn`` and ``maxRetryDuration``; an HTTP
    action's ``timeout``; and, for an HTTP action whose URI keeps its scheme,
    host and port, its request signing and its ManagedServiceIdentity authentication (unless the write gives
    an authentication: ``{"type": "NotSpecified"}`` removes it)."""
    action = dataclasses.replace(
        new.action,
        expand_placeholders=previous.action.expand_placeholders,
        flow_control=previous.action.flow_control,
        main=_keep_http(new.action.main, previous.action.main),
        error=_keep_http(new.action.error, previous.action.error) if new.action.error is not None else None,
        retry_policy=_keep_retry(new.action.retry_policy, previous.action.retry_policy),
        error_retry_policy=(
            _keep_retry(error_policy, previous.action.error_retry_policy)
            if (error_policy := new.action.error_retry_policy) is not None
            else None
        ),
    )
    recurs = new.recurrence is not None
    return dataclasses.replace(
        new,
        action=action,
        overlap_policy=previous.overlap_policy,
        missed_run_policy=previous.missed_run_policy,
        pause_after_failures=previous.pause_after_failures,
        delete_after_completion=previous.delete_after_completion,
        tags=previous.tags,
        description=previous.description,
        notifications=previous.notifications,
        jitter=previous.jitter if recurs else None,
        exclusions=previous.exclusions if recurs else None,
    )


# ---------------------------------------------------------------------------------------------- backfill
#
# The body of ``POST .../jobs/{job}/backfill``: ``{"startTime", "endTime", "overlapPolicy"}``. ``startTime``
# (included) and ``endTime`` (excluded) bound a past window: ``endTime`` may not be after the time of the
# request. ``overlapPolicy`` (any casing) is how the backfilled occurrences overlap one another; absent, the
# job's own ``overlapPolicy`` applies.

#: The fields of a backfill's body (``POST .../jobs/{job}/backfill``).
BACKFILL_FIELDS = ("startTime", "endTime", "overlapPolicy")
#: The earliest instant a backfill window may start at (as the occurrences query's ``after``).
FIRST_BACKFILL_INSTANT = datetime(1900, 1, 1, tzinfo=UTC)


@dataclasses.dataclass(frozen=True)
class BackfillSpec:
    """A backfill request: the window [``start``, ``end``) and its overlap policy (None: the job's)."""

    start: datetime
    end: datetime
    overlap_policy: OverlapPolicy | None = None


def parse_backfill(body: Mapping[str, Any], now: datetime) -> BackfillSpec:
    """Parse and check a backfill body (a 400 naming the field and the rule otherwise)."""
    fields = Fields(body, "", BACKFILL_FIELDS)
    for name in ("startTime", "endTime"):
        if name not in fields:
            raise ValidationError(name, "is required (an ISO 8601 instant such as 2026-12-01T00:00:00Z)")
    start = parse_instant(fields.get("startTime"), "startTime")
    end = parse_instant(fields.get("endTime"), "endTime")
    if start < FIRST_BACKFILL_INSTANT:
        raise ValidationError("startTime", f"must be at or after {format_instant(FIRST_BACKFILL_INSTANT)}")
    if end <= start:
        raise ValidationError("endTime", f"must be after startTime ({format_instant(start)})")
    if end > now:
        raise ValidationError(
            "endTime", f"must not be in the future (now is {format_instant(now)}): a backfill runs a past window"
        )
    policy = None
    if "overlapPolicy" in fields:
        policy = enum_value(fields.get("overlapPolicy"), "overlapPolicy", _OVERLAP)
    return BackfillSpec(start, end, policy)
