"""``verify``: measure a live deployment's firing promises with throwaway jobs (``docs/verify.md``).

The contract:

- It creates one job collection of its own, ``verify-<8 hex digits>`` (plan P20Premium, so a burst of up to
  :data:`MAX_JOBS` jobs fits), in the resource group given (``-g``, ``$SCHEDULER_RESOURCE_GROUP``) or
  :data:`DEFAULT_GROUP`, and refuses to touch a collection that already has that name.
- Every job it creates is enabled, has no retries (``retryType: None``) and one action: an HTTP GET of the
  deployment's own ``/health`` (the endpoint + ``/health``, anonymous; ``--target`` overrides it), so no
  outside target is needed.
- Scenarios, in this order, each skipped when its count is 0: **one-shot** (``--one-shot`` jobs due one
  second apart, at least ``--lead`` seconds after their creation), **idle** (one job created ``--idle``
  seconds before its due second, after which the command sends nothing to the service until that second
  has passed), **burst** (``--burst`` jobs due at the same second, created on :data:`WORKERS` threads) and
  **recurring** (one job every minute, ``--recurring`` occurrences).
- After a scenario's last due second it reads the history of its jobs (once a second, only the jobs still
  lacking an entry) until every occurrence has one or ``--deadline`` seconds have passed. When every
  scenario has run it reads every job's history once more, and measures each scenario from that reading
  (:func:`measure`): lateness from each occurrence's expected execution time to the ``startTime`` (call
  started) and ``endTime`` (call completed) of its first history entry, as p50, p99 and max (nearest
  rank); **duplicates** (history entries of an attempt beyond its first: the same occurrence, action and
  retry count recorded more than once), **misses** (occurrences without any entry), **failed** (occurrences
  with no ``Completed`` entry) and **unexpected** entries (of an instant that is no occurrence).
- A scenario meets its bound when its maximum start lateness is at most its bound (``--max-late``,
  ``--max-late-idle``, ``--max-late-burst``) and it has no duplicate, miss, failure, unexpected entry, or
  job created after its due second. The command prints one row per scenario (a table, or with ``-o json``
  one JSON document) and exits 0 when every scenario met its bound, :data:`EXIT_NOT_MET` with a message
  naming each one that did not.
- It deletes its collection (with its jobs and their history) in every case: on success, on an error, on
  Ctrl-C (``try``/``finally``). When that delete fails it says so and prints the command that deletes the
  collection by hand, and exits non-zero.
"""

from __future__ import annotations

import argparse
import math
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit

from scheduler_core.cli.client import ApiError, SchedulerClient, Unreachable
from scheduler_core.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    CliError,
    add_connection_options,
    connection,
)
from scheduler_core.cli.output import JSON, add_output_option, write_error, write_json, write_line, write_table
from scheduler_core.errors import ValidationError
from scheduler_core.recurrence import format_instant, parse_instant

__all__ = [
    "EXIT_NOT_MET",
    "Lateness",
    "PlannedJob",
    "ScenarioResult",
    "add_verify_command",
    "measure",
    "percentile",
    "verify_command",
]

T = TypeVar("T")
R = TypeVar("R")

#: The exit status of a run whose scenarios did not all meet their bounds (docs/verify.md).
EXIT_NOT_MET = 6
#: The resource group of the throwaway collection when none is given.
DEFAULT_GROUP = "scheduler-verify"
#: The collection's location (the service stores it; nothing depends on it).
DEFAULT_LOCATION = "westeurope"
DEFAULT_ONE_SHOT = 5
DEFAULT_IDLE = 300
DEFAULT_BURST = 50
DEFAULT_RECURRING = 0
DEFAULT_LEAD = 10.0
DEFAULT_DEADLINE = 120.0
DEFAULT_MAX_LATE = 5.0
DEFAULT_MAX_LATE_IDLE = 30.0
DEFAULT_MAX_LATE_BURST = 15.0
#: The collection's plan: P20Premium holds up to 1,000 jobs, recurring every minute at most.
PLAN = "P20Premium"
MAX_JOBS = 1000
MAX_RECURRING = 60
#: Concurrent requests when creating a burst and reading histories.
WORKERS = 8
#: Seconds between two readings of the histories still lacking entries.
POLL_SECONDS = 1.0
#: Seconds after a scenario's last due second before its histories are first read.
FIRST_READ_AFTER = 1.0

