"""``collections ...`` and ``jobs ...``: one ARM operation (or two: a read, then a guarded write) each."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from scheduler_core.cli.client import ApiError, SchedulerClient
from scheduler_core.cli.common import (
    ENV_COLLECTION,
    EXIT_API_ERROR,
    EXIT_OK,
    CliError,
    add_connection_options,
    connection,
    environment,
    job_body,
    read_json_file,
)
from scheduler_core.cli.output import JSON, add_output_option, write_fields, write_json, write_line, write_table
from scheduler_core.cli.preview import instant_arg, positive
from scheduler_core.cli.tagged import act_on_tagged
from scheduler_core.definitions import wire_of
from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import (
    compile_schedule,
    format_instant,
    parse_instant,
    parse_recurrence,
    parse_start_time,
)

Handler = Callable[[argparse.Namespace], int]

# --------------------------------------------------------------------------------------------- helpers


#: Most occurrences ``jobs preview`` asks for (the dashboard job API's limit).
MAX_PREVIEW = 50


def preview_count(text: str) -> int:
    number = positive(text)
    if number > MAX_PREVIEW:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_PREVIEW}, not {number}")
    return number


def client_of(args: argparse.Namespace) -> SchedulerClient:
    return SchedulerClient(connection(args))


def group_of(client: SchedulerClient) -> str:
    return client.conn.require_resource_group()


def id_segments(resource_id: str) -> dict[str, str]:
    """Case-insensitive key/value pairs of an ARM id (subscriptions, resourcegroups, jobcollections, jobs)."""
    parts = [p for p in str(resource_id).split("/") if p]
    return {parts[i].lower(): parts[i + 1] for i in range(0, len(parts) - 1, 2)}


def _short_name(resource: Mapping[str, Any]) -> str:
    return str(resource.get("name") or "").rsplit("/", 1)[-1]


def job_address(args: argparse.Namespace) -> tuple[str, str]:
    """(collection, job) of a command: ``JOB`` may be written ``COLLECTION/JOB``; else ``--collection``,
    else ``$SCHEDULER_COLLECTION``."""
    name: str | None = args.job
    if not name:
        raise CliError("no job: give JOB (or, where the command takes it, --tag NAME=VALUE)")
    if "/" in name:
        collection, _, job = name.partition("/")
    else:
        collection, job = (args.collection or environment().get(ENV_COLLECTION) or ""), name
    if not collection:
        raise CliError(f"no job collection: write COLLECTION/JOB, pass --collection (-c) or set {ENV_COLLECTION}")
    if not job:
        raise CliError("no job name")
    return collection, job


def confirm(question: str, yes: bool) -> None:
    """Go on when ``--yes`` was given or a person at a terminal says yes; refuse otherwise."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError(f"{question} Pass --yes to confirm (standard input is not a terminal).")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CliError("cancelled")


# ------------------------------------------------------------------------------------ how jobs read


def describe_action(action: Any) -> str:
    """One line: the action's type and where it goes."""
    if not isinstance(action, dict):
        return ""
    kind = str(action.get("type") or "")
    request = action.get("request")
    if isinstance(request, dict):
        return f"{kind} {request.get('method', '')} {request.get('uri', '')}".strip()
    queue = action.get("queueMessage")
    if isinstance(queue, dict):
        return f"{kind} {queue.get('storageAccount', '')}/{queue.get('queueName', '')}"
    for field, entity in (("serviceBusQueueMessage", "queueName"), ("serviceBusTopicMessage", "topicPath")):
        message = action.get(field)
        if isinstance(message, dict):
            return f"{kind} {message.get('namespace', '')}/{message.get(entity, '')}"
    return kind


