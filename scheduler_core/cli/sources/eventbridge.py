"""``import --from eventbridge``: EventBridge Scheduler schedules as ``aws scheduler get-schedule`` prints
them (JSON, or YAML with ``--output yaml``): one object, a JSON array of them, ``{"Schedules": [...]}``, or
several files.

Carried:

* ``Name`` -> the job's name (a second schedule of that name, from another group, is ``<group>-<name>``,
  with a note);
* ``ScheduleExpression``: ``cron(min hour dom month dow year)`` -> ``recurrence.cron`` of the first five
  fields with the day-of-week converted from EventBridge's numbering (1-7 = SUN-SAT) to unix (0-6; names
  kept; ``L`` alone is SAT; steps and wrapping ranges written out as lists); ``?``, ``L``, ``W``, ``LW``,
  ``L-n`` and ``#`` are taken as they are. The year: ``*`` -> nothing, ``2027`` or ``2027-2028`` -> bounds
  of ``startTime``/``endTime`` in the schedule's zone; a list or step of years is listed and dropped.
  ``rate(n minutes|hours|days)`` -> ``frequency`` Minute/Hour/Day and ``interval`` n (days of 24 hours, as
  EventBridge counts them); ``at(yyyy-mm-ddThh:mm:ss)`` -> a one-time job, ``startTime`` that wall time in
  the schedule's zone;
* ``ScheduleExpressionTimezone`` -> ``recurrence.timeZone`` (cron); ``StartDate`` -> ``startTime``;
  ``EndDate`` (before which it runs) -> ``recurrence.endTime`` one second before it;
* ``State`` DISABLED -> state Disabled; ``ActionAfterCompletion`` DELETE -> ``deleteAfterCompletion``;
* ``FlexibleTimeWindow`` ``{"Mode": "FLEXIBLE", "MaximumWindowInMinutes": n}`` -> ``recurrence.jitter``
  ``PT<n>M`` (the service refuses a jitter over half the smallest gap, with its 400);
* ``Target.RetryPolicy.MaximumRetryAttempts`` -> ``retryPolicy`` Fixed with that ``retryCount`` (at most
  20; EventBridge's default is 185: noted), 0 -> None;
* the HTTP request, when the target's ``Input`` is a JSON object naming an http(s) URL (``url``, ``uri`` or
  ``endpoint``) with, optionally, ``method`` (default POST), ``headers`` and ``body``: the job calls that
  URL itself (noted: the target is not invoked).

Listed: a schedule whose target is not such an HTTP request (a Lambda function, an SQS queue, a universal
target or an API destination without a URL in its Input: nothing is created), one whose expression is none
of cron/rate/at or has not 6 cron fields (nothing is created), and as not carried while the job is
created: the target's ``Arn``, ``RoleArn``, ``DeadLetterConfig``, ``MaximumEventAgeInSeconds`` (other than
the default day), its ``*Parameters``, ``Description``, ``KmsKeyArn``, a flexible window of a one-time
schedule, ``StartDate``/``EndDate`` of a one-time schedule (EventBridge ignores them too), a cron without
``?`` in either day field (EventBridge refuses it; read here by the unix rule).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core.cli.sources._model import AT, EVENTBRIDGE, RATE, Conversion, Expected, Names, SourceJob
from scheduler_core.cli.sources._shell import HttpCall, NotCarried
from scheduler_core.definitions import read_json
from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import format_instant
from scheduler_core.timezones import UnknownTimeZoneError, resolve_time_zone

__all__ = ["convert_eventbridge", "unix_weekdays"]

SYSTEM = "EventBridge Scheduler"
_EXPRESSION = re.compile(r"\s*(cron|rate|at)\((.*)\)\s*", re.DOTALL)
_RATE = re.compile(r"\s*(\d{1,9})\s+(minutes?|hours?|days?)\s*")
_AT = re.compile(r"\s*(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\s*")
_DAYS = {name: number for number, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"), start=1)}
_UNITS = {"minute": "Minute", "hour": "Hour", "day": "Day"}
_ONE_SECOND = timedelta(seconds=1)
_DEFAULT_EVENT_AGE = 86400
_URL_KEYS = ("url", "uri", "endpoint")


def _eventbridge_day(word: str) -> int | None:
    """An EventBridge day-of-week (1-7 or a name) as its number 1-7, else None."""
    if word.isascii() and word.isdigit() and 1 <= int(word) <= 7:
        return int(word)
    return _DAYS.get(word.upper())


def _unix_day(word: str) -> str:
    """One EventBridge day as unix writes it: a number 1-7 less one, a name as it is, anything else as it is
    (the service's parser then names it)."""
    if word.isascii() and word.isdigit() and 1 <= int(word) <= 7:
        return str(int(word) - 1)
    return word


def _expanded(item: str) -> str | None:
    """A range or step of EventBridge days written out in unix numbers, or None when it is neither or not
    one this reads (left to the service)."""
    base, slash, step_text = item.partition("/")
    low_text, dash, high_text = base.partition("-")
    if base == "*":
        low, high = 1, 7
    else:
        first = _eventbridge_day(low_text)
        last = _eventbridge_day(high_text) if dash else (7 if slash else first)
        if first is None or last is None:
            return None
        low, high = first, last
    step = int(step_text) if slash and step_text.isascii() and step_text.isdigit() and int(step_text) > 0 else 0
    if slash and not step:
        return None
    days = list(range(low, high + 1)) if low <= high else [*range(low, 8), *range(1, high + 1)]
    if not slash and low <= high and low_text.isdigit():
        return f"{low - 1}-{high - 1}"
    return ",".join(str(day - 1) for day in days[:: step or 1])


def unix_weekdays(field: str) -> str:
    """EventBridge's day-of-week field (1-7 = SUN-SAT, ``L``, ``nL``, ``n#k``, ranges, steps) in the unix
    numbering the service reads (0-6 = SUN-SAT); what it cannot read is left as it is."""
    out: list[str] = []
    for item in field.split(","):
        upper = item.upper()
        if item in ("*", "?") or not item:
            out.append(item)
        elif upper == "L":
            out.append("SAT")
        elif "#" in item:
            day, _, k = item.partition("#")
            out.append(f"{_unix_day(day)}#{k}")
        elif upper.endswith("L"):
            out.append(f"{_unix_day(item[:-1])}L")
        elif "-" in item or "/" in item:
            out.append(_expanded(item) or item)
        else:
            out.append(_unix_day(item))
    return ",".join(out)


def _instant(value: Any, what: str) -> datetime:
    """A StartDate or EndDate: ISO 8601 (an offset, ``Z``, or none: UTC) or seconds since the epoch."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, datetime):  # YAML reads timestamps itself
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise NotCarried(f"{what} {value!r} is not an ISO 8601 timestamp") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _http_of_input(target: dict[str, Any]) -> HttpCall:
    """The HTTP request the target's ``Input`` names (see the module's docstring); :class:`NotCarried` else."""
    arn = str(target.get("Arn") or "(none)")
    document: Any = None
    if isinstance(target.get("Input"), str):
        try:
            document = read_json(target["Input"], "Target.Input")
        except ValidationError:
            document = None
    fields = {str(k).lower(): v for k, v in document.items()} if isinstance(document, dict) else {}
    uri = next((fields[key] for key in _URL_KEYS if isinstance(fields.get(key), str)), None)
    if uri is None or not re.match(r"https?://", uri, re.IGNORECASE):
        raise NotCarried(
            f"the target {arn} is not an HTTP request this service can make (an AWS API or function), and its "
            "Input names no http(s) URL"
        )
    method = fields.get("method") or fields.get("httpmethod") or "POST"
    headers = fields.get("headers")
    if headers is not None and not (isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())):
        raise NotCarried("the target's Input has headers that are not a JSON object of strings")
    body = fields.get("body")
    if body is not None and not isinstance(body, str):
        body = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return HttpCall(uri, str(method).upper(), dict(headers or {}), body)


def _retry(target: dict[str, Any], where: str, found: Conversion) -> dict[str, Any] | None:
    policy = target.get("RetryPolicy")
    if not isinstance(policy, dict):
        return None
    age = policy.get("MaximumEventAgeInSeconds")
    if age is not None and age != _DEFAULT_EVENT_AGE:
        found.note(where, f"MaximumEventAgeInSeconds: {age}", "not carried: retries here end with the retry count")
    attempts = policy.get("MaximumRetryAttempts")
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 0:
        return None
    if attempts == 0:
        return {"retryType": "None"}
    if attempts > 20:
        found.note(where, f"MaximumRetryAttempts: {attempts}", "carried as 20, the most a retry policy allows")
    return {"retryType": "Fixed", "retryCount": min(attempts, 20)}


def _target_notes(schedule: dict[str, Any], target: dict[str, Any], where: str, found: Conversion) -> None:
    """What the target and the schedule have that the job does not carry."""
    found.note(
        where,
        f"Target.Arn {target.get('Arn')}",
        "not carried: the job calls the URL of the target's Input itself; the target is not invoked",
    )
    if target.get("RoleArn"):
        found.note(where, f"Target.RoleArn {target['RoleArn']}", "not carried: the service calls with its own identity")
    if target.get("DeadLetterConfig"):
        found.note(where, "Target.DeadLetterConfig", "not carried: a failed run is in the job's history")
    for key in sorted(k for k in target if isinstance(k, str) and k.endswith("Parameters")):
        found.note(where, f"Target.{key}", "not carried: parameters of an AWS target")
    for key, why in (("Description", "jobs have no description"), ("KmsKeyArn", "the service encrypts its store")):
        if schedule.get(key):
            found.note(where, f"{key}: {schedule[key]}", f"not carried: {why}")


class _Schedule:
    """One schedule being converted."""

    def __init__(self, schedule: dict[str, Any], where: str, found: Conversion) -> None:
        self.schedule, self.where, self.found = schedule, where, found
        self.zone_name = str(schedule.get("ScheduleExpressionTimezone") or "UTC")
        self.properties: dict[str, Any] = {}
        self.start = _instant(schedule["StartDate"], "StartDate") if schedule.get("StartDate") else None
        self.end = _instant(schedule["EndDate"], "EndDate") if schedule.get("EndDate") else None

    def zone(self) -> Any:
        try:
            return resolve_time_zone(self.zone_name).zone
        except UnknownTimeZoneError:
            raise NotCarried(f"ScheduleExpressionTimezone {self.zone_name!r} is not a known time zone") from None

    def recurrence(self, kind: str, text: str) -> Expected:
        """The job's schedule properties of the expression ``kind(text)``, and what EventBridge would run."""
        if kind == "at":
            return self.once(text)
        if kind == "rate":
            match = _RATE.fullmatch(text)
            if match is None or int(match.group(1)) < 1:
                raise NotCarried(f"rate({text}) is not rate(<n> minutes|hours|days)")
            number, unit = int(match.group(1)), match.group(2).rstrip("s")
            self.properties["recurrence"] = {"frequency": _UNITS[unit], "interval": number}
            self.bounds(self.start, self.end)
            every = timedelta(**{f"{unit}s": number})
            return Expected(RATE, zone="UTC", start=self.start, end=self.end, every=every, system=SYSTEM)
        return self.cron(text)

    def once(self, text: str) -> Expected:
        match = _AT.fullmatch(text)
        if match is None:
            raise NotCarried(f"at({text}) is not at(yyyy-mm-ddThh:mm:ss)")
        instant = datetime.fromisoformat(match.group(1)).replace(tzinfo=self.zone()).astimezone(UTC)
        self.properties["startTime"] = format_instant(instant)
        for key in ("StartDate", "EndDate"):
            if self.schedule.get(key):
                self.found.note(self.where, key, "not carried: a one-time schedule has none (EventBridge ignores it)")
        return Expected(AT, zone=self.zone_name, start=instant, system=SYSTEM)

    def cron(self, text: str) -> Expected:
        fields = text.split()
        if len(fields) != 6:
            raise NotCarried(f"cron({text}) has {len(fields)} fields; EventBridge's have 6 (the last is the year)")
        minute, hour, month_day, month, week_day, year = fields
        if "?" not in (month_day, week_day):
            self.found.note(
                self.where, f"cron({text})", "EventBridge needs ? in one day field; read here by the unix rule"
            )
        cron = " ".join((minute, hour, month_day, month, unix_weekdays(week_day)))
        self.properties["recurrence"] = {"cron": cron, "timeZone": self.zone_name}
        start, end = self.start, self.end
        years = re.fullmatch(r"(\d{4})(?:-(\d{4}))?", year)
        if years is not None:
            zone = self.zone()
            first = datetime(int(years.group(1)), 1, 1, tzinfo=zone).astimezone(UTC)
            after = datetime(int(years.group(2) or years.group(1)) + 1, 1, 1, tzinfo=zone).astimezone(UTC)
            start, end = max(start or first, first), min(end or after, after)
        elif year != "*":
            self.found.note(self.where, f"year {year}", "not carried: only *, one year or a range of years is")
        self.bounds(start, end)
        return Expected(EVENTBRIDGE, text, self.zone_name, start=start, end=end, system=SYSTEM)

    def bounds(self, start: datetime | None, end: datetime | None) -> None:
        if start is not None:
            self.properties["startTime"] = format_instant(start)
        if end is not None:
            self.properties["recurrence"]["endTime"] = format_instant(end - _ONE_SECOND)

    def options(self, kind: str) -> None:
        """State, deletion after completion and the flexible window."""
        if str(self.schedule.get("State") or "ENABLED").upper() == "DISABLED":
            self.properties["state"] = "Disabled"
        if str(self.schedule.get("ActionAfterCompletion") or "").upper() == "DELETE":
            self.properties["deleteAfterCompletion"] = True
        window = self.schedule.get("FlexibleTimeWindow")
        if isinstance(window, dict) and str(window.get("Mode") or "").upper() == "FLEXIBLE":
            minutes = window.get("MaximumWindowInMinutes")
            if kind == "at":
                self.found.note(self.where, "FlexibleTimeWindow", "not carried: a one-time job has no jitter")
            elif isinstance(minutes, int) and not isinstance(minutes, bool):
                self.properties["recurrence"]["jitter"] = f"PT{minutes}M"
            else:
                self.found.note(self.where, "FlexibleTimeWindow", f"not carried: MaximumWindowInMinutes {minutes!r}")