ONE_SHOT, IDLE, BURST, RECURRING = "one-shot", "idle", "burst", "recurring"


# ----------------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class PlannedJob:
    """A job the command created: its name, its scenario, the occurrences it must run (due instants, UTC)
    and how many seconds before its first due instant the service answered its creation (client clock)."""

    name: str
    scenario: str
    occurrences: tuple[datetime, ...]
    ahead_seconds: float


@dataclass(frozen=True)
class Lateness:
    """p50, p99 and max (nearest rank) of some latenesses in seconds; None for none."""

    p50: float | None
    p99: float | None
    max: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Lateness:
        return cls(percentile(values, 50), percentile(values, 99), max(values) if values else None)

    def cell(self) -> str:
        if self.max is None:
            return "-"
        return " / ".join(f"{v:.3f}" for v in (self.p50, self.p99, self.max) if v is not None)

    def json(self) -> dict[str, float | None]:
        pairs = (("p50", self.p50), ("p99", self.p99), ("max", self.max))
        return {k: None if v is None else round(v, 6) for k, v in pairs}


def percentile(values: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile of ``values`` by nearest rank (the smallest value with at least ``p`` % of the
    values at or below it); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class ScenarioResult:
    """What one scenario measured, and whether it met its bound (``problems`` empty)."""

    name: str
    jobs: int
    occurrences: int
    ran: int
    failed: int
    duplicates: int
    misses: int
    unexpected: int
    start: Lateness
    done: Lateness
    bound: float
    bound_option: str
    lead: float | None
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "jobs": self.jobs,
            "occurrences": self.occurrences,
            "ran": self.ran,
            "failed": self.failed,
            "duplicates": self.duplicates,
            "misses": self.misses,
            "unexpected": self.unexpected,
            "startLateness": self.start.json(),
            "completionLateness": self.done.json(),
            "bound": {"maxStartLateness": self.bound, "option": self.bound_option},
            "leadSeconds": None if self.lead is None else round(self.lead, 3),
            "passed": self.passed,
            "problems": list(self.problems),
        }


def _exact(seconds: float) -> str:
    """Seconds to the microsecond (the history's precision), without trailing zeros: ``0.000213``, ``1.5``."""
    return f"{seconds:.6f}".rstrip("0").rstrip(".")


def _instant(value: Any) -> datetime | None:
    try:
        return parse_instant(value, "history")
    except ValidationError:
        return None


@dataclass
class _Tally:
    """What :func:`measure` counts over the occurrences of a scenario's jobs: the start and completion
    latenesses (seconds) of the occurrences that ran, and the counts its result reports."""

    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    ran: int = 0
    failed: int = 0
    duplicates: int = 0
    misses: int = 0
    unexpected: int = 0

    def add_job(self, job: PlannedJob, entries: Iterable[Mapping[str, Any]]) -> None:
        """Count ``job``'s history entries (ARM JSON): an entry of its main action belongs to the occurrence
        whose instant is its ``expectedExecutionTime`` and is unexpected when there is none; entries of any
        other action are ignored. Then count each occurrence (:meth:`add_occurrence`)."""
        by_occurrence: dict[datetime, list[Mapping[str, Any]]] = {due: [] for due in job.occurrences}
        for entry in entries:
            props = entry.get("properties") or {}
            if not isinstance(props, Mapping) or props.get("actionName", "MainAction") != "MainAction":
                continue
            expected = _instant(props.get("expectedExecutionTime"))
            if expected is None or expected not in by_occurrence:
                self.unexpected += 1
                continue
            by_occurrence[expected].append(props)
        for due, occurrence_entries in by_occurrence.items():
            self.add_occurrence(due, occurrence_entries)

    def add_occurrence(self, due: datetime, entries: Sequence[Mapping[str, Any]]) -> None:
        """Count the occurrence due at ``due`` from its entries' ``properties``: a miss without entries, else
        ran; each entry of an attempt (``retryCount``) beyond its first a duplicate; failed without a
        ``Completed`` entry; its latenesses those of its earliest-started entry (when one has a ``startTime``)."""
        if not entries:
            self.misses += 1
            return
        self.ran += 1
        attempts: dict[Any, int] = {}
        for props in entries:
            attempts[props.get("retryCount", 0)] = attempts.get(props.get("retryCount", 0), 0) + 1
        self.duplicates += sum(count - 1 for count in attempts.values())
        if not any(props.get("status") == "Completed" for props in entries):
            self.failed += 1
        timed = [(start, props) for props in entries if (start := _instant(props.get("startTime"))) is not None]
        if not timed:
            return
        first_start, first = min(timed, key=lambda pair: pair[0])
        self.starts.append((first_start - due).total_seconds())
        end = _instant(first.get("endTime"))
        if end is not None:
            self.ends.append((end - due).total_seconds())