def describe_recurrence(recurrence: Any) -> str:
    """A recurrence in words: "every 2 hours, 5 times", "cron 0 9 * * MON-FRI | 0 12 L * *, Europe/Berlin"."""
    if not isinstance(recurrence, dict):
        return "once"
    cron = recurrence.get("cron")
    if cron:
        text = "cron " + " | ".join(cron if isinstance(cron, list) else [cron])
    elif not recurrence.get("frequency"):
        text = "by a schedule this api-version cannot show"  # a cron job read with 2016-03-01
    else:
        interval = recurrence.get("interval") or 1
        frequency = str(recurrence.get("frequency") or "").lower()
        text = f"every {frequency}" if interval == 1 else f"every {interval} {frequency}s"
    if recurrence.get("schedule"):
        text += " (schedule)"
    if recurrence.get("count") is not None:
        text += f", {recurrence['count']} times"
    if recurrence.get("endTime"):
        text += f", until {recurrence['endTime']}"
    if recurrence.get("timeZone"):
        text += f", {recurrence['timeZone']}"
    return text


def _authentication(action: Any) -> str:
    """How the action authenticates; a secret is write-only, so only whether one is in use shows."""
    if not isinstance(action, dict):
        return "none"
    request = action.get("request")
    auth = request.get("authentication") if isinstance(request, dict) else None
    if isinstance(auth, dict) and str(auth.get("type")).lower() == "managedserviceidentity":
        return f"ManagedServiceIdentity: the function app's identity, audience {auth.get('audience', '')}"
    if isinstance(auth, dict) and auth.get("type") not in (None, "NotSpecified"):
        return f"{auth['type']} (its secret is write-only: never shown)"
    if isinstance(action.get("queueMessage"), dict):
        return "a SAS token if one was given (write-only: never shown), else the function app's identity"
    for field in ("serviceBusQueueMessage", "serviceBusTopicMessage"):
        message = action.get(field)
        sas = message.get("authentication") if isinstance(message, dict) else None
        if isinstance(sas, dict) and sas.get("type") == "SharedAccessKey":
            return f"SharedAccessKey '{sas.get('sasKeyName', '')}' (the key is write-only: never shown)"
        if isinstance(message, dict):
            return "the function app's identity"
    return "none"


def _signing(action: Any) -> str:
    request = action.get("request") if isinstance(action, dict) else None
    signing = request.get("signing") if isinstance(request, dict) else None
    if not isinstance(signing, dict):
        return "none"
    return f"{signing.get('scheme', '')} (its secret is write-only: never shown)"


def _exclusions(recurrence: Any) -> str:
    exclusions = recurrence.get("exclusions") if isinstance(recurrence, dict) else None
    if not isinstance(exclusions, dict):
        return "none"
    parts = []
    if exclusions.get("dates"):
        parts.append(f"dates {', '.join(str(d) for d in exclusions['dates'])}")
    for item in exclusions.get("ranges") or []:
        if isinstance(item, dict):
            parts.append(f"from {item.get('start')} to {item.get('end')}")
    if exclusions.get("calendars"):
        parts.append(f"calendars {', '.join(str(c) for c in exclusions['calendars'])}")
    return "; ".join(parts) or "none"


def _missed_runs(policy: Any) -> str:
    if not isinstance(policy, dict):
        return "RunOnce (the default: one late run stands for those missed)"
    window = f", window {policy['window']}" if policy.get("window") else ""
    return f"{policy.get('mode', '')}{window}"


