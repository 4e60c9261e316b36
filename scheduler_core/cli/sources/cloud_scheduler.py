"""``import --from cloud-scheduler``: Google Cloud Scheduler jobs as ``gcloud scheduler jobs describe``
prints them: YAML (gcloud's default; several ``---`` documents, as ``jobs list --format=yaml`` prints) or
JSON (``--format=json``: one object, or a list).

Carried:

* ``name`` (``projects/P/locations/L/jobs/NAME``) -> the job's name ``NAME`` (a second job of that name,
  from another project or location, gets ``-2``, with a note);
* ``schedule`` (unix cron) -> ``recurrence.cron`` as written (the service's parser decides), ``timeZone``
  -> ``recurrence.timeZone`` (none: UTC, Cloud Scheduler's default);
* ``state`` PAUSED or DISABLED -> state Disabled;
* ``httpTarget``: ``uri``, ``httpMethod`` (default POST), ``headers`` and ``body`` (base64, decoded; it must
  be UTF-8 text) -> the HTTP action;
* ``retryConfig``: ``retryCount`` 0 (the default) -> ``retryPolicy`` None; otherwise ``retryCount`` retries,
  ``minBackoffDuration`` -> ``retryInterval`` (at least 15 seconds here: noted when raised), and with
  ``maxDoublings`` above 0 Exponential with ``maxBackoffDuration`` -> ``maxRetryInterval`` (noted when
  Cloud Scheduler would stop doubling before the cap and grow linearly), else Fixed.

Listed: a job with ``pubsubTarget`` or ``appEngineHttpTarget`` (no URL this service can call: nothing is
created), one whose body is not UTF-8 text or not base64 (nothing is created), and as not carried while the
job is created: ``oidcToken``/``oauthToken`` (use ManagedServiceIdentity authentication:
``{"type": "ManagedServiceIdentity", "audience": ...}``), ``attemptDeadline`` (no per-job request timeout
here), ``retryConfig.maxRetryDuration``, ``description``, a state other than ENABLED/PAUSED/DISABLED.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

from scheduler_core.cli.sources._model import UNIX, Conversion, Expected, Names, SourceJob, http_action
from scheduler_core.cli.sources._shell import NotCarried

__all__ = ["convert_cloud_scheduler"]

SYSTEM = "Cloud Scheduler (unix rule)"
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")
_MIN_INTERVAL = 15


def _seconds(value: Any, what: str) -> float:
    """A protobuf Duration as gcloud prints it (``"5s"``, ``"0.500s"``)."""
    match = _DURATION.fullmatch(str(value))
    if match is None:
        raise NotCarried(f"{what} {value!r} is not a duration such as '5s'")
    return float(match.group(1))


def _body(target: dict[str, Any]) -> str | None:
    encoded = target.get("body")
    if encoded is None:
        return None
    try:
        raw = base64.b64decode(str(encoded), validate=True)
    except (binascii.Error, ValueError):
        raise NotCarried("httpTarget.body is not base64") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotCarried("httpTarget.body is binary (not UTF-8 text); a job's body is text") from None


def _http(job: dict[str, Any], where: str, found: Conversion) -> dict[str, Any]:
    """The job's HTTP action; :class:`NotCarried` for a target without a URL."""
    for kind in ("pubsubTarget", "appEngineHttpTarget"):
        if isinstance(job.get(kind), dict):
            raise NotCarried(f"its {kind} is no URL this service can call")
    target = job.get("httpTarget")
    if not isinstance(target, dict) or not isinstance(target.get("uri"), str):
        raise NotCarried("it has no httpTarget with a uri")
    method = str(target.get("httpMethod") or "POST").upper()
    headers = target.get("headers") if isinstance(target.get("headers"), dict) else {}
    assert isinstance(headers, dict)
    action = http_action(
        target["uri"],
        "POST" if method == "HTTP_METHOD_UNSPECIFIED" else method,
        {str(k): str(v) for k, v in headers.items()},
        _body(target),
    )
    for token in ("oidcToken", "oauthToken"):
        if isinstance(target.get(token), dict):
            found.note(
                where,
                f"httpTarget.{token}",
                "not carried: use ManagedServiceIdentity authentication "
                '({"type": "ManagedServiceIdentity", "audience": ...}) for a token of the service\'s identity',
            )
    return action