def as_scheduled(planned: tuple[datetime, ...], created: Any) -> tuple[datetime, ...]:
    """The occurrences to measure of a job whose creation answered ``created`` (its ARM JSON): those planned,
    unless the job has one and was created after it was due. The service then runs it at once, and its history
    names the instant it was scheduled for (``nextExecutionTime``, its creation), so that instant is measured:
    the run is neither a miss nor unexpected. The late creation itself is reported (``lead`` below 0)."""
    if len(planned) != 1 or not isinstance(created, Mapping):
        return planned
    status = (created.get("properties") or {}).get("status") or {}
    scheduled = _instant(status.get("nextExecutionTime")) if isinstance(status, Mapping) else None
    return (scheduled,) if scheduled is not None and scheduled > planned[0] else planned


def _problems(result: ScenarioResult) -> list[str]:
    """Why ``result`` did not meet its bound, one sentence each; empty when it did."""
    problems: list[str] = []
    if result.lead is not None and result.lead < 0:
        problems.append(
            f"a job was created {-result.lead:.1f} s after its due second (creating the jobs took longer than "
            "planned: raise --lead)"
        )
    if result.start.max is not None and result.start.max > result.bound:
        problems.append(
            f"start lateness max {_exact(result.start.max)} s is above the bound {result.bound:g} s "
            f"({result.bound_option})"
        )
    for count, what in (
        (result.misses, "occurrence(s) with no history entry within the deadline (misses)"),
        (result.duplicates, "duplicate execution(s)"),
        (result.failed, "occurrence(s) whose call failed"),
        (result.unexpected, "history entry(ies) of an instant that is no occurrence"),
    ):
        if count:
            problems.append(f"{count} {what}")
    return problems


def measure(
    scenario: str,
    jobs: Sequence[PlannedJob],
    histories: Mapping[str, Sequence[Mapping[str, Any]]],
    bound: float,
    bound_option: str,
) -> ScenarioResult:
    """Measure one scenario from its jobs' history entries (``histories``: job name to the entries the API
    listed, ARM JSON). Only the main action's entries count (an error action is none of a verify job's).

    Each entry belongs to the occurrence whose instant is its ``expectedExecutionTime``; an occurrence's
    lateness is that of its earliest entry (start: ``startTime`` − expected; completion: ``endTime`` −
    expected). An attempt (occurrence and ``retryCount``) listed more than once counts each entry beyond
    the first as a duplicate; an occurrence without entries is a miss; one without a ``Completed`` entry
    (and not missed) failed; an entry of any other instant is unexpected. The bound is met when none of
    these happened, no job was created after its first due second, and the maximum start lateness is at
    most ``bound``."""
    tally = _Tally()
    for job in jobs:
        tally.add_job(job, histories.get(job.name, ()))
    result = ScenarioResult(
        name=scenario,
        jobs=len(jobs),
        occurrences=sum(len(job.occurrences) for job in jobs),
        ran=tally.ran,
        failed=tally.failed,
        duplicates=tally.duplicates,
        misses=tally.misses,
        unexpected=tally.unexpected,
        start=Lateness.of(tally.starts),
        done=Lateness.of(tally.ends),
        bound=bound,
        bound_option=bound_option,
        lead=min((job.ahead_seconds for job in jobs), default=None),
    )
    result.problems.extend(_problems(result))
    return result


