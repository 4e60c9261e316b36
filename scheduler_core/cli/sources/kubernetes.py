"""``import --from kubernetes``: CronJob manifests (``kind: CronJob``, ``apiVersion: batch/v1``), one or
more YAML documents (``---``), a ``kind: List`` as ``kubectl get cronjobs -o yaml`` prints it, or JSON.

Carried, for a CronJob whose one container's command (``command`` + ``args``, with ``$(VAR)`` taken from
the container's literal ``env``; ``sh -c '...'`` read as a shell line; the ``curlimages/curl`` image's
entrypoint is curl) is one curl or wget of an http(s) URL (:mod:`._shell`):

* ``metadata.name`` -> the job's name (a second CronJob of that name, from another namespace, is
  ``<namespace>-<name>``, with a note);
* ``spec.schedule`` -> ``recurrence.cron`` as written (the service's parser decides), ``spec.timeZone`` ->
  ``recurrence.timeZone`` (none: UTC, with a note: the controller used its own zone);
* ``spec.suspend: true`` -> state Disabled;
* ``spec.concurrencyPolicy``: Allow -> ``overlapPolicy`` AllowAll, Forbid -> Skip;
* ``spec.startingDeadlineSeconds`` -> ``missedRunPolicy`` ``{"mode": "RunOnce", "window": "PT<n>S"}``
  (1 second to 30 days);
* ``jobTemplate.spec.backoffLimit`` (Kubernetes' default 6) -> ``retryPolicy`` Exponential from 15 seconds
  (Kubernetes starts at 10) up to 6 minutes, that many retries (at most 20); 0 -> None;
* the request: method, URL, headers, body, Basic authentication.

Listed (document number, kind and name): a document that is no CronJob, a CronJob without a name or a
schedule, one whose command is anything else (nothing is created for it), and as not carried while the job
is created: ``concurrencyPolicy: Replace`` (a run here is never stopped for the next), a deadline out of
range, ``successfulJobsHistoryLimit``, ``failedJobsHistoryLimit``, ``activeDeadlineSeconds``,
``ttlSecondsAfterFinished``, ``parallelism``, ``completions``, ``initContainers``, ``serviceAccountName``
(the service calls with its own identity), a backoffLimit above 20, curl's own ``--retry``, and the command's
options the request does not carry.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from scheduler_core.cli.sources._model import UNIX, Conversion, Expected, Names, SourceJob
from scheduler_core.cli.sources._shell import HttpCall, NotCarried, http_call

__all__ = ["convert_kubernetes"]

SYSTEM = "Kubernetes (unix rule)"
_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
_VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_MAX_WINDOW = 30 * 24 * 3600
_JOB_SPEC_NOT_CARRIED = {
    "activeDeadlineSeconds": "a run here is not stopped after a deadline",
    "ttlSecondsAfterFinished": "there are no finished Job objects to clean up here",
    "parallelism": "a job here makes one request per occurrence",
    "completions": "a job here makes one request per occurrence",
}
_SPEC_NOT_CARRIED = {
    "successfulJobsHistoryLimit": "the service keeps its own history of every run",
    "failedJobsHistoryLimit": "the service keeps its own history of every run",
}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _objects(documents: list[Any], origin: str) -> list[tuple[str, Any]]:
    """Each object of the stream with where it is (``kind: List`` items one by one); empty documents skipped."""
    found: list[tuple[str, Any]] = []
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        where = f"{origin} document {number}"
        if isinstance(document, dict) and document.get("kind") == "List" and isinstance(document.get("items"), list):
            found.extend((f"{where} items[{index}]", item) for index, item in enumerate(document["items"]))
        else:
            found.append((where, document))
    return found


def _substituted(argv: list[str], container: dict[str, Any]) -> list[str]:
    """``argv`` with ``$(VAR)`` replaced by the container's literal env values (``$$`` is a ``$``)."""
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for entry in container.get("env") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            if "value" in entry:
                values[entry["name"]] = str(entry["value"])
            else:
                sources[entry["name"]] = ", ".join(_mapping(entry.get("valueFrom"))) or "elsewhere"

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        origin = f"from {sources[name]}" if name in sources else "from nowhere in the manifest"
        raise NotCarried(f"uses $({name}), whose value comes {origin}: not known here")

    return [_VARIABLE.sub(replace, arg.replace("$$(", "\x00")).replace("\x00", "$(") for arg in argv]


def _command(pod: dict[str, Any]) -> HttpCall:
    """The request the pod's one container makes; :class:`NotCarried` otherwise."""
    containers = pod.get("containers")
    if not isinstance(containers, list) or not containers:
        raise NotCarried("has no container")
    if len(containers) > 1:
        raise NotCarried(f"runs {len(containers)} containers; a job makes one request")
    container = _mapping(containers[0])
    command = [str(item) for item in container.get("command") or []]
    args = [str(item) for item in container.get("args") or []]
    image = str(container.get("image") or "")
    if not command:
        if not image.split("@", maxsplit=1)[0].split(":", maxsplit=1)[0].endswith("curlimages/curl"):
            raise NotCarried(f"runs the entrypoint of the image {image!r}, which is not known here")
        command = ["curl"]
    argv = _substituted(command + args, container)
    if posixpath.basename(argv[0]) in _SHELLS and len(argv) >= 3 and argv[1].startswith("-") and "c" in argv[1]:
        return http_call(argv[2])
    return http_call(argv)