def _retry(config: Any, where: str, found: Conversion) -> dict[str, Any]:
    config = config if isinstance(config, dict) else {}
    count = config.get("retryCount", 0)
    if config.get("maxRetryDuration") and _seconds(config["maxRetryDuration"], "maxRetryDuration") > 0:
        found.note(
            where,
            f"retryConfig.maxRetryDuration {config['maxRetryDuration']}",
            "not carried: retries end with the count",
        )
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return {"retryType": "None"}
    low = _seconds(config.get("minBackoffDuration", "5s"), "minBackoffDuration")
    high = _seconds(config.get("maxBackoffDuration", "3600s"), "maxBackoffDuration")
    doublings = config.get("maxDoublings", 5)
    interval = max(math.ceil(low), _MIN_INTERVAL)
    if interval != low:
        found.note(
            where,
            f"retryConfig.minBackoffDuration {config.get('minBackoffDuration', '5s')}",
            f"carried as {interval} seconds, the shortest retry interval here",
        )
    policy: dict[str, Any] = {"retryType": "Fixed", "retryInterval": f"PT{interval}S", "retryCount": min(count, 20)}
    if isinstance(doublings, int) and doublings > 0:
        cap = max(math.ceil(high), interval)
        policy.update(retryType="Exponential", maxRetryInterval=f"PT{cap}S")
        if low * 2**doublings < high:
            found.note(
                where,
                f"retryConfig.maxDoublings {doublings}",
                "not carried: Cloud Scheduler stops doubling after it and grows linearly; here the interval doubles "
                "up to maxRetryInterval",
            )
    return policy


def _job(job: dict[str, Any], where: str, names: Names, found: Conversion) -> None:
    full = str(job.get("name") or "")
    name = full.rsplit("/", 1)[-1]
    where = f"{where} (job {name or '?'})"
    schedule = job.get("schedule")
    try:
        if not name or not isinstance(schedule, str):
            raise NotCarried("a job needs a name and a schedule")
        action = _http(job, where, found)
        action["retryPolicy"] = _retry(job.get("retryConfig"), where, found)
    except NotCarried as reason:
        found.note(where, full or "the job", f"not carried: {reason}")
        return
    zone = str(job.get("timeZone") or "UTC")
    properties: dict[str, Any] = {"action": action, "recurrence": {"cron": schedule, "timeZone": zone}}
    state = str(job.get("state") or "ENABLED").upper()
    if state in ("PAUSED", "DISABLED"):
        properties["state"] = "Disabled"
    elif state != "ENABLED":
        found.note(where, f"state {state}", "not carried: the job is created Enabled")
    if job.get("attemptDeadline"):
        found.note(where, f"attemptDeadline {job['attemptDeadline']}", "not carried: no per-job request timeout here")
    if job.get("description"):
        found.note(where, f"description: {job['description']}", "not carried: jobs have no description")
    if names.taken(name):
        found.note(where, f"name {name}", "taken by a job of another project or location: a suffix tells them apart")
    expected = Expected(UNIX, schedule, zone, system=SYSTEM)
    found.jobs.append(SourceJob(names.claim(name), where, {"properties": properties}, expected))


def convert_cloud_scheduler(documents: list[Any], origin: str, names: Names) -> Conversion:
    """The jobs and notes of ``jobs describe`` outputs (see the module's docstring)."""
    found = Conversion()
    for number, document in enumerate(documents, start=1):
        where = origin if len(documents) == 1 else f"{origin} document {number}"
        listed = document if isinstance(document, list) else [document]
        for index, job in enumerate(listed):
            place = f"{where}[{index}]" if isinstance(document, list) else where
            if isinstance(job, dict):
                _job(job, place, names, found)
            elif job is not None:
                found.note(place, type(job).__name__, "not carried: not a Cloud Scheduler job")
    return found