# ------------------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class Options:
    """The scenarios and bounds of one run (validated command-line values)."""

    one_shot: int
    idle: int
    burst: int
    recurring: int
    lead: float
    deadline: float
    max_late: float
    max_late_idle: float
    max_late_burst: float
    location: str

    def job_count(self) -> int:
        return self.one_shot + (1 if self.idle else 0) + self.burst + (1 if self.recurring else 0)


def _now() -> datetime:
    return datetime.now(UTC)


def _next_second(instant: datetime) -> datetime:
    """The first whole second at or after ``instant``."""
    whole = instant.replace(microsecond=0)
    return whole if whole == instant else whole + timedelta(seconds=1)


def _progress(text: str) -> None:
    write_line(text, sys.stderr)
    sys.stderr.flush()


def _sleep_until(instant: datetime) -> None:
    while (left := (instant - _now()).total_seconds()) > 0:
        time.sleep(min(left, 1.0))


def _parallel(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``function`` over ``items`` on :data:`WORKERS` threads, results in order; the first error is raised."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(function, items))


class Verification:
    """One run: the collection it made, the jobs it created, their histories."""

    def __init__(self, client: SchedulerClient, group: str, collection: str, target: str, options: Options) -> None:
        self.client = client
        self.group = group
        self.collection = collection
        self.target = target
        self.options = options
        self.created = False
        self.jobs: list[PlannedJob] = []
        self.create_seconds: list[float] = []

    # ---------------------------------------------------------------------------------- the collection

    def create_collection(self) -> None:
        if self.client.find_collection(self.group, self.collection) is not None:
            raise CliError(f"job collection {self.collection} already exists in {self.group}: run verify again")
        self.created = True  # from here on, removed in every case (a create whose answer was lost too)
        began = time.monotonic()
        body = {"location": self.options.location, "properties": {"sku": {"name": PLAN}}}
        try:
            self.client.put_collection(self.group, self.collection, body)
        except ApiError as exc:
            if exc.status < 500:  # refused (a 4xx): nothing was made
                self.created = False
            raise
        self.create_seconds.append(time.monotonic() - began)
        _progress(f"created job collection {self.collection} in resource group {self.group} (plan {PLAN})")

    def remove(self) -> int:
        """Delete the collection with its jobs and history; on failure say what to delete by hand and return
        the failure's exit status (0 when removed or never created)."""
        if not self.created:
            return EXIT_OK
        try:
            self.client.delete_collection(self.group, self.collection)
        except ApiError as exc:
            if exc.status == 404:
                return EXIT_OK
            return self._left_behind(str(exc), exc.code)
        except (CliError, KeyboardInterrupt) as exc:
            code = exc.code if isinstance(exc, CliError) else 130
            return self._left_behind(str(exc) or "interrupted", code)
        _progress(f"deleted job collection {self.collection} with its jobs and their history")
        return EXIT_OK

    def _left_behind(self, reason: str, code: int) -> int:
        write_error(
            f"could not delete job collection {self.collection} (resource group {self.group}): {reason}. "
            f"Delete it by hand: python -m scheduler_core collections delete {self.collection} "
            f"-g {self.group} --yes"
        )
        return code or 1

    # ------------------------------------------------------------------------------------------ jobs

    def _body(self, due: datetime, recurring: int = 0) -> dict[str, Any]:
        properties: dict[str, Any] = {
            "state": "Enabled",
            "startTime": format_instant(due),
            "action": {
                "type": "Http",
                "request": {"method": "GET", "uri": self.target},
                "retryPolicy": {"retryType": "None"},
            },
        }
        if recurring:
            properties["recurrence"] = {"frequency": "Minute", "interval": 1, "count": recurring}
        return {"properties": properties}

    def _create(self, name: str, scenario: str, occurrences: tuple[datetime, ...], recurring: int = 0) -> PlannedJob:
        began = time.monotonic()
        answer = self.client.put_job(self.group, self.collection, name, self._body(occurrences[0], recurring))
        self.create_seconds.append(time.monotonic() - began)
        ahead = (occurrences[0] - _now()).total_seconds()  # below 0: created late, reported as such
        job = PlannedJob(name, scenario, as_scheduled(occurrences, answer.body), ahead)
        self.jobs.append(job)
        return job

    def _create_seconds(self) -> float:
        """The time one create is expected to take: the median of those measured so far (1 s before any)."""
        return statistics.median(self.create_seconds) if self.create_seconds else 1.0

    def _first_due(self, creates: int, threads: int = 1) -> datetime:
        """The first due second of jobs about to be created: ``--lead`` seconds after their creation is
        expected to end (``creates`` requests on ``threads`` threads, each taking twice the median create so
        far)."""
        rounds = math.ceil(creates / threads)
        return _next_second(_now() + timedelta(seconds=self.options.lead + 2 * rounds * self._create_seconds()))

    def one_shot(self) -> list[PlannedJob]:
        count = self.options.one_shot
        first = self._first_due(count)
        _progress(f"{ONE_SHOT}: {count} job(s) due one second apart from {format_instant(first)}")
        return [self._create(f"one-shot-{i + 1}", ONE_SHOT, (first + timedelta(seconds=i),)) for i in range(count)]

    def idle(self) -> list[PlannedJob]:
        due = _next_second(_now() + timedelta(seconds=self.options.idle))
        job = self._create("idle", IDLE, (due,))
        _progress(
            f"{IDLE}: 1 job due at {format_instant(due)}; sending nothing to the service for "
            f"{(due - _now()).total_seconds():.0f} s"
        )
        return [job]

    def burst(self) -> list[PlannedJob]:
        count = self.options.burst
        due = self._first_due(count, WORKERS)
        _progress(f"{BURST}: {count} job(s) due at {format_instant(due)}, created on {WORKERS} threads")
        names = [f"burst-{i + 1:04d}" for i in range(count)]
        return _parallel(lambda name: self._create(name, BURST, (due,)), names)

    def recurring(self) -> list[PlannedJob]:
        count = self.options.recurring
        first = self._first_due(1)
        occurrences = tuple(first + timedelta(minutes=i) for i in range(count))
        _progress(f"{RECURRING}: 1 job every minute, {count} time(s), from {format_instant(first)}")
        return [self._create("recurring", RECURRING, occurrences, count)]

    # ------------------------------------------------------------------------------------- histories

    def _history(self, job: PlannedJob) -> list[dict[str, Any]]:
        return self.client.history(self.group, self.collection, job.name, top=100)

    def wait_for(self, jobs: Sequence[PlannedJob]) -> None:
        """After the last due second of ``jobs``, read the history of each job still lacking an entry for one
        of its occurrences, once a second, until none lacks one or ``--deadline`` seconds have passed. A
        reading that fails is tried again the next second (the last failure is raised at the deadline)."""
        if not jobs:
            return
        last_due = max(due for job in jobs for due in job.occurrences)
        _sleep_until(last_due + timedelta(seconds=FIRST_READ_AFTER))
        deadline = last_due + timedelta(seconds=self.options.deadline)
        waiting = list(jobs)
        while True:
            error: CliError | None = None
            try:
                histories = _parallel(self._history, waiting)
            except (ApiError, Unreachable) as exc:
                error = exc
            else:
                waiting = [job for job, rows in zip(waiting, histories, strict=True) if not _settled(job, rows)]
            if not waiting:
                return
            if _now() >= deadline:
                if error is not None:
                    raise error
                _progress(f"{waiting[0].scenario}: {len(waiting)} job(s) without all their history at the deadline")
                return
            time.sleep(POLL_SECONDS)

    def histories(self) -> dict[str, list[dict[str, Any]]]:
        rows = _parallel(self._history, self.jobs)
        return {job.name: list(entries) for job, entries in zip(self.jobs, rows, strict=True)}

    def run(self) -> list[ScenarioResult]:
        """Create the collection, run each scenario in turn, and measure them all from a last reading."""
        o = self.options
        self.create_collection()
        plan: list[tuple[str, Callable[[], list[PlannedJob]], float, str]] = []
        if o.one_shot:
            plan.append((ONE_SHOT, self.one_shot, o.max_late, "--max-late"))
        if o.idle:
            plan.append((IDLE, self.idle, o.max_late_idle, "--max-late-idle"))
        if o.burst:
            plan.append((BURST, self.burst, o.max_late_burst, "--max-late-burst"))
        if o.recurring:
            plan.append((RECURRING, self.recurring, o.max_late, "--max-late"))
        scenarios: list[tuple[str, list[PlannedJob], float, str]] = []
        for name, create, bound, option in plan:
            jobs = create()
            self.wait_for(jobs)
            scenarios.append((name, jobs, bound, option))
        histories = self.histories()
        return [measure(name, jobs, histories, bound, option) for name, jobs, bound, option in scenarios]


def _settled(job: PlannedJob, rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every occurrence of ``job`` has a history entry."""
    seen = set()
    for row in rows:
        props = row.get("properties") or {}
        if isinstance(props, Mapping):
            seen.add(_instant(props.get("expectedExecutionTime")))
    return all(due in seen for due in job.occurrences)


# ------------------------------------------------------------------------------------------ the command

HEADERS = (
    "scenario",
    "jobs",
    "occurrences",
    "ran",
    "start late s p50 / p99 / max",
    "done late s p50 / p99 / max",
    "duplicates",
    "misses",
    "failed",
    "bound s",
    "result",
)


def _row(result: ScenarioResult) -> list[Any]:
    return [
        result.name,
        result.jobs,
        result.occurrences,
        result.ran,
        result.start.cell(),
        result.done.cell(),
        result.duplicates,
        result.misses,
        result.failed,
        f"{result.bound:g}",
        "met" if result.passed else "NOT MET",
    ]


def _report(args: argparse.Namespace, run: Verification, results: Sequence[ScenarioResult], removed: bool) -> None:
    if args.output == JSON:
        write_json(
            {
                "collection": run.collection,
                "resourceGroup": run.group,
                "target": run.target,
                "scenarios": [result.json() for result in results],
                "passed": all(result.passed for result in results),
                "removed": removed,
            }
        )
        return
    write_table(HEADERS, [_row(result) for result in results])
    for result in results:
        for problem in result.problems:
            write_line(f"{result.name}: {problem}")


def _options(args: argparse.Namespace) -> Options:
    options = Options(
        one_shot=args.one_shot,
        idle=args.idle,
        burst=args.burst,
        recurring=args.recurring,
        lead=args.lead,
        deadline=args.deadline,
        max_late=args.max_late,
        max_late_idle=args.max_late_idle,
        max_late_burst=args.max_late_burst,
        location=args.location,
    )
    if options.job_count() == 0:
        raise CliError("every scenario is switched off: give --one-shot, --idle, --burst or --recurring a count")
    if options.job_count() > MAX_JOBS:
        raise CliError(f"{options.job_count()} jobs in all: a {PLAN} collection holds at most {MAX_JOBS}")
    return options


def _target(args: argparse.Namespace, endpoint: str) -> str:
    target = str(args.target or f"{endpoint}/health")
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(f"--target must be an http(s) URL, not {target!r}", EXIT_INVALID)
    return target


def verify_command(args: argparse.Namespace) -> int:
    """Run the scenarios against the deployment, print what they measured, delete what was made (see the
    module's docstring); 0 when every scenario met its bound, :data:`EXIT_NOT_MET` when one did not."""
    options = _options(args)
    client = SchedulerClient(connection(args))
    client.conn.require_subscription()
    group = client.conn.resource_group or DEFAULT_GROUP
    run = Verification(client, group, f"verify-{secrets.token_hex(4)}", _target(args, client.endpoint), options)
    _progress(f"verify: jobs call {run.target}")
    try:
        results = run.run()
    finally:
        removal = run.remove()
    _report(args, run, results, removal == EXIT_OK)
    if removal != EXIT_OK:
        return removal
    failing = [result for result in results if not result.passed]
    if failing:
        names = ", ".join(result.name for result in failing)
        write_error(f"{len(failing)} of {len(results)} scenario(s) did not meet their bounds: {names}")
        return EXIT_NOT_MET
    _progress(f"all {len(results)} scenario(s) met their bounds")
    return EXIT_OK


# --------------------------------------------------------------------------------------- arguments


def _count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, not {value}")
        return value

    return parse


def _seconds(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None
        if not low <= value <= high:  # also refuses nan
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g} seconds, not {text}")
        return value

    return parse


def _idle(text: str) -> int:
    value = _count(0, 86400)(text)
    if value == 1:
        raise argparse.ArgumentTypeError("must be 0 (skip the scenario) or at least 2 seconds")
    return value


def _add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """The size of each scenario (``--one-shot``, ``--idle``, ``--burst``, ``--recurring``; 0 skips it)."""
    p.add_argument(
        "--one-shot",
        type=_count(0, MAX_JOBS),
        default=DEFAULT_ONE_SHOT,
        metavar="N",
        help=f"one-shot scenario: N jobs due one second apart (default {DEFAULT_ONE_SHOT}; 0 skips it)",
    )
    p.add_argument(
        "--idle",
        type=_idle,
        default=DEFAULT_IDLE,
        metavar="SECONDS",
        help=f"idle scenario: one job due SECONDS after its creation, nothing sent meanwhile (default "
        f"{DEFAULT_IDLE}; 0 skips it)",
    )
    p.add_argument(
        "--burst",
        type=_count(0, MAX_JOBS),
        default=DEFAULT_BURST,
        metavar="N",
        help=f"burst scenario: N jobs due at the same second (default {DEFAULT_BURST}; 0 skips it)",
    )
    p.add_argument(
        "--recurring",
        type=_count(0, MAX_RECURRING),
        default=DEFAULT_RECURRING,
        metavar="N",
        help=f"recurring scenario: one job every minute, N times (default {DEFAULT_RECURRING}: skipped)",
    )


def _add_timing_arguments(p: argparse.ArgumentParser) -> None:
    """When the jobs are created (``--lead``) and how long their history is waited for (``--deadline``)."""
    p.add_argument(
        "--lead",
        type=_seconds(1, 600),
        default=DEFAULT_LEAD,
        metavar="SECONDS",
        help=f"how long before their due second the jobs are created, at least (default {DEFAULT_LEAD:g})",
    )
    p.add_argument(
        "--deadline",
        type=_seconds(5, 3600),
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help=f"an occurrence without history this long after its due second is a miss (default {DEFAULT_DEADLINE:g})",
    )


def _add_bound_arguments(p: argparse.ArgumentParser) -> None:
    """Each scenario's bound: its largest start lateness (``--max-late``, ``--max-late-idle``,
    ``--max-late-burst``)."""
    p.add_argument(
        "--max-late",
        type=_seconds(0, 3600),
        default=DEFAULT_MAX_LATE,
        metavar="SECONDS",
        help=f"bound of the one-shot and recurring scenarios: largest start lateness (default {DEFAULT_MAX_LATE:g})",
    )
    p.add_argument(
        "--max-late-idle",
        type=_seconds(0, 3600),
        default=DEFAULT_MAX_LATE_IDLE,
        metavar="SECONDS",
        help=f"bound of the idle scenario (default {DEFAULT_MAX_LATE_IDLE:g})",
    )
    p.add_argument(
        "--max-late-burst",
        type=_seconds(0, 3600),
        default=DEFAULT_MAX_LATE_BURST,
        metavar="SECONDS",
        help=f"bound of the burst scenario (default {DEFAULT_MAX_LATE_BURST:g})",
    )


def add_verify_command(commands: Any) -> None:
    """``verify`` with its options (scenarios, timing, bounds, target, location, connection, output)."""
    p: argparse.ArgumentParser = commands.add_parser(
        "verify",
        help="measure a deployment's firing promises with throwaway jobs calling its own /health",
        description="Create a throwaway job collection (verify-<random>), fire jobs whose action is a GET of "
        "the deployment's own /health, measure lateness, duplicates and misses from their history, and delete "
        "everything it made. Exit 0 when every scenario met its bound. See docs/verify.md.",
    )
    _add_scenario_arguments(p)
    _add_timing_arguments(p)
    _add_bound_arguments(p)
    p.add_argument("--target", metavar="URL", help="the URL the jobs GET (default: the endpoint + /health; anonymous)")
    p.add_argument(
        "--location",
        metavar="REGION",
        default=DEFAULT_LOCATION,
        help=f"location written on the throwaway collection (default {DEFAULT_LOCATION})",
    )
    add_connection_options(p)
    add_output_option(p)
    p.set_defaults(handler=verify_command)