def _retry(job_spec: dict[str, Any], where: str, found: Conversion) -> dict[str, Any]:
    limit = job_spec.get("backoffLimit", 6)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        found.note(where, f"backoffLimit: {limit!r}", "not carried: not a count; the job is not retried")
        return {"retryType": "None"}
    if limit == 0:
        return {"retryType": "None"}
    if limit > 20:
        found.note(where, f"backoffLimit: {limit}", "carried as 20 retries, the most a retry policy allows")
    return {
        "retryType": "Exponential",
        "retryInterval": "PT15S",
        "retryCount": min(limit, 20),
        "maxRetryInterval": "PT6M",
    }


def _policies(spec: dict[str, Any], where: str, found: Conversion, properties: dict[str, Any]) -> None:
    """State, overlap and missed-run policies of the CronJob's ``spec``; what they cannot carry is noted."""
    if spec.get("suspend") is True:
        properties["state"] = "Disabled"
    policy = spec.get("concurrencyPolicy")
    if policy in (None, "Allow"):
        properties["overlapPolicy"] = "AllowAll"
    elif policy == "Forbid":
        properties["overlapPolicy"] = "Skip"
    else:
        why = "a run here is never stopped for the next one (runs may overlap)" if policy == "Replace" else "unknown"
        found.note(where, f"concurrencyPolicy: {policy}", f"not carried: {why}")
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool) and 1 <= deadline <= _MAX_WINDOW:
        properties["missedRunPolicy"] = {"mode": "RunOnce", "window": f"PT{deadline}S"}
    elif deadline is not None:
        found.note(
            where, f"startingDeadlineSeconds: {deadline!r}", "not carried: a missed-run window is 1 second to 30 days"
        )
    for key, why in _SPEC_NOT_CARRIED.items():
        if key in spec:
            found.note(where, f"{key}: {spec[key]!r}", f"not carried: {why}")


def _not_carried_pod(job_spec: dict[str, Any], pod: dict[str, Any], where: str, found: Conversion) -> None:
    for key, why in _JOB_SPEC_NOT_CARRIED.items():
        if key in job_spec:
            found.note(where, f"jobTemplate.spec.{key}: {job_spec[key]!r}", f"not carried: {why}")
    if pod.get("initContainers"):
        found.note(where, "initContainers", "not carried: no container runs here")
    if pod.get("serviceAccountName"):
        found.note(
            where,
            f"serviceAccountName: {pod['serviceAccountName']}",
            "not carried: the service calls with its own identity (ManagedServiceIdentity authentication)",
        )


def _cron_job(where: str, item: dict[str, Any], names: Names, found: Conversion, zoneless: list[str]) -> None:
    metadata = _mapping(item.get("metadata"))
    name, namespace = str(metadata.get("name") or ""), str(metadata.get("namespace") or "default")
    spec = _mapping(item.get("spec"))
    schedule = spec.get("schedule")
    label = f"CronJob {namespace}/{name}"
    if not name or not isinstance(schedule, str):
        found.note(where, label, "not carried: a CronJob needs metadata.name and spec.schedule")
        return
    where = f"{where} ({label})"
    job_spec = _mapping(_mapping(spec.get("jobTemplate")).get("spec"))
    pod = _mapping(_mapping(job_spec.get("template")).get("spec"))
    try:
        call = _command(pod)
    except NotCarried as reason:
        found.note(where, "the container's command", f"not carried: the command {reason}")
        return
    recurrence: dict[str, Any] = {"cron": schedule}
    zone = spec.get("timeZone")
    if isinstance(zone, str) and zone:
        recurrence["timeZone"] = zone
    else:
        zone = None
        zoneless.append(name)
    properties: dict[str, Any] = {"action": call.action(_retry(job_spec, where, found)), "recurrence": recurrence}
    if call.retries:
        found.note(where, f"the command's own {call.retries} retries", "not carried: the retries follow backoffLimit")
    _policies(spec, where, found, properties)
    _not_carried_pod(job_spec, pod, where, found)
    if names.taken(name):
        found.note(where, f"name {name}", f"taken by another CronJob: the job is named {namespace}-{name}")
        name = f"{namespace}-{name}"
    expected = Expected(UNIX, schedule, zone or "UTC", system=SYSTEM)
    found.jobs.append(SourceJob(names.claim(name), where, {"properties": properties}, expected))
    for what, why in call.notes:
        found.note(where, what, f"not carried: {why}")


def convert_kubernetes(documents: list[Any], origin: str, names: Names) -> Conversion:
    """The jobs and notes of a stream of Kubernetes objects (see the module's docstring)."""
    found = Conversion()
    zoneless: list[str] = []
    for where, item in _objects(documents, origin):
        if not isinstance(item, dict):
            found.note(where, type(item).__name__, "not carried: not a Kubernetes object")
        elif item.get("kind") != "CronJob":
            found.note(where, f"kind {item.get('kind')!r}", "not carried: only CronJobs are imported")
        else:
            if item.get("apiVersion") not in ("batch/v1", "batch/v1beta1"):
                found.note(where, f"apiVersion {item.get('apiVersion')!r}", "read as batch/v1")
            _cron_job(where, item, names, found, zoneless)
    if zoneless:
        found.note(
            origin,
            f"CronJobs without spec.timeZone: {', '.join(zoneless)}",
            "the controller ran them in its own time zone, which the manifest does not name: read here in UTC",
        )
    return found