def _preview_fields(props: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The rows of the properties that only the preview api-version shows (each with its default)."""
    action = props.get("action") or {}
    recurrence = props.get("recurrence")
    pause = props.get("pauseAfterFailures")
    return [
        ("jitter", recurrence.get("jitter") if isinstance(recurrence, dict) and recurrence.get("jitter") else "none"),
        ("exclusions", _exclusions(recurrence)),
        ("overlap policy", props.get("overlapPolicy") or "AllowAll (the default)"),
        ("missed runs", _missed_runs(props.get("missedRunPolicy"))),
        ("pause after failures", f"after {pause} faulted occurrences in a row" if pause else "never"),
        ("delete after completion", "yes" if props.get("deleteAfterCompletion") else "no"),
        ("placeholders", "expanded" if isinstance(action, dict) and action.get("expandPlaceholders") else "no"),
        ("signing", _signing(action)),
    ]


def _job_row(job: Mapping[str, Any]) -> list[Any]:
    props = job.get("properties") or {}
    status = props.get("status") or {}
    counters = f"{status.get('executionCount', 0)}/{status.get('failureCount', 0)}/{status.get('faultedCount', 0)}"
    return [
        _short_name(job),
        props.get("state"),
        describe_recurrence(props.get("recurrence")),
        status.get("nextExecutionTime") or "-",
        status.get("lastExecutionTime") or "-",
        counters,
        describe_action(props.get("action")),
    ]


def _collection_row(collection: Mapping[str, Any]) -> list[Any]:
    props = collection.get("properties") or {}
    quota = props.get("quota") or {}
    recurrence = quota.get("maxRecurrence") or {}
    return [
        collection.get("name"),
        id_segments(str(collection.get("id") or "")).get("resourcegroups", ""),
        collection.get("location"),
        (props.get("sku") or {}).get("name"),
        props.get("state"),
        quota.get("maxJobCount"),
        f"{recurrence.get('interval', '')} {recurrence.get('frequency', '')}".strip(),
    ]


COLLECTION_HEADERS = ("name", "resource group", "location", "sku", "state", "max jobs", "max recurrence")
JOB_HEADERS = ("name", "state", "recurrence", "next run", "last run", "runs/fails/faults", "action")


def _show_job(job: Mapping[str, Any], api_version: str) -> None:
    """Every property that shapes the job's schedule or its call, its state and counters; the properties of
    the preview api-version when it was read with it (a note says which version was read otherwise)."""
    props = job.get("properties") or {}
    status = props.get("status") or {}
    action = props.get("action") or {}
    error_action = action.get("errorAction") if isinstance(action, dict) else None
    retry = action.get("retryPolicy") if isinstance(action, dict) else None
    segments = id_segments(str(job.get("id") or ""))
    preview = wire_of(api_version).preview
    extra = (
        _preview_fields(props)
        if preview
        else [("api-version", f"{api_version}: jitter, policies, exclusions, signing and identity not shown")]
    )
    state = props.get("state")
    if preview and status.get("disabledReason"):
        state = f"{state} ({status['disabledReason']})"
    write_fields(
        [
            ("name", _short_name(job)),
            ("collection", segments.get("jobcollections", "")),
            ("resource group", segments.get("resourcegroups", "")),
            ("state", state),
            ("start time", props.get("startTime") or "(the creation second)"),
            ("recurrence", describe_recurrence(props.get("recurrence"))),
            ("action", describe_action(action)),
            ("authentication", _authentication(action)),
            ("retry policy", _retry_text(retry)),
            ("error action", describe_action(error_action) if error_action else "none"),
            *extra,
            ("next run", status.get("nextExecutionTime") or "-"),
            ("last run", status.get("lastExecutionTime") or "-"),
            ("executions", status.get("executionCount", 0)),
            ("failures", status.get("failureCount", 0)),
            ("faults", status.get("faultedCount", 0)),
        ]
    )


def _retry_text(retry: Any) -> str:
    if not isinstance(retry, dict):
        return "default"
    kind = retry.get("retryType") or ""
    if kind == "None":
        return "none"
    parts = [str(kind)]
    if retry.get("retryCount") is not None:
        parts.append(f"{retry['retryCount']} times")
    if retry.get("retryInterval"):
        parts.append(f"every {retry['retryInterval']}")
    return ", ".join(parts)


# ------------------------------------------------------------------------------------- collections


def collections_list(args: argparse.Namespace) -> int:
    client = client_of(args)
    items = client.list_collections(client.conn.resource_group)
    if args.output == JSON:
        write_json(items)
    else:
        write_table(COLLECTION_HEADERS, [_collection_row(c) for c in items])
    return EXIT_OK


def collections_show(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    item = client.get_collection(group, args.name)
    if args.output == JSON:
        write_json(item)
        return EXIT_OK
    jobs = client.list_jobs(group, args.name)
    states: dict[str, int] = {}
    for job in jobs:
        state = str((job.get("properties") or {}).get("state"))
        states[state] = states.get(state, 0) + 1
    row = dict(zip(COLLECTION_HEADERS, _collection_row(item), strict=True))
    summary = ", ".join(f"{count} {state}" for state, count in sorted(states.items()))
    write_fields(
        [
            *row.items(),
            ("tags", item.get("tags") or {}),
            ("jobs", f"{len(jobs)}" + (f" ({summary})" if summary else "")),
        ]
    )
    return EXIT_OK


def _tag(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError("expected NAME=VALUE")
    return name, value


def _max_recurrence(text: str) -> dict[str, Any]:
    interval, _, frequency = text.strip().partition(" ")
    try:
        number = int(interval)
    except ValueError:
        raise argparse.ArgumentTypeError("expected 'INTERVAL FREQUENCY', e.g. '5 Minute'") from None
    if not frequency.strip():
        raise argparse.ArgumentTypeError("expected 'INTERVAL FREQUENCY', e.g. '5 Minute'")
    return {"frequency": frequency.strip(), "interval": number}


def collections_create(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    body: dict[str, Any] = {}
    if args.file:
        document = read_json_file(args.file)
        if not isinstance(document, dict):
            raise CliError(f"{args.file}: a job collection definition must be a JSON object")
        body = {k: v for k, v in document.items() if k in ("location", "tags", "properties")}
    properties: dict[str, Any] = dict(body.get("properties") or {})
    if args.location:
        body["location"] = args.location
    if "location" not in body:
        raise CliError("a job collection needs a location: pass --location (e.g. westeurope)")
    if args.sku:
        properties["sku"] = {"name": args.sku}
    if args.disabled:
        properties["state"] = "Disabled"
    quota: dict[str, Any] = dict(properties.get("quota") or {})
    if args.max_job_count is not None:
        quota["maxJobCount"] = args.max_job_count
    if args.max_recurrence is not None:
        quota["maxRecurrence"] = args.max_recurrence
    if quota:
        properties["quota"] = quota
    if properties:
        body["properties"] = properties
    if args.tag:
        body["tags"] = {**(body.get("tags") or {}), **dict(args.tag)}
    if client.find_collection(group, args.name) is not None:
        raise ApiError(409, "Conflict", f"job collection '{args.name}' already exists in resource group '{group}'")
    answer = client.put_collection(group, args.name, body)
    if args.output == JSON:
        write_json(answer.body)
    else:
        write_line(f"created job collection {args.name}")
    return EXIT_OK


def collections_delete(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    client.get_collection(group, args.name)  # 404 before asking
    confirm(f"Delete job collection '{args.name}' with all its jobs and their history?", args.yes)
    client.delete_collection(group, args.name)
    return _done(args, "deleted", f"job collection {args.name}")


def collections_state(enable: bool) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        client = client_of(args)
        client.set_collection_state(group_of(client), args.name, enable)
        return _done(args, "enabled" if enable else "disabled", f"job collection {args.name} and its jobs")

    return handler


def _done(args: argparse.Namespace, verb: str, what: str, extra: Mapping[str, Any] | None = None) -> int:
    if args.output == JSON:
        write_json({"result": verb, "target": what, **(extra or {})})
    else:
        write_line(f"{verb} {what}")
    return EXIT_OK


# --------------------------------------------------------------------------------------------- jobs


def jobs_list(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    collection = args.collection or environment().get(ENV_COLLECTION)
    if not collection:
        raise CliError(f"no job collection: pass --collection (-c) or set {ENV_COLLECTION}")
    jobs = client.list_jobs(group, collection, args.state, args.tag)
    if args.output == JSON:
        write_json(jobs)
    else:
        write_table(JOB_HEADERS, [_job_row(job) for job in jobs])
    return EXIT_OK


def jobs_show(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    job = client.get_job(group, collection, name).body
    if args.output == JSON:
        write_json(job)
    else:
        _show_job(job, client.api_version)
    return EXIT_OK


def jobs_create(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    body = job_body(read_json_file(args.file), args.file)
    try:
        client.get_job(group, collection, name)
    except ApiError as exc:
        if exc.status != 404:
            raise
    else:
        raise ApiError(
            409, "Conflict", f"job '{name}' already exists in job collection '{collection}' (use `jobs update`)"
        )
    answer = client.put_job(group, collection, name, body)
    return _written(args, "created", answer.body)


def jobs_update(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    document = read_json_file(args.file)
    current = client.get_job(group, collection, name)  # 404 when it does not exist; the ETag guards the write
    if args.merge:
        if not isinstance(document, dict):
            raise CliError(f"{args.file}: a merge patch must be a JSON object")
        patch = document if any(str(k).lower() == "properties" for k in document) else {"properties": document}
        answer = client.patch_job(group, collection, name, patch, if_match=current.etag)
    else:
        answer = client.put_job(group, collection, name, job_body(document, args.file), if_match=current.etag)
    return _written(args, "updated", answer.body)


def _written(args: argparse.Namespace, verb: str, job: Any) -> int:
    if args.output == JSON:
        write_json(job)
    else:
        props = job.get("properties") or {} if isinstance(job, dict) else {}
        status = props.get("status") or {}
        next_run = status.get("nextExecutionTime")
        write_line(
            f"{verb} job {_short_name(job)} ({props.get('state')}"
            + (f", next run {next_run}" if next_run else "")
            + ")"
        )
    return EXIT_OK


def jobs_delete(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    if args.tag:
        return act_on_tagged(args, client, group, "deleted", SchedulerClient.delete_job, confirm)
    collection, name = job_address(args)
    client.get_job(group, collection, name)  # 404 before asking
    confirm(f"Delete job '{name}' of job collection '{collection}' with its history?", args.yes)
    client.delete_job(group, collection, name)
    return _done(args, "deleted", f"job {collection}/{name}")


def jobs_state(state: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        client = client_of(args)
        group = group_of(client)
        if args.tag:
            verb = "paused" if state == "Disabled" else "resumed"

            def act(client: SchedulerClient, group: str, collection: str, name: str) -> object:
                return client.patch_job(group, collection, name, {"properties": {"state": state}})

            return act_on_tagged(args, client, group, verb, act, confirm)
        collection, name = job_address(args)
        answer = client.patch_job(group, collection, name, {"properties": {"state": state}})
        if args.output == JSON:
            write_json(answer.body)
            return EXIT_OK
        return _written(args, "paused" if state == "Disabled" else "resumed", answer.body)

    return handler


def jobs_run(args: argparse.Namespace) -> int:
    """``POST .../jobs/{job}/run``: one execution now, outside the schedule (which is not changed)."""
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    seen: set[str] = set()
    if args.wait:
        seen = {str(row.get("name")) for row in client.history(group, collection, name, top=100)}
    client.run_job(group, collection, name)
    if not args.wait:
        return _done(args, "started", f"job {collection}/{name}")

    def first_new(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        new = [row for row in rows if str(row.get("name")) not in seen]
        return new[-1] if new else None  # the oldest new row: the first attempt of this run

    return _wait_for_entry(args, client, (group, collection, name), first_new, "the run was requested")


def jobs_rerun(args: argparse.Namespace) -> int:
    """``POST .../jobs/{job}/history/{historyId}/rerun`` (api-version 2026-12-01-preview): the occurrence of a
    history entry (``HISTORY_ID``: the entry's ``name``, the ID column of ``jobs history``) runs again now, a
    replay with its own execution id and history trigger ``Replay``. Prints the occurrence (``scheduledTime``)
    and the replay's execution id; ``--wait`` then waits for the replay's first attempt (the history entry of
    that execution id) and prints it, exit status 1 if it failed, as ``jobs run --wait`` does."""
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    history_id = str(args.history_id or "").strip()
    if not history_id:
        raise CliError("no history entry: give HISTORY_ID (the ID column of `jobs history`)")
    replay = client.rerun_history(group, collection, name, history_id)
    execution_id = replay["executionId"]
    if args.wait:

        def replay_entry(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
            return next((row for row in rows if str(row.get("name")).lower() == execution_id.lower()), None)

        requested = f"the rerun was requested (execution id {execution_id})"
        return _wait_for_entry(args, client, (group, collection, name), replay_entry, requested)
    target = f"job {collection}/{name}"
    if args.output == JSON:
        write_json({"result": "rerun requested", "target": target, "historyId": history_id, **replay})
        return EXIT_OK
    write_fields(
        [
            ("rerun requested", f"{target}, history entry {history_id}"),
            ("scheduled time", replay["scheduledTime"]),
            ("execution id", execution_id),
        ]
    )
    return EXIT_OK


def _wait_for_entry(
    args: argparse.Namespace,
    client: SchedulerClient,
    job: tuple[str, str, str],
    pick: Callable[[list[dict[str, Any]]], dict[str, Any] | None],
    requested: str,
) -> int:
    """``--wait`` of ``jobs run`` and ``jobs rerun``: reads the newest 100 history entries of ``job`` (group,
    collection, name) about once a second until ``pick`` finds the entry waited for among them, prints it (a
    row of the history table, or the entry as JSON) and returns 0 if its status is Completed, else 1. When
    ``--wait-timeout`` seconds pass first, a :class:`CliError` (exit status 1) says ``requested`` and that no
    entry appeared."""
    group, collection, name = job
    deadline = time.monotonic() + args.wait_timeout
    while True:
        row = pick(client.history(group, collection, name, top=100))
        if row is not None:
            props = row.get("properties") or {}
            if args.output == JSON:
                write_json(row)
            else:
                write_table(HISTORY_HEADERS, [_history_row(row)], limit=100)
            return EXIT_OK if props.get("status") == "Completed" else EXIT_API_ERROR
        if time.monotonic() >= deadline:
            raise CliError(f"{requested}, but no history entry appeared within {args.wait_timeout:g} s", EXIT_API_ERROR)
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


#: The columns of a history entry. ``trigger`` (what started the occurrence: Scheduled, Manual, Backfill, Replay)
#: is the preview api-version's; ``id`` is the entry's ``name``, its execution id (``jobs rerun``'s HISTORY_ID).
HISTORY_HEADERS = ("start", "status", "action", "retry", "expected", "trigger", "seconds", "id", "message")


def _seconds(start: Any, end: Any) -> str:
    try:
        began = parse_instant(str(start), "startTime")
        ended = parse_instant(str(end), "endTime")
    except ValidationError:
        return ""
    return f"{(ended - began).total_seconds():.1f}"


def _history_row(row: Mapping[str, Any]) -> list[Any]:
    props = row.get("properties") or {}
    return [
        props.get("startTime"),
        props.get("status"),
        props.get("actionName"),
        props.get("retryCount"),
        props.get("expectedExecutionTime") or "-",
        props.get("trigger") or "-",
        _seconds(props.get("startTime"), props.get("endTime")) if props.get("endTime") else "",
        row.get("name"),
        props.get("message"),
    ]


def jobs_history(args: argparse.Namespace) -> int:
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    rows = client.history(group, collection, name, args.status, args.top)
    if args.output == JSON:
        write_json(rows)
    else:
        write_table(HISTORY_HEADERS, [_history_row(row) for row in rows], limit=80)
    return EXIT_OK


def jobs_preview(args: argparse.Namespace) -> int:
    """The next occurrences of a stored job, computed by the service (the dashboard's job API, which applies
    the recurrence's ``count`` from the job's creation); on an older service without that API, here, from
    the job's ``nextExecutionTime`` (a note says ``count`` is then not applied)."""
    client = client_of(args)
    group = group_of(client)
    collection, name = job_address(args)
    job = client.get_job(group, collection, name).body  # 404 and 403 as every command reports them
    props = job.get("properties") or {}
    insight = client.job_insight(group, collection, name, args.count, args.after)
    if insight is None:
        sys.stderr.write(
            "note: this service has no dashboard job API (a version older than the dashboard): the occurrences "
            "are computed here from the job's next execution time\n"
        )
        return _preview_locally(args, name, props)
    state = str(insight.get("state") or props.get("state"))
    occurrences = [o for o in insight["occurrences"] if isinstance(o, dict) and o.get("utc")]
    if not occurrences:
        write_line(f"job {name} has no next occurrence (state {state})", sys.stderr)
    elif state != "Enabled":
        write_line(f"note: job {name} is {state}: its schedule would run at these times once resumed", sys.stderr)
    if args.output == JSON:
        write_json([o["utc"] for o in occurrences])
        return EXIT_OK
    for occurrence in occurrences:
        local = f"  {occurrence['local']}" if occurrence.get("local") else ""
        write_line(f"{occurrence['utc']}{local}")
    return EXIT_OK


def _preview_locally(args: argparse.Namespace, name: str, props: Mapping[str, Any]) -> int:
    """The preview of a service without the dashboard's job API. The API does not return a job's creation
    time, which anchors a job without ``startTime`` and starts the series ``count`` counts; the series is
    anchored at the job's ``nextExecutionTime`` (exact for the first occurrence, the service's own answer),
    and ``count`` is not applied."""
    status = props.get("status") or {}
    next_run = status.get("nextExecutionTime")
    if not next_run:
        write_line(f"job {name} has no next execution (state {props.get('state')})", sys.stderr)
        if args.output == JSON:
            write_json([])
        return EXIT_OK
    anchor = parse_instant(str(next_run), "nextExecutionTime")
    raw = props.get("recurrence")
    if isinstance(raw, dict) and raw.get("count") is not None:
        raw = {k: v for k, v in raw.items() if k != "count"}
        sys.stderr.write("note: count is counted from the job's creation, which the API does not return: not applied\n")
    recurrence = parse_recurrence(raw, "properties.recurrence")
    start = parse_start_time(props.get("startTime"), recurrence, "properties.startTime")
    schedule = compile_schedule(start, recurrence, anchor)
    occurrences = list(schedule.occurrences(args.after or anchor, args.count))
    if args.output == JSON:
        write_json([format_instant(o) for o in occurrences])
        return EXIT_OK
    zone = recurrence.zone if recurrence is not None else None
    for occurrence in occurrences:
        local = f"  {occurrence.astimezone(zone).isoformat()}" if zone is not None else ""
        write_line(format_instant(occurrence) + local)
    return EXIT_OK


# -------------------------------------------------------------------------------------------- parser


def _command(
    commands: Any, name: str, help_text: str, handler: Handler, *, group: bool = True
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help_text, description=help_text)
    add_connection_options(parser, resource_group=group)
    add_output_option(parser)
    parser.set_defaults(handler=handler)
    return parser


def _job_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="job name, or COLLECTION/JOB")
    parser.add_argument("-c", "--collection", help=f"job collection (default: ${ENV_COLLECTION})")


def _jobs_or_tags(parser: argparse.ArgumentParser, *, yes: bool = True) -> None:
    """``JOB``, or ``--tag`` (repeatable) for every job with those tags, with ``--dry-run`` (count and name
    them, change nothing) and ``--yes``."""
    parser.add_argument("job", metavar="JOB", nargs="?", help="job name, or COLLECTION/JOB (or use --tag)")
    parser.add_argument("-c", "--collection", help=f"job collection (default: ${ENV_COLLECTION})")
    _tag_option(parser, "every job with this tag (repeatable: all of them)")
    parser.add_argument("--dry-run", action="store_true", help="with --tag: count and name the jobs, change nothing")
    if yes:
        parser.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def _wait_options(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--wait`` (``help_text``) and ``--wait-timeout SECONDS`` (default 120)."""
    parser.add_argument("--wait", action="store_true", help=help_text)
    parser.add_argument(
        "--wait-timeout", type=float, default=120.0, metavar="SECONDS", help="how long to wait (default 120)"
    )


def _tag_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--tag", type=_tag, action="append", default=[], metavar="NAME=VALUE", help=help_text)


def _add_collections_commands(commands: Any) -> None:
    """``collections`` with its subcommands: list, show, create, delete, enable, disable."""
    top = commands.add_parser("collections", help="list, show, create, delete, enable, disable job collections")
    sub = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    _command(sub, "list", "list the job collections of the subscription (or of -g)", collections_list)
    p = _command(sub, "show", "show a job collection and how many jobs it holds", collections_show)
    p.add_argument("name", metavar="COLLECTION")
    p = _command(sub, "create", "create a job collection", collections_create)
    p.add_argument("name", metavar="COLLECTION")
    p.add_argument("-l", "--location", help="region, e.g. westeurope")
    p.add_argument("--sku", choices=("Free", "Standard", "P10Premium", "P20Premium"), help="plan (default Standard)")
    p.add_argument("--disabled", action="store_true", help="create it Disabled")
    p.add_argument("--max-job-count", type=positive, help="quota.maxJobCount (default: the plan's)")
    p.add_argument(
        "--max-recurrence", type=_max_recurrence, metavar="'N UNIT'", help="quota.maxRecurrence, e.g. '5 Minute'"
    )
    p.add_argument("--tag", type=_tag, action="append", default=[], metavar="NAME=VALUE", help="a tag (repeatable)")
    p.add_argument("-f", "--file", help="a JSON JobCollectionDefinition to start from (flags override it)")
    p = _command(sub, "delete", "delete a job collection with its jobs and their history", collections_delete)
    p.add_argument("name", metavar="COLLECTION")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    p = _command(sub, "enable", "enable a job collection and its jobs", collections_state(True))
    p.add_argument("name", metavar="COLLECTION")
    p = _command(sub, "disable", "disable a job collection and its jobs", collections_state(False))
    p.add_argument("name", metavar="COLLECTION")


def _add_jobs_commands(commands: Any) -> None:
    """``jobs`` with its subcommands: list, show, create, update, delete, pause, resume, run, rerun, history,
    preview."""
    top = commands.add_parser(
        "jobs", help="list, show, create, update, delete, pause, resume, run, rerun jobs; history; preview"
    )
    sub = top.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = _command(sub, "list", "list the jobs of a collection", jobs_list)
    p.add_argument("-c", "--collection", help=f"job collection (default: ${ENV_COLLECTION})")
    p.add_argument("--state", choices=("Enabled", "Disabled", "Completed", "Faulted"), help="only jobs in this state")
    _tag_option(p, "only jobs with this tag (repeatable: all of them)")
    p = _command(sub, "show", "show a job: definition (secrets never shown), state, counters", jobs_show)
    _job_argument(p)
    p = _command(sub, "create", "create a job from a JSON file (refused if it exists)", jobs_create)
    _job_argument(p)
    p.add_argument(
        "-f", "--file", required=True, metavar="JOB.json", help="the job's ARM JSON or its properties (- for stdin)"
    )
    p = _command(sub, "update", "replace a job's definition (or merge into it with --merge)", jobs_update)
    _job_argument(p)
    p.add_argument(
        "-f", "--file", required=True, metavar="JOB.json", help="the job's ARM JSON or its properties (- for stdin)"
    )
    p.add_argument("--merge", action="store_true", help="send the file as a JSON merge patch (PATCH) instead")
    p = _command(sub, "delete", "delete a job and its history (or every job with --tag)", jobs_delete)
    _jobs_or_tags(p, yes=True)
    p = _command(sub, "pause", "disable a job (state Disabled; or every job with --tag)", jobs_state("Disabled"))
    _jobs_or_tags(p, yes=True)
    p = _command(sub, "resume", "enable a job (state Enabled; or every job with --tag)", jobs_state("Enabled"))
    _jobs_or_tags(p, yes=True)
    p = _command(sub, "run", "run a job now, outside its schedule (POST .../jobs/JOB/run)", jobs_run)
    _job_argument(p)
    _wait_options(p, "wait for the run's history entry; exit 1 if it failed")
    p = _command(
        sub,
        "rerun",
        "run the occurrence of a history entry again now (POST .../jobs/JOB/history/HISTORY_ID/rerun)",
        jobs_rerun,
    )
    _job_argument(p)
    p.add_argument("history_id", metavar="HISTORY_ID", help="the history entry's id (the ID column of `jobs history`)")
    _wait_options(p, "wait for the replay's history entry; exit 1 if it failed")
    p = _command(sub, "history", "a job's history, newest first", jobs_history)
    _job_argument(p)
    p.add_argument("--status", choices=("Completed", "Failed", "Postponed"), help="only entries with this status")
    p.add_argument("--top", type=positive, default=20, help="at most this many entries (default 20)")
    p = _command(sub, "preview", "the next occurrences of a stored job, computed by the service", jobs_preview)
    _job_argument(p)
    p.add_argument("--count", type=preview_count, default=10, help="how many occurrences (1 to 50, default 10)")
    p.add_argument("--after", type=instant_arg, help="occurrences at or after this instant (default: now), not yet run")


def add_resource_commands(commands: Any) -> None:
    """``collections`` and ``jobs`` with their subcommands."""
    _add_collections_commands(commands)
    _add_jobs_commands(commands)
