#!/usr/bin/env python3
"""Import the jobs of an Azure Scheduler job collection backup into this service, one PUT per job.

The backup is the JSON of the old collection's jobs, as ``az scheduler job list`` printed it or as the
REST list returned it: a JSON list of jobs, or ``{"value": [...]}``. Each job is sent as

    PUT {endpoint}/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/
        jobCollections/{collection}/jobs/{name}?api-version=2016-03-01
    Authorization: Bearer {api key}
    {"properties": <the job's properties without the read-only "status">}

Subscription, resource group and collection come from each job's ``id`` unless given on the command line
(to move jobs to another collection). The job collection must exist in the service (create it first, or
pass ``--create-collection LOCATION``). Every job is tried; failures are reported per job, and the exit
status is 1 if any job failed (2 for a bad command line or an unreadable backup).

Secrets (Basic ``password``, client certificate ``pfx``/``password``, OAuth ``secret``) are never returned
by Azure Scheduler, so a backup lacks them: such jobs are refused by the service until the secret is
added to the backup file. The tool says which jobs are affected.

Only the standard library and ``requests`` are used, so it runs anywhere:

    python scripts/import_jobs.py --endpoint https://func-xyz.azurewebsites.net --api-key "$KEY" jobs.json
    python scripts/import_jobs.py --dry-run jobs.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests

API_VERSION = "2016-03-01"
READ_ONLY_PROPERTIES = ("status",)
#: Authentication types whose secret the old service never returned, and the secret's field names.
SECRET_FIELDS = {
    "basic": ("password",),
    "clientcertificate": ("pfx",),
    "activedirectoryoauth": ("secret",),
}
TIMEOUT_SECONDS = 60


class BackupError(Exception):
    """The backup file cannot be used."""


@dataclass(frozen=True)
class Target:
    subscription: str
    resource_group: str
    collection: str
    name: str

    def collection_path(self) -> str:
        return (
            f"/subscriptions/{quote(self.subscription, safe='')}"
            f"/resourceGroups/{quote(self.resource_group, safe='')}"
            f"/providers/Microsoft.Scheduler/jobCollections/{quote(self.collection, safe='')}"
        )

    def job_path(self) -> str:
        return f"{self.collection_path()}/jobs/{quote(self.name, safe='')}"


def load_jobs(path: Path) -> list[dict[str, Any]]:
    """The jobs of a backup: a JSON list, or an object with a "value" list."""
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BackupError(f"{path} is not JSON: {exc}") from None
    if isinstance(document, dict) and isinstance(document.get("value"), list):
        document = document["value"]
    if not isinstance(document, list):
        raise BackupError(f'{path}: expected a list of jobs or {{"value": [...]}}')
    for number, job in enumerate(document, start=1):
        if not isinstance(job, dict):
            raise BackupError(f"{path}: job #{number} is not a JSON object")
    return document


def _id_segments(resource_id: str) -> dict[str, str]:
    """Case-insensitive key/value pairs of an ARM id (subscriptions, resourcegroups, jobcollections, jobs)."""
    parts = [p for p in resource_id.split("/") if p]
    return {parts[i].lower(): parts[i + 1] for i in range(0, len(parts) - 1, 2)}


def target_of(job: dict[str, Any], args: argparse.Namespace) -> Target:
    """Where a job goes: the command line's subscription / group / collection, else the job's own id."""
    segments = _id_segments(str(job.get("id") or ""))
    raw_name = str(job.get("name") or segments.get("jobs") or "")
    name = raw_name.rsplit("/", 1)[-1]  # Azure Scheduler names jobs "collection/job"
    subscription = args.subscription or segments.get("subscriptions")
    resource_group = args.resource_group or segments.get("resourcegroups")
    collection = args.job_collection or segments.get("jobcollections")
    if not collection and "/" in raw_name:
        collection = raw_name.split("/", 1)[0]
    missing = [
        label
        for label, value in (
            ("job name", name),
            ("subscription (--subscription)", subscription),
            ("resource group (--resource-group)", resource_group),
            ("job collection (--job-collection)", collection),
        )
        if not value
    ]
    if missing:
        raise BackupError("cannot tell the " + ", ".join(missing))
    assert subscription and resource_group and collection
    return Target(subscription, resource_group, collection, name)


def request_body(job: dict[str, Any]) -> dict[str, Any]:
    """The PUT body: the job's properties without the read-only ones."""
    properties = job.get("properties")
    if not isinstance(properties, dict):
        raise BackupError("the job has no 'properties' object")
    clean = copy.deepcopy(properties)
    for key in READ_ONLY_PROPERTIES:
        clean.pop(key, None)
    return {"properties": clean}


def missing_secrets(properties: dict[str, Any]) -> list[str]:
    """Where the backup lacks a secret the service will need (e.g. 'action.request.authentication.password')."""
    found: list[str] = []
    action = properties.get("action")
    error_action = action.get("errorAction") if isinstance(action, dict) else None
    for prefix, candidate in (("action", action), ("action.errorAction", error_action)):
        request = candidate.get("request") if isinstance(candidate, dict) else None
        auth = request.get("authentication") if isinstance(request, dict) else None
        if not isinstance(auth, dict):
            continue
        for field in SECRET_FIELDS.get(str(auth.get("type", "")).lower(), ()):
            if not auth.get(field):
                found.append(f"{prefix}.request.authentication.{field}")
    return found