def _schedule(schedule: dict[str, Any], where: str, names: Names, found: Conversion) -> None:
    name, group = str(schedule.get("Name") or ""), str(schedule.get("GroupName") or "default")
    where = f"{where} (schedule {group}/{name})"
    target = schedule.get("Target") if isinstance(schedule.get("Target"), dict) else {}
    assert isinstance(target, dict)
    match = _EXPRESSION.fullmatch(str(schedule.get("ScheduleExpression") or ""))
    try:
        if not name:
            raise NotCarried("the schedule has no Name")
        if match is None:
            raise NotCarried(
                f"ScheduleExpression {schedule.get('ScheduleExpression')!r} is none of cron(), rate(), at()"
            )
        call = _http_of_input(target)
        converting = _Schedule(schedule, where, found)
        expected = converting.recurrence(match.group(1), match.group(2))
        converting.options(match.group(1))
    except NotCarried as reason:
        found.note(where, str(schedule.get("ScheduleExpression") or "the schedule"), f"not carried: {reason}")
        return
    properties = {"action": call.action(_retry(target, where, found)), **converting.properties}
    _target_notes(schedule, target, where, found)
    if names.taken(name):
        found.note(where, f"name {name}", f"taken by a schedule of another group: the job is named {group}-{name}")
        name = f"{group}-{name}"
    found.jobs.append(SourceJob(names.claim(name), where, {"properties": properties}, expected))


def convert_eventbridge(documents: list[Any], origin: str, names: Names) -> Conversion:
    """The jobs and notes of ``get-schedule`` outputs (see the module's docstring)."""
    found = Conversion()
    for number, document in enumerate(documents, start=1):
        where = origin if len(documents) == 1 else f"{origin} document {number}"
        items = document.get("Schedules") if isinstance(document, dict) and "Schedules" in document else document
        listed = items if isinstance(items, list) else [items]
        for index, schedule in enumerate(listed):
            place = f"{where}[{index}]" if isinstance(items, list) else where
            if isinstance(schedule, dict):
                _schedule(schedule, place, names, found)
            elif schedule is not None:
                found.note(place, type(schedule).__name__, "not carried: not a get-schedule object")
    return found