def _error_text(response: requests.Response) -> str:
    try:
        error = response.json().get("error", {})
        return f"{error.get('code', '')}: {error.get('message', '')}".strip(": ")
    except (ValueError, AttributeError):
        return response.text[:300]


def ensure_collection(
    session: requests.Session, endpoint: str, target: Target, location: str, headers: dict[str, str]
) -> str | None:
    """Create the job collection if it does not exist. Returns an error text, or None."""
    url = f"{endpoint}{target.collection_path()}"
    params = {"api-version": API_VERSION}
    found = session.get(url, params=params, headers=headers, timeout=TIMEOUT_SECONDS)
    if found.status_code == 200:
        return None
    if found.status_code != 404:
        return f"GET collection: HTTP {found.status_code} {_error_text(found)}"
    body = {"location": location, "properties": {"sku": {"name": "Standard"}, "state": "Enabled"}}
    created = session.put(url, params=params, headers=headers, json=body, timeout=TIMEOUT_SECONDS)
    if created.status_code in (200, 201):
        return None
    return f"PUT collection: HTTP {created.status_code} {_error_text(created)}"


def import_jobs(jobs: Iterable[dict[str, Any]], args: argparse.Namespace, out: Any = sys.stdout) -> int:
    """Send every job; print one line per job; return the number of failures."""
    endpoint = (args.endpoint or "").rstrip("/")
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    if args.functions_key_header and args.api_key:
        headers = {"x-functions-key": args.api_key}
    headers.update(dict(args.header or []))
    session = requests.Session()
    failures = 0
    imported = 0
    collections_ready: set[str] = set()
    for number, job in enumerate(jobs, start=1):
        label = str(job.get("name") or job.get("id") or f"#{number}")
        try:
            target = target_of(job, args)
            body = request_body(job)
        except BackupError as exc:
            failures += 1
            print(f"FAILED  {label}: {exc}", file=out)
            continue
        label = f"{target.collection}/{target.name}"
        for where in missing_secrets(body["properties"]):
            print(f"WARNING {label}: the backup has no {where} (never returned by Azure Scheduler)", file=out)
        url = f"{endpoint}{target.job_path()}?api-version={API_VERSION}"
        if args.dry_run:
            print(f"DRY-RUN PUT {url}", file=out)
            print(json.dumps(body, indent=2, sort_keys=True), file=out)
            imported += 1
            continue
        try:
            collection_key = target.collection_path().lower()
            if args.create_collection and collection_key not in collections_ready:
                problem = ensure_collection(session, endpoint, target, args.create_collection, headers)
                if problem:
                    raise requests.RequestException(problem)
                collections_ready.add(collection_key)
            response = session.put(url, json=body, headers=headers, timeout=TIMEOUT_SECONDS)
        except requests.RequestException as exc:
            failures += 1
            print(f"FAILED  {label}: {exc}", file=out)
            continue
        if response.status_code in (200, 201):
            imported += 1
            print(f"OK      {label} (HTTP {response.status_code})", file=out)
        else:
            failures += 1
            print(f"FAILED  {label}: HTTP {response.status_code} {_error_text(response)}", file=out)
    verb = "would import" if args.dry_run else "imported"
    print(f"{imported} {verb}, {failures} failed", file=out)
    return failures


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError("expected 'Name: value'")
    return name.strip(), value.strip()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="import_jobs.py",
        description="Import an Azure Scheduler job collection backup (JSON) into this service.",
    )
    parser.add_argument("backup", type=Path, help='JSON file: a list of jobs or {"value": [...]}')
    parser.add_argument("--endpoint", help="base URL of the service, e.g. https://func-xyz.azurewebsites.net")
    parser.add_argument(
        "--api-key",
        default=os.environ.get("SCHEDULER_API_KEY"),
        help="API key (default: $SCHEDULER_API_KEY); sent as 'Authorization: Bearer KEY'",
    )
    parser.add_argument(
        "--functions-key-header",
        action="store_true",
        help="send the key as 'x-functions-key' instead (when App Service Authentication needs Authorization)",
    )
    parser.add_argument(
        "--header",
        action="append",
        type=_header,
        metavar="'NAME: VALUE'",
        help="extra request header, e.g. 'X-ZUMO-AUTH: <token>' (repeatable)",
    )
    parser.add_argument("--subscription", help="target subscription id (default: from each job's id)")
    parser.add_argument("--resource-group", help="target resource group (default: from each job's id)")
    parser.add_argument("--job-collection", help="target job collection (default: from each job's id)")
    parser.add_argument(
        "--create-collection",
        metavar="LOCATION",
        help="create the target job collection (Standard sku, in LOCATION) when it does not exist",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the requests; send nothing")
    args = parser.parse_args(argv)
    if not args.dry_run:
        if not args.endpoint:
            parser.error("--endpoint is required (or use --dry-run)")
        if not args.api_key:
            parser.error("--api-key or $SCHEDULER_API_KEY is required (or use --dry-run)")
    if args.dry_run and not args.endpoint:
        args.endpoint = "https://<endpoint>"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        jobs = load_jobs(args.backup)
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failures = import_jobs(jobs, args)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
