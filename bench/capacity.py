"""The capacity model: how many fires per second and jobs one deployment on Azure can take, how late a burst
runs, and what a million fires cost, from measured operation counts and Azure's documented limits.

    .venv/bin/python -m bench.capacity [--ops-per-fire 4] [--queues 6] [--shards 16] [--accounts 1] ...

Every input is a parameter (:class:`FireCost`, :class:`Limits`, :class:`Deployment`, :class:`Compute`,
:class:`Prices`); the defaults are the measured numbers and the documented limits and list prices written
in docs/capacity.md, which explains each. The functions are plain arithmetic (tests/unit/test_capacity_model.py
checks them on fixed inputs); ``main`` prints the tables of docs/capacity.md.
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from scheduler_core.settings import Settings

SECONDS_PER_MONTH = 30.4375 * 86400  # an average month (365.25 / 12 days)
FUNCTION_TIMEOUT_S = 600.0  # host.json functionTimeout (00:10:00)


@dataclass(frozen=True)
class FireCost:
    """What one fired occurrence costs in storage requests, and where they land."""

    label: str
    #: Every table request per fire (reads, queries, inserts, merges, updates, deletes, batches): billed and
    #: counted against the account's request rate.
    table_requests: float
    #: Requests on the execution queues per fire (put, get, delete, update). A get takes up to 32 messages,
    #: so under load it is a fraction of a request per fire.
    queue_requests: float
    #: Other queue requests per fire (the scan queue: a few per shard per minute).
    other_queue_requests: float
    #: Entities read or written in the job's due-index shard (one table partition) per fire: the scan's read
    #: of the row, the move to the next occurrence (delete + insert), the watch row (insert, read, delete).
    due_entities: float
    #: Entities read or written in the job's collection partition of the Jobs table per fire.
    job_entities: float
    #: Table and queue requests per job created through the API.
    create_requests: float
    #: The table requests per fire on the history tables (``Executions``, the claims, and ``JobHistory``),
    #: which a split deployment keeps in an account of their own (``SchedulerHistoryStorage``). None: not
    #: known, so this cost cannot be split by account.
    history_requests: float | None = None

    @property
    def requests(self) -> float:
        """Every storage request per fire."""
        return self.table_requests + self.queue_requests + self.other_queue_requests

    def account_requests(self, split: bool) -> dict[str, float]:
        """Requests per fire on each storage account: ``{"main": all}`` on one account; split by role
        (:data:`ROLES`), the execution queues in the execution account, the history tables in the history
        account and the rest (Jobs, JobCollections, DueIndex, the scan and cleanup queues) in the main one."""
        if not split:
            return {"main": self.requests}
        if self.history_requests is None:
            raise ValueError(f"{self.label}: requests per fire on the history tables not known")
        return {
            "main": self.table_requests - self.history_requests + self.other_queue_requests,
            "history": self.history_requests,
            "execution": self.queue_requests,
        }


@dataclass(frozen=True)
class Limits:
    """Documented Azure limits (Standard general-purpose v2 storage; Functions Flex Consumption)."""

    account_requests_per_s: float = 20_000  # one storage account (scalability target)
    partition_entities_per_s: float = 2_000  # one table partition
    queue_messages_per_s: float = 2_000  # one queue (1 KiB messages)
    #: True: every request on a queue (put, get, delete) counts against its 2,000/s (conservative); False:
    #: only the messages put (the target's wording: messages per second).
    queue_limit_counts_requests: bool = True
    max_instances: int = 1_000  # Flex Consumption: maximumInstanceCount's largest value
    instance_memory_gb: float = 2.0  # Flex Consumption instance memory (2,048 MB, the default)
    instance_vcpus: float = 1.0  # CPU of a 2,048 MB instance (assumed: proportional to memory)
    worker_processes: int = 1  # FUNCTIONS_WORKER_PROCESS_COUNT: Python runs on one core per process
    per_instance_concurrency: int = 40  # host.json batchSize 16 + newBatchThreshold 24 = threads (40)


@dataclass(frozen=True)
class Deployment:
    """The knobs of one deployment."""

    execution_queues: int = 1  # SCHEDULER_EXECUTION_QUEUE_COUNT (K)
    due_shards: int = 16  # SCHEDULER_DUE_SHARDS (per storage account)
    storage_accounts: int = 1  # collections sharded across accounts (docs/capacity.md: not built yet)
    #: Execution messages one shard's scan has in flight at once: 1 when a scan sends one message after the
    #: other; more when it fans out (further scan messages by row-key range, concurrent sends).
    scan_concurrency: int = 1
    #: The storage split by role over three accounts (built: ``SchedulerHistoryStorage`` holds the history
    #: tables, ``SchedulerExecutionStorage`` the execution queues, AzureWebJobsStorage the rest; Bicep
    #: ``splitStorage``). False: everything in one account (per collection shard of ``storage_accounts``).
    split_storage: bool = False


#: The storage accounts of a split deployment, by role (:meth:`FireCost.account_requests`).
ROLES: tuple[str, ...] = ("main", "history", "execution")
#: The name of the ceiling the storage accounts' request rates set (:func:`ceilings`).
ACCOUNT_CEILING = "storage account requests"


@dataclass(frozen=True)
class Compute:
    """What a fire costs an instance: CPU (measured on the local host) and wall time (assumed for Azure)."""

    cpu_ms_per_fire: float
    wall_ms_per_fire: float = 150.0  # ~8 sequential storage calls of ~10 ms in-region + a 50 ms HTTP target
    queue_put_ms: float = 8.0  # one queue send in-region (a scan's step per fire)
    storage_call_ms: float = 10.0  # one table query or delete in-region (the cleanup's step per job)


@dataclass(frozen=True)
class Scaling:
    """How fast Flex Consumption adds instances to one queue function (assumed; Microsoft gives no rate)."""

    initial_instances_per_function: float = 1.0
    instances_added_per_second_per_function: float = 1.0
    #: Seconds between the dispatch tick and the due second of a burst (tick at :45, occurrences at :00).
    dispatch_lead_s: float = 15.0
    #: Execution messages the scans send per second (all shards together); infinity: never the bottleneck.
    dispatch_sends_per_s: float = math.inf


@dataclass(frozen=True)
class Prices:
    """List prices in USD (parameters: check the pricing pages for your region and redundancy)."""

    table_per_10k_requests: float = 0.00036  # Table Storage transactions
    queue_per_10k_requests: float = 0.004  # Queue Storage (GPv2, LRS) class 1 and class 2 operations
    functions_per_gb_s: float = 0.000026  # Flex Consumption on demand, execution time
    functions_per_million_executions: float = 0.40  # Flex Consumption on demand, executions
    executions_per_fire: float = 1.0  # one execute_occurrence invocation (scans and ticks amortise to ~0)


# ------------------------------------------------------------------------------------------------ ceilings


def account_ceilings(cost: FireCost, limits: Limits, deployment: Deployment) -> dict[str, float]:
    """Fires per second each storage account's request rate allows, by role (``{"main": ...}`` on one
    account): the account's 20,000 requests/s over its requests per fire (times the collection shards of
    ``storage_accounts``, not built)."""
    per_fire = cost.account_requests(deployment.split_storage)
    return {
        role: deployment.storage_accounts * limits.account_requests_per_s / requests
        for role, requests in per_fire.items()
    }


def ceilings(cost: FireCost, limits: Limits, deployment: Deployment, compute: Compute) -> dict[str, float]:
    """Fires per second that each limit allows the deployment (each on its own). The storage accounts'
    ceiling is the least of the accounts' (:func:`account_ceilings`)."""
    queue_per_fire = cost.queue_requests if limits.queue_limit_counts_requests else 1.0
    per_instance = per_instance_fires_per_s(limits, compute)
    return {
        "dispatch (scans)": (
            deployment.storage_accounts
            * deployment.due_shards
            * deployment.scan_concurrency
            * 1000.0
            / compute.queue_put_ms
        ),
        ACCOUNT_CEILING: min(account_ceilings(cost, limits, deployment).values()),
        "execution queues": deployment.execution_queues * limits.queue_messages_per_s / queue_per_fire,
        "due-index shards (partitions)": (
            deployment.storage_accounts * deployment.due_shards * limits.partition_entities_per_s / cost.due_entities
        ),
        "function instances": limits.max_instances * per_instance,
    }


def per_instance_fires_per_s(limits: Limits, compute: Compute) -> float:
    """Fires per second one instance runs: its CPU (one core per Python worker process) or its concurrency
    over the wall time of a fire, whichever is less."""
    cores = min(limits.instance_vcpus, limits.worker_processes)
    cpu_bound = cores * 1000.0 / compute.cpu_ms_per_fire
    wall_bound = limits.per_instance_concurrency * 1000.0 / compute.wall_ms_per_fire
    return min(cpu_bound, wall_bound)


def max_fires_per_second(cost: FireCost, limits: Limits, deployment: Deployment, compute: Compute) -> tuple[float, str]:
    """The deployment's ceiling and the limit that sets it (what breaks first); on a split deployment the
    accounts' ceiling is named with the account that sets it (``storage account requests (main)``)."""
    found = ceilings(cost, limits, deployment, compute)
    name = min(found, key=lambda key: found[key])
    if name == ACCOUNT_CEILING and deployment.split_storage:
        accounts = account_ceilings(cost, limits, deployment)
        return found[name], f"{name} ({min(accounts, key=lambda role: accounts[role])})"
    return found[name], name


def per_collection_fires_per_s(cost: FireCost, limits: Limits) -> float:
    """The most fires per second of one collection's jobs (its Jobs partition)."""
    return limits.partition_entities_per_s / cost.job_entities


def queues_needed(target_fires_per_s: float, cost: FireCost, limits: Limits) -> int:
    """The fewest execution queues that carry ``target_fires_per_s``."""
    queue_per_fire = cost.queue_requests if limits.queue_limit_counts_requests else 1.0
    return max(1, math.ceil(target_fires_per_s * queue_per_fire / limits.queue_messages_per_s))


def accounts_needed(target_fires_per_s: float, cost: FireCost, limits: Limits) -> int:
    """The fewest storage accounts whose request rate carries ``target_fires_per_s``."""
    return max(1, math.ceil(target_fires_per_s * cost.requests / limits.account_requests_per_s))


# ------------------------------------------------------------------------------------------------ jobs


def jobs_per_deployment(fires_per_s: float, mean_period_s: float, utilisation: float) -> float:
    """Jobs that fire every ``mean_period_s`` on average, spread over the period, that the deployment runs
    at ``utilisation`` of its ceiling."""
    return fires_per_s * mean_period_s * utilisation


def cleanup_pass_seconds(jobs: float, compute: Compute, requests_per_job: float = 2.0, workers: int = 1) -> float:
    """Seconds of one daily cleanup pass over ``jobs`` jobs: per job a claims query and a history query (and
    deletes when there is something to trim), one call after the other on ``workers`` workers (1 today:
    one timer invocation walks every job)."""
    return jobs * requests_per_job * compute.storage_call_ms / 1000.0 / workers


@dataclass(frozen=True)
class CleanupCost:
    """What the daily cleanup costs per job (``--cleanup``: measured on Azurite), and how it runs in Azure."""

    #: Storage requests per job and day: a claims query, the claim rows and history queries of the trim, and
    #: a batch when there is history to delete (measured), plus the day's claims moved and deleted
    #: (``claim_batches``: the count seeds no claims).
    requests_per_job: float = 4.62
    claim_batches: float = 2.0
    #: The window the collections' messages are spread over (scheduler_core/pipeline/cleanup.py SPREAD).
    window_s: float = 20 * 3600.0
    #: Of ``requests_per_job``, those on the history tables (measured: Executions queries 2.00, JobHistory
    #: queries 1.00 and batches 0.80), which a split deployment keeps in the history account, as it does the
    #: ``claim_batches``; the rest (measured 0.82: a removed job's guarded delete, due row and counter, the
    #: collection pages, the cleanup queue) stays in the main account.
    history_requests_per_job: float = 3.80

    @property
    def requests(self) -> float:
        return self.requests_per_job + self.claim_batches

    def account_requests(self, split: bool) -> dict[str, float]:
        """Requests per job and day on each storage account (``{"main": all}`` on one account)."""
        if not split:
            return {"main": self.requests}
        history = self.history_requests_per_job + self.claim_batches
        return {"main": self.requests - history, "history": history, "execution": 0.0}


def cleanup_account_load(jobs: float, cost: CleanupCost) -> float:
    """Requests per second the cleanup adds to the storage account while it runs: its requests spread over
    the window (each collection's message is visible at its own second of it)."""
    return jobs * cost.requests / cost.window_s


def cleanup_messages_in_flight(jobs: float, cost: CleanupCost, compute: Compute) -> float:
    """Collection messages running at once on average to finish in the window, one storage call after the
    other each (``compute.storage_call_ms``): the cleanup queue function's concurrency across instances."""
    return jobs * cost.requests * compute.storage_call_ms / 1000.0 / cost.window_s


def fires_left_during_cleanup(
    jobs: float, cleanup: CleanupCost, fire: FireCost, limits: Limits, accounts: int = 1, split: bool = False
) -> float:
    """The accounts' ceiling on fires while the cleanup runs (its load taken off each account's requests; the
    least over the accounts of a split deployment)."""
    loads = cleanup.account_requests(split)
    return min(
        max(0.0, accounts * limits.account_requests_per_s - jobs * loads[role] / cleanup.window_s) / requests
        for role, requests in fire.account_requests(split).items()
        if requests > 0
    )


def jobs_with_cleanup(
    cost: FireCost,
    cleanup: CleanupCost,
    limits: Limits,
    deployment: Deployment,
    compute: Compute,
    period_s: float,
    utilisation: float,
) -> tuple[float, str]:
    """The most jobs firing every ``period_s`` that the deployment runs at ``utilisation`` of its ceilings,
    with the daily cleanup of the same jobs on the accounts, and the limit that sets it: J jobs make J / period
    fires/s and, while the cleanup runs, J x its requests per job / its window requests/s, so each account
    (each of a split deployment, named ``storage account requests (<role>)``) holds utilisation x its
    requests/s / (requests per fire / period + cleanup requests per job / window) jobs; the other ceilings
    hold utilisation x ceiling x period."""
    found = {
        name: utilisation * period_s * value for name, value in ceilings(cost, limits, deployment, compute).items()
    }
    del found[ACCOUNT_CEILING]
    loads = cleanup.account_requests(deployment.split_storage)
    for role, requests in cost.account_requests(deployment.split_storage).items():
        per_job = requests / period_s + loads[role] / cleanup.window_s
        name = f"{ACCOUNT_CEILING} ({role})" if deployment.split_storage else ACCOUNT_CEILING
        found[name] = utilisation * deployment.storage_accounts * limits.account_requests_per_s / per_job
    name = min(found, key=lambda key: found[key])
    return found[name], name


def create_rate(cost: FireCost, limits: Limits, deployment: Deployment) -> float:
    """Jobs created per second (an import), if creating were all the account did."""
    return deployment.storage_accounts * limits.account_requests_per_s / cost.create_requests


# ------------------------------------------------------------------------------------------------ a burst


@dataclass(frozen=True)
class Lateness:
    p50: float
    p99: float
    max: float


def burst_lateness(
    burst: int,
    ceiling_fires_per_s: float,
    per_instance: float,
    limits: Limits,
    deployment: Deployment,
    scaling: Scaling,
    step: float = 0.05,
) -> Lateness:
    """Seconds after their due second at which the median, 99th percentile and last of ``burst`` fires due
    at the same second run. Dispatch sends at ``scaling.dispatch_sends_per_s`` from ``dispatch_lead_s``
    before the due second (a fire cannot run before its message is sent); executions drain at the ceiling
    or at what the instances added so far run (each of the K queue functions scales on its own), whichever
    is less."""
    if burst <= 0:
        return Lateness(0.0, 0.0, 0.0)
    marks = {"p50": math.ceil(0.5 * burst), "p99": math.ceil(0.99 * burst), "max": burst}
    found: dict[str, float] = {}
    drained = 0.0
    t = -scaling.dispatch_lead_s  # time from the due second; scaling starts when messages are visible (t=0)
    while len(found) < len(marks):
        t += step
        sent = min(float(burst), scaling.dispatch_sends_per_s * (t + scaling.dispatch_lead_s))
        if t > 0:
            per_function = scaling.initial_instances_per_function + scaling.instances_added_per_second_per_function * t
            instances = min(float(limits.max_instances), deployment.execution_queues * per_function)
            rate = min(ceiling_fires_per_s, instances * per_instance)
            drained = min(sent, drained + rate * step)
        for name, count in marks.items():
            if name not in found and drained >= count - 1e-9:
                found[name] = max(t, 0.0)
    return Lateness(found["p50"], found["p99"], found["max"])


# ------------------------------------------------------------------------------------------------ cost


def cost_per_million_fires(cost: FireCost, prices: Prices, limits: Limits, compute: Compute) -> dict[str, float]:
    """USD per million fires by part. Flex Consumption bills an instance's memory while it executes, shared
    by the executions running on it at once: a busy instance bills memory / (its fires per second) GB-s
    per fire."""
    million = 1_000_000
    gb_s_per_fire = limits.instance_memory_gb / per_instance_fires_per_s(limits, compute)
    return {
        "table requests": million * cost.table_requests * prices.table_per_10k_requests / 10_000,
        "queue requests": (
            million * (cost.queue_requests + cost.other_queue_requests) * prices.queue_per_10k_requests / 10_000
        ),
        "function executions": prices.executions_per_fire * prices.functions_per_million_executions,
        "function execution time": million * gb_s_per_fire * prices.functions_per_gb_s,
    }


def storage_cost_by_account(cost: FireCost, prices: Prices, split: bool) -> dict[str, float]:
    """USD per million fires of the storage requests, by account (``{"main": all}`` on one account): the
    same requests at the same prices wherever they land, so a split deployment pays what one account does
    (the two extra accounts cost nothing while idle; their capacity, a few GB of history, is not counted)."""
    million = 1_000_000
    table, queue = prices.table_per_10k_requests / 10_000, prices.queue_per_10k_requests / 10_000
    if not split:
        return {
            "main": million * (cost.table_requests * table + (cost.queue_requests + cost.other_queue_requests) * queue)
        }
    requests = cost.account_requests(split)
    return {
        "main": million * ((requests["main"] - cost.other_queue_requests) * table + cost.other_queue_requests * queue),
        "history": million * requests["history"] * table,
        "execution": million * requests["execution"] * queue,
    }


@dataclass(frozen=True)
class PeerPrices:
    """The peers' list prices in USD."""

    eventbridge_per_million: float = 1.00  # EventBridge Scheduler, per million invocations
    cloud_scheduler_per_job_month: float = 0.10  # Google Cloud Scheduler, per job per month
    logic_apps_per_action: float = 0.000025  # Logic Apps Consumption, built-in trigger or action execution
    logic_apps_actions_per_fire: int = 2  # the recurrence trigger and one HTTP action


def peer_cost_per_million_fires(peers: PeerPrices, period_s: float) -> dict[str, float]:
    """USD per million fires of the peers, for jobs firing every ``period_s`` seconds (Cloud Scheduler
    bills per job, so its cost per fire depends on how often the job fires)."""
    fires_per_job_month = SECONDS_PER_MONTH / period_s
    return {
        "EventBridge Scheduler": peers.eventbridge_per_million,
        "Cloud Scheduler": peers.cloud_scheduler_per_job_month / fires_per_job_month * 1_000_000,
        "Logic Apps (Consumption) recurrence": peers.logic_apps_per_action * peers.logic_apps_actions_per_fire * 1e6,
    }


# ------------------------------------------------------------------------------------------------ inputs

#: Execution-queue requests per fire under load: one put, one delete, and a share of a get that returns
#: up to 16 messages (host.json batchSize). Retries and error actions add a put and a delete each.
QUEUE_REQUESTS_UNDER_LOAD = 1.0 + 1.0 + 1.0 / 16

#: Measured on main before issue 15 (the issue's count at Azurite, 50 every-minute jobs, steady state, idle
#: polling subtracted): 8.4 requests per fire. Of those, the execution queue's share under load
#: (:data:`QUEUE_REQUESTS_UNDER_LOAD`, plus 0.3 puts of watchdog re-sends and retries) and the rest table
#: requests (2 job reads, 2 merges, 1 update, 1 history insert, 0.6 queries, 0.3 batches per fire).
MEASURED_BEFORE = FireCost(
    label="main before issue 15 (8.4 requests/fire, measured)",
    table_requests=8.4 - 0.02 - (QUEUE_REQUESTS_UNDER_LOAD + 0.3),
    queue_requests=QUEUE_REQUESTS_UNDER_LOAD + 0.3,
    other_queue_requests=0.02,
    due_entities=6.0,
    job_entities=3.0,
    create_requests=5.0,
)
#: The issue's goal for steady state, 4 requests per fire (claim and history one entity, counters merged
#: without a read, the job reload avoided, index advances batched: helper B's work, counted by
#: bench/opcount.py): the execution queue's share and 1.92 table requests.
GOAL = FireCost(
    label="goal of issue 15 (4 requests/fire)",
    table_requests=4.0 - 0.02 - QUEUE_REQUESTS_UNDER_LOAD,
    queue_requests=QUEUE_REQUESTS_UNDER_LOAD,
    other_queue_requests=0.02,
    due_entities=6.0,
    job_entities=2.0,
    create_requests=4.0,
)


#: ``--count 300`` in this tree (2026-11-29): per one-shot fire, Jobs get 1.000, update 1.000, query 0.193,
#: DueIndex query 0.107, batch 0.107, JobCollections get 0.003, merge 0.003 (main account: 2.413);
#: Executions insert 1.000, merge 1.000 (history account: 2.000); execution queue put 1.000, get 0.037,
#: delete 1.000 (execution account: 2.037); 6.45 in all. Per create: insert 1.00, update 1.00, merge 0.06
#: (619 requests for 300 creates). The model's input when ``--count`` is not given (a new count replaces it).
COUNTED = FireCost(
    label="counted here (6.45 requests/fire)",
    table_requests=1324 / 300,
    queue_requests=611 / 300,
    other_queue_requests=0.0,
    due_entities=6.0,
    job_entities=2.0,
    create_requests=619 / 300,
    history_requests=2.0,
)


def label(deployment: Deployment) -> str:
    accounts = deployment.storage_accounts
    if deployment.split_storage:
        where = "split (main, history, execution accounts)"
        where = where if accounts == 1 else f"{accounts} x {where} (collections sharded, not built)"
    else:
        where = "1 account" if accounts == 1 else f"{accounts} accounts (collections sharded, not built)"
    return f"K={deployment.execution_queues}, S={deployment.due_shards}, scan x{deployment.scan_concurrency}, {where}"


def applies(cost: FireCost, deployment: Deployment) -> bool:
    """Whether the model can place ``cost`` on ``deployment``: a split needs the requests per fire on the
    history tables (:attr:`FireCost.history_requests`)."""
    return not deployment.split_storage or cost.history_requests is not None


def scenario_rows(
    costs: list[FireCost], deployment: Deployment, limits: Limits, compute: Compute
) -> list[list[object]]:
    rows: list[list[object]] = []
    for cost in costs:
        if not applies(cost, deployment):
            continue
        found = ceilings(cost, limits, deployment, compute)
        top, name = max_fires_per_second(cost, limits, deployment, compute)
        cells = {key: f"{value:,.0f}" for key, value in found.items()}
        if deployment.split_storage:
            accounts = account_ceilings(cost, limits, deployment)
            cells[ACCOUNT_CEILING] = " / ".join(f"{role} {value:,.0f}" for role, value in accounts.items())
        rows.append(
            [cost.label, f"{cost.requests:.2f}", label(deployment), *cells.values(), f"**{top:,.0f}** ({name})"]
        )
    return rows


# ------------------------------------------------------------------------------------------------ a count


@dataclass
class Counted:
    """Storage requests counted per phase (``--count``): operation -> requests, and for the fires also
    (table or queue, operation) -> requests with the role of each table and queue (:func:`storage_roles`)."""

    creates: int
    fires: int
    create_ops: dict[str, int]
    fire_ops: dict[str, int]
    fire_targets: dict[tuple[str, str], int] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)

    def per_create(self) -> float:
        return sum(self.create_ops.values()) / self.creates

    def per_fire(self) -> float:
        return sum(self.fire_ops.values()) / self.fires

    def per_role(self) -> dict[str, float]:
        """Requests per fire on each account of a split deployment (:data:`ROLES`), from ``fire_targets``."""
        return {role: n / self.fires for role, n in by_role(self.fire_targets, self.roles).items()}

    def as_fire_cost(self) -> FireCost:
        """This count as the model's input, the partition figures as in :data:`GOAL` (the count does not see
        entities per partition). With the tables and queues counted: the execution queues' requests, the
        other queues' and the history tables' (the split's history account); without: every queue request
        as the execution queues' and no history share."""
        queue = sum(n for op, n in self.fire_ops.items() if op.startswith("queue")) / self.fires
        table = sum(n for op, n in self.fire_ops.items() if op.startswith("table")) / self.fires
        other_queue, history = 0.0, None
        if self.fire_targets:
            share: Counter[tuple[str, str]] = Counter()
            for (target, op), n in self.fire_targets.items():
                share[(op.split()[0], self.roles.get(target, "main"))] += n  # ("queue" | "table", role)
            execution = share["queue", "execution"] / self.fires
            queue, other_queue = execution, queue - execution
            history = share["table", "history"] / self.fires
        return replace(
            GOAL,
            label=f"counted here ({self.per_fire():.2f} requests/fire)",
            table_requests=table,
            queue_requests=queue,
            other_queue_requests=other_queue,
            create_requests=self.per_create(),
            history_requests=history,
        )


def by_role(targets: Mapping[tuple[str, str], int], roles: Mapping[str, str]) -> dict[str, int]:
    """Requests by account role (:data:`ROLES`) of requests counted by (table or queue, operation): a table or
    queue not in ``roles`` (the account itself: ``Tables`` when a table is created) is the main account's."""
    found = dict.fromkeys(ROLES, 0)
    for (target, _), n in targets.items():
        found[roles.get(target, "main")] += n
    return found


def storage_roles(settings: Settings) -> dict[str, str]:
    """The account role of every table and queue of ``settings`` (real names, the table prefix included): the
    history tables (``names.HISTORY_TABLES``) go to the history account (``SchedulerHistoryStorage``), the
    execution queues and their poison queues (``names.execution_queue_names``) to the execution account
    (``SchedulerExecutionStorage``), the other tables and queues stay in the main one (AzureWebJobsStorage)."""
    from scheduler_core.storage import names

    roles = dict.fromkeys(names.table_names(settings), "main")
    roles |= dict.fromkeys(names.queue_names(settings), "main")
    roles |= {settings.table_name(base): "history" for base in names.HISTORY_TABLES}
    roles |= dict.fromkeys(names.execution_queue_names(settings), "execution")
    return roles


def classify_request(method: str, url: str, headers: dict[str, str], table_port: int | None) -> str:
    """``"<service> <operation>"`` of one storage request (Azurite's path-style URLs)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    method = headers.get("X-HTTP-Method", method).upper()
    if parts.port == table_port:
        last = path.rsplit("/", 1)[-1]
        if last == "$batch":
            return "table batch"
        if method == "GET":
            return "table get" if "PartitionKey=" in last and "RowKey=" in last else "table query"
        kinds = {"POST": "insert", "PUT": "update", "MERGE": "merge", "PATCH": "merge", "DELETE": "delete"}
        return f"table {kinds.get(method, method.lower())}"
    if path.endswith("/messages"):
        return {"POST": "queue put", "GET": "queue get"}.get(method, f"queue {method.lower()}")
    if "/messages/" in path:
        return {"DELETE": "queue delete", "PUT": "queue update"}.get(method, f"queue {method.lower()}")
    return f"queue {method.lower()} (other)"


#: An operation of a table batch's multipart body: its request line (method, URL).
_BATCH_OPERATION = re.compile(r"^(?:GET|POST|PUT|MERGE|PATCH|DELETE) (\S+) HTTP/1\.1\r?$", re.MULTILINE)


def request_target(url: str, body: bytes | str | None = None) -> str:
    """The table or queue one storage request addresses (Azurite's path-style URLs, ``/<account>/<name>...``):
    a table's name before ``(`` or ``()``, a queue's before ``/messages``; for a ``$batch`` the table of its
    operations, read from the request line of the first in its multipart body (a batch addresses one table).
    The account itself (``Tables`` when a table is created or listed) keeps its path's name; "" if none."""
    segments = [segment for segment in urlsplit(url).path.split("/") if segment]
    if len(segments) < 2:
        return ""
    name = unquote(segments[1]).split("(")[0]
    if name == "$batch":
        text = body.decode("latin-1") if isinstance(body, bytes) else (body or "")
        found = _BATCH_OPERATION.search(text)
        return request_target(found.group(1)) if found else "$batch"
    return name


def count_requests(
    counter: Counter[str], table_port: int, targets: Counter[tuple[str, str]] | None = None
) -> Callable[[], None]:
    """Count every request the app's storage clients send (they share one transport) into ``counter``, by
    :func:`classify_request`, and into ``targets`` by (:func:`request_target`, operation), until the function
    returned is called."""
    import threading

    from scheduler_core.adapters.azure.clients import storage_transport

    lock = threading.Lock()
    session = storage_transport().session
    original = session.send

    def counting_send(request: Any, **kwargs: Any) -> Any:
        op = classify_request(request.method, request.url, dict(request.headers), table_port)
        target = request_target(request.url, request.body) if targets is not None else ""
        with lock:
            counter[op] += 1
            if targets is not None:
                targets[(target, op)] += 1
        return original(request, **kwargs)

    session.send = counting_send

    def stop() -> None:
        session.send = original

    return stop


def count_operations(jobs: int) -> Counted:
    """A simple count of the storage requests per create and per fire of one-shot HTTP jobs, in this process
    on a private Azurite: every request the app's storage clients send (they share one transport) is
    counted by operation. Creates go through the management API's handler; the fires through one scan of
    every shard, the executions of the messages received from the execution queue (32 at a time, each
    deleted after its execution, as the Functions host does) and the scan that later drops their watch
    rows. Not counted: the idle polling of the host and the tick's own messages (a few per shard a minute).
    The fires' requests are also counted by the table or queue they address, with each one's account role
    (:func:`storage_roles`: what a split deployment puts where)."""
    import time
    from datetime import UTC, datetime, timedelta

    from bench.burst import http_sink
    from bench.common import azurite_settings
    from scheduler_core import auth, wiring
    from scheduler_core.adapters.azure.clients import queue_client
    from scheduler_core.api import ApiRequest, ManagementApi
    from scheduler_core.pipeline.messages import ExecutionMessage

    key = auth.generate_key()
    counter: Counter[str] = Counter()
    targets: Counter[tuple[str, str]] = Counter()
    with azurite_settings(SCHEDULER_API_KEYS=auth.hash_entry(key)) as config, http_sink() as sink:
        table_port = int(
            (config.storage_connection_string or "").split("TableEndpoint=")[1].split(":")[2].split("/")[0]
        )
        shift = [timedelta(0)]
        built = wiring.build(config, clock=lambda: datetime.now(UTC) + shift[0])
        wiring.install(built)
        api = ManagementApi(wiring.api_services)
        stop_counting = count_requests(counter, table_port, targets)

        def call(method: str, path: str, body: dict[str, Any]) -> None:
            import json as json_module

            answer = api.handle(
                ApiRequest(
                    method=method,
                    url=f"http://127.0.0.1/{path}?api-version=2016-03-01",
                    path=path,
                    query={"api-version": "2016-03-01"},
                    headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                    body=json_module.dumps(body).encode(),
                )
            )
            assert answer.status in (200, 201), answer.body[:300]

        collection = "subscriptions/count/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c0"
        call("PUT", collection, {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}})
        due = (datetime.now(UTC) + timedelta(seconds=config.lookahead_seconds + 60)).replace(microsecond=0)
        counter.clear()
        for i in range(jobs):
            action = {"type": "Http", "request": {"uri": f"{sink.base_url}/j{i}", "method": "GET"}}
            call("PUT", f"{collection}/jobs/job{i}", {"properties": {"startTime": due.isoformat(), "action": action}})
        create_ops = dict(counter)
        counter.clear()
        targets.clear()
        shift[0] = due - timedelta(seconds=10) - datetime.now(UTC)  # the app's clock: 10 s before the due second
        shards = [f"{shard:04d}" for shard in range(config.due_shards)]
        for shard in shards:
            built.dispatcher.scan(shard, built.clock())
        time.sleep(10)  # the messages become visible a second before the due second
        queue = queue_client(config, config.execution_queue)
        fired = 0
        deadline = time.monotonic() + 120
        while fired < jobs and time.monotonic() < deadline:
            for message in queue.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=300):
                built.executor.execute(ExecutionMessage.from_json(message.content))
                queue.delete_message(message)
                fired += 1
        assert sink.count() == jobs, f"{sink.count()} of {jobs} jobs fired"
        shift[0] += timedelta(minutes=3)  # past the claims' lease: the scans drop the watch rows
        for shard in shards:
            built.dispatcher.scan(shard, built.clock())
        fire_ops, fire_targets = dict(counter), dict(targets)
        stop_counting()
        roles = storage_roles(config)
        wiring.reset()
    return Counted(jobs, fired, create_ops, fire_ops, fire_targets, roles)


@dataclass
class CleanupRun:
    """One measured cleanup run (``--cleanup``): ``workers`` threads taking cleanup messages off the queue."""

    workers: int
    jobs: int
    removed: int
    history_removed: int
    messages: int
    seconds: float
    ops: dict[str, int]
    #: (table or queue, operation) -> requests, and the account role of each table and queue.
    targets: dict[tuple[str, str], int] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds

    def per_role(self) -> dict[str, float]:
        """Requests per job on each account of a split deployment (:data:`ROLES`)."""
        return {role: n / self.jobs for role, n in by_role(self.targets, self.roles).items()}

    def table_requests_per_job(self) -> float:
        return sum(n for op, n in self.ops.items() if op.startswith("table")) / self.jobs

    def queue_requests_per_job(self) -> float:
        return sum(n for op, n in self.ops.items() if op.startswith("queue")) / self.jobs


def measure_cleanup(jobs: int, collection_size: int = 500, worker_counts: tuple[int, ...] = (1, 4)) -> list[CleanupRun]:
    """The daily cleanup on a private Azurite, in this process: for each entry of ``worker_counts`` a
    subscription of its own with ``jobs`` jobs in collections of ``collection_size`` (P20Premium), a fifth of
    them finished 61 days ago (removed, their slots given back), the others live with 3 history rows of the
    last days (kept) and 2 older than 60 days (trimmed). The subscription's message is put on the cleanup
    queue and that many threads take messages off it one at a time, run them (``pipeline.cleanup.work``) and
    delete them, as the Functions host does, until the queue is empty. Every storage request is counted by
    operation (the app's clients share one transport). Messages are not spread over time here (SPREAD 0)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    from datetime import UTC, datetime, timedelta

    from bench.common import azurite_settings
    from scheduler_core import wiring
    from scheduler_core.adapters.azure.clients import queue_client
    from scheduler_core.adapters.azure.tables import MAX_BATCH
    from scheduler_core.model import ActionName, HistoryEntry, HistoryStatus, JobState
    from scheduler_core.pipeline import cleanup as cleanup_module
    from scheduler_core.recurrence import format_instant
    from scheduler_core.storage.keys import CollectionRef, JobRef, history_row_key

    counter: Counter[str] = Counter()
    targets: Counter[tuple[str, str]] = Counter()
    lock = threading.Lock()
    runs: list[CleanupRun] = []
    spread = cleanup_module.SPREAD
    cleanup_module.SPREAD = timedelta(0)
    try:
        with azurite_settings() as config:
            table_port = int(
                (config.storage_connection_string or "").split("TableEndpoint=")[1].split(":")[2].split("/")[0]
            )
            built = wiring.build(config)
            stores, claims = built.stores, built.executor.claims
            history: Any = stores.history  # the Azure adapter's TableHistory (its table, for batches)
            now = datetime.now(UTC)
            start = format_instant(now + timedelta(hours=1))
            action = {"type": "Http", "request": {"uri": "http://127.0.0.1:9/", "method": "GET"}}
            pool = ThreadPoolExecutor(8)

            def seed(subscription: str) -> None:
                refs: list[JobRef] = []
                for c in range(math.ceil(jobs / collection_size)):
                    collection = CollectionRef(subscription, "rg", f"c{c}")
                    body = {"location": "westus", "properties": {"sku": {"name": "P20Premium"}}}
                    built.service.put_collection(collection, body)
                    size = min(collection_size, jobs - c * collection_size)
                    refs += [JobRef(collection, f"job{j:04d}") for j in range(size)]

                def one(index: int) -> None:
                    ref = refs[index]
                    recurrence = {"frequency": "Hour", "interval": 1}
                    built.service.put_job(
                        ref, {"properties": {"startTime": start, "action": action, "recurrence": recurrence}}
                    )
                    if index % 5 == 0:  # finished 61 days ago
                        job = stores.jobs.get(ref)
                        assert job is not None
                        ended = replace(job, state=JobState.COMPLETED, ended_at=now - timedelta(days=61))
                        stores.jobs.save(ended, create=False, etag=job.etag)
                        return
                    starts = [now - timedelta(days=d) for d in (1, 2, 3, 61, 62)]
                    rows = []
                    for i, at in enumerate(starts):
                        key = f"{ref.name}-{i}"
                        entry = HistoryEntry(
                            key,
                            history_row_key(at, key),
                            at,
                            at,
                            at,
                            ActionName.MAIN,
                            HistoryStatus.COMPLETED,
                            "",
                            0,
                            0,
                        )
                        rows.append(("upsert", history.entity(ref, entry)))
                    history.table.submit_transaction(rows[:MAX_BATCH])

                list(pool.map(one, range(len(refs))))
                for collection in {ref.collection for ref in refs}:
                    built.service.slots.forget(collection)

            subscriptions = [f"bench-{workers}w" for workers in worker_counts]
            for subscription in subscriptions:
                seed(subscription)
            queue = queue_client(config, config.cleanup_queue)

            def drain(workers: int) -> tuple[cleanup_module.CleanupReport, int]:
                """``workers`` threads run the queue's messages until it is empty: (reports added up, messages)."""
                total = cleanup_module.CleanupReport()
                state = {"busy": 0, "ran": 0}
                cleanups = built.cleanups

                def worker() -> None:
                    while True:
                        with lock:
                            state["busy"] += 1  # counted before the receive: no one stops while this runs
                        try:
                            taken = list(queue.receive_messages(max_messages=1, visibility_timeout=300))
                            if taken:
                                message = cleanup_module.CleanupMessage.from_json(taken[0].content)
                                report = cleanup_module.work(stores, message, cleanups.send, claims)
                                queue.delete_message(taken[0])
                                with lock:
                                    total.add(report)
                                    state["ran"] += 1
                        finally:
                            with lock:
                                state["busy"] -= 1
                                idle = state["busy"] == 0
                        if not taken:
                            if idle:
                                return
                            time.sleep(0.1)

                threads = [threading.Thread(target=worker) for _ in range(workers)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                return total, state["ran"]

            stop_counting = count_requests(counter, table_port, targets)
            roles = storage_roles(config)
            try:
                for workers, subscription in zip(worker_counts, subscriptions, strict=True):
                    counter.clear()
                    targets.clear()
                    began = time.perf_counter()
                    queue.send_message(cleanup_module.CleanupMessage(format_instant(now), subscription).to_json())
                    total, ran = drain(workers)
                    seconds = time.perf_counter() - began
                    runs.append(
                        CleanupRun(
                            workers,
                            total.jobs_seen,
                            total.jobs_removed,
                            total.history_removed,
                            ran,
                            seconds,
                            dict(counter),
                            dict(targets),
                            roles,
                        )
                    )
            finally:
                stop_counting()
            pool.shutdown()
            wiring.reset()
    finally:
        cleanup_module.SPREAD = spread
    return runs


def print_cleanup(runs: list[CleanupRun]) -> None:
    from bench.common import table

    rows: list[list[object]] = [
        [
            run.workers,
            f"{run.jobs:,}",
            f"{run.removed:,}",
            f"{run.history_removed:,}",
            run.messages,
            f"{run.seconds:.1f}",
            f"**{run.jobs_per_s:,.0f}**",
            f"{run.workers * 1000 / run.jobs_per_s:.1f}",
            f"{run.table_requests_per_job():.2f}",
            f"{run.queue_requests_per_job():.3f}",
        ]
        for run in runs
    ]
    headers = ["workers", "jobs", "removed", "history rows trimmed", "messages", "s", "jobs/s", "ms per job per worker"]
    print(table([*headers, "table requests/job", "queue requests/job"], rows))
    operations = sorted({op for run in runs for op in run.ops})
    op_rows = [[op, *(f"{run.ops.get(op, 0) / run.jobs:.3f}" for run in runs)] for op in operations]
    print()
    print(table(["cleanup requests per job", *(f"{run.workers} worker(s)" for run in runs)], op_rows))
    print()
    print_targets([(f"{run.workers} worker(s)", run.targets, run.roles, run.jobs) for run in runs], "per job")


def print_targets(columns: list[tuple[str, Mapping[tuple[str, str], int], Mapping[str, str], int]], per: str) -> None:
    """Requests ``per`` fire or job by table or queue and operation, then by account role (:data:`ROLES`): one
    column per (heading, counts by (table or queue, operation), roles, fires or jobs)."""
    from bench.common import table

    keys = sorted({key for _, targets, _, _ in columns for key in targets})
    if not keys:
        return
    roles = {name: role for _, _, found, _ in columns for name, role in found.items()}
    rows: list[list[object]] = [
        [
            roles.get(name, "main"),
            name or "(account)",
            op,
            *(f"{t.get((name, op), 0) / n:.3f}" for _, t, _, n in columns),
        ]
        for name, op in sorted(keys, key=lambda key: (ROLES.index(roles.get(key[0], "main")), key))
    ]
    for role in ROLES:
        rows.append([f"**{role}**", "", "", *(f"**{by_role(t, r)[role] / n:.2f}**" for _, t, r, n in columns)])
    print(
        table(["account (split)", "table or queue", "request", *(f"{heading} {per}" for heading, *_ in columns)], rows)
    )
    print()


def print_count(counted: Counted) -> None:
    from bench.common import table

    operations = sorted(set(counted.create_ops) | set(counted.fire_ops))
    rows: list[list[object]] = [
        [
            op,
            f"{counted.create_ops.get(op, 0) / counted.creates:.2f}",
            f"{counted.fire_ops.get(op, 0) / counted.fires:.2f}",
        ]
        for op in operations
    ]
    rows.append(["**total**", f"**{counted.per_create():.2f}**", f"**{counted.per_fire():.2f}**"])
    print(table(["storage requests", f"per create ({counted.creates})", f"per one-shot fire ({counted.fires})"], rows))
    print()
    print_targets(
        [(f"{counted.fires} one-shot fires:", counted.fire_targets, counted.roles, counted.fires)], "per fire"
    )


def main() -> None:
    from bench.common import table

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops-per-fire", type=float, help="measured requests per fire (bench/opcount.py)")
    parser.add_argument("--cpu-ms-per-fire", type=float, default=10.0, help="host CPU per fire (bench/burst.py)")
    parser.add_argument("--wall-ms-per-fire", type=float, default=150.0)
    parser.add_argument("--queues", type=int, default=6, help="SCHEDULER_EXECUTION_QUEUE_COUNT")
    parser.add_argument("--shards", type=int, default=16, help="SCHEDULER_DUE_SHARDS")
    parser.add_argument("--accounts", type=int, default=2, help="storage accounts of the last row (not built)")
    parser.add_argument("--scan-concurrency", type=int, default=16, help="sends in flight per shard scan, fanned out")
    parser.add_argument("--split-queues", default="6,8", help="K of the rows with the storage split by role")
    parser.add_argument("--split-shards", default="16,32", help="S of the rows with the storage split by role")
    parser.add_argument("--burst", type=int, default=100_000, help="fires due at the same second")
    parser.add_argument("--utilisation", type=float, default=0.7, help="share of the ceiling used on average")
    parser.add_argument("--count", type=int, default=0, help="count requests of this many one-shot jobs first")
    parser.add_argument("--cleanup", type=int, default=0, help="measure the cleanup on this many jobs per run first")
    parser.add_argument("--cleanup-workers", default="1,4", help="worker threads of each cleanup run")
    parser.add_argument("--cleanup-requests-per-job", type=float, default=CleanupCost.requests_per_job)
    parser.add_argument("--cleanup-history-requests-per-job", type=float, default=CleanupCost.history_requests_per_job)
    parser.add_argument("--cleanup-window-hours", type=float, default=CleanupCost.window_s / 3600, help="SPREAD")
    args = parser.parse_args()
    cleanup_cost = CleanupCost(
        requests_per_job=args.cleanup_requests_per_job, history_requests_per_job=args.cleanup_history_requests_per_job
    )
    if args.cleanup:
        workers = tuple(int(w) for w in args.cleanup_workers.split(","))
        runs = measure_cleanup(args.cleanup, worker_counts=workers)
        print_cleanup(runs)
        cleanup_cost = CleanupCost(
            requests_per_job=runs[0].table_requests_per_job() + runs[0].queue_requests_per_job(),
            history_requests_per_job=runs[0].per_role()["history"],
        )
    cleanup_cost = replace(cleanup_cost, window_s=args.cleanup_window_hours * 3600.0)
    limits, compute = Limits(), Compute(args.cpu_ms_per_fire, args.wall_ms_per_fire)
    costs = [MEASURED_BEFORE, GOAL]
    if args.count:
        counted = count_operations(args.count)
        print_count(counted)
        costs.append(counted.as_fire_cost())
    else:
        costs.append(COUNTED)
    if args.ops_per_fire is not None:
        table_share = max(0.0, args.ops_per_fire - GOAL.queue_requests - GOAL.other_queue_requests)
        costs.append(replace(GOAL, label=f"measured ({args.ops_per_fire} requests/fire)", table_requests=table_share))
    scan = args.scan_concurrency
    split = [
        Deployment(queues, shards, 1, scan, split_storage=True)
        for queues in (int(k) for k in args.split_queues.split(","))
        for shards in (int(s) for s in args.split_shards.split(","))
    ]
    deployments = list(
        dict.fromkeys(
            [
                Deployment(1, args.shards, 1),
                Deployment(args.queues, args.shards, 1),
                Deployment(args.queues, args.shards, 1, scan),
                Deployment(args.queues * args.accounts, args.shards, args.accounts, scan),
                *split,
            ]
        )
    )
    print(f"per instance: {per_instance_fires_per_s(limits, compute):.0f} fires/s; per collection: ", end="")
    print(", ".join(f"{per_collection_fires_per_s(c, limits):.0f} fires/s ({c.label})" for c in costs))
    print()
    for cost in costs:
        if cost.history_requests is not None:
            roles = cost.account_requests(split=True)
            print(
                f"{cost.label}, requests per fire by account when split: "
                + ", ".join(f"{role} {value:.2f}" for role, value in roles.items())
            )
    print()
    headers = ["requests per fire", "requests", "deployment", *ceilings(GOAL, limits, deployments[0], compute)]
    rows = [row for d in deployments for row in scenario_rows(costs, d, limits, compute)]
    print(table([*headers, "ceiling (what breaks first)"], rows))
    print()
    for cost in costs:
        needs = ", ".join(
            f"{target:,} fires/s: K={queues_needed(target, cost, limits)}, "
            f"accounts={accounts_needed(target, cost, limits)}"
            for target in (1_000, 5_000, 10_000)
        )
        print(f"{cost.label}: {needs}")
    print()
    periods = (("minute", 60.0), ("hour", 3_600.0), ("day", 86_400.0))
    job_rows: list[list[object]] = []
    for cost in costs:
        for deployment in deployments:
            if not applies(cost, deployment):
                continue
            top, _ = max_fires_per_second(cost, limits, deployment, compute)
            cleaned = (
                jobs_with_cleanup(cost, cleanup_cost, limits, deployment, compute, p, args.utilisation)
                for p in (3_600.0, 86_400.0)
            )
            job_rows.append(
                [
                    cost.label,
                    label(deployment),
                    *(f"{jobs_per_deployment(top, p, args.utilisation) / 1e6:,.2f} M" for _, p in periods),
                    *(f"{jobs / 1e6:,.2f} M ({limit})" for jobs, limit in cleaned),
                    f"{create_rate(cost, limits, deployment):,.0f}",
                ]
            )
    print(
        table(
            [
                "requests per fire",
                "deployment",
                *(f"jobs every {name} ({args.utilisation:.0%} busy)" for name, _ in periods),
                "jobs every hour, with their daily cleanup",
                "jobs every day, with their daily cleanup",
                "creates/s",
            ],
            job_rows,
        )
    )
    print()
    per_instance = per_instance_fires_per_s(limits, compute)
    scaling = Scaling()
    burst_rows: list[list[object]] = []
    for cost in costs:
        for deployment in deployments:
            if not applies(cost, deployment):
                continue
            found = ceilings(cost, limits, deployment, compute)
            dispatch = replace(scaling, dispatch_sends_per_s=found.pop("dispatch (scans)"))
            for burst in (args.burst, 1_000_000):
                late = burst_lateness(burst, min(found.values()), per_instance, limits, deployment, dispatch, step=0.5)
                burst_rows.append(
                    [
                        cost.label,
                        label(deployment),
                        f"{burst:,}",
                        f"{late.p50:,.0f}",
                        f"{late.p99:,.0f}",
                        f"{late.max:,.0f}",
                    ]
                )
    print(table(["requests per fire", "deployment", "burst", "lateness p50 s", "p99 s", "max s"], burst_rows))
    print()
    for jobs in (1_000_000, 10_000_000):
        pass_s = cleanup_pass_seconds(jobs, compute)
        print(
            f"daily cleanup of {jobs:,} jobs in one timer call (before): {pass_s / 3600:,.1f} h "
            f"(a timer invocation may run {FUNCTION_TIMEOUT_S / 60:.0f} min: "
            f"{FUNCTION_TIMEOUT_S / pass_s * jobs:,.0f} jobs)"
        )
    split_costs = [c for c in costs if c.history_requests is not None]
    by_account = cleanup_cost.account_requests(split=True)
    print(
        "cleanup requests per job and day by account when split: "
        + ", ".join(f"{role} {value:.2f}" for role, value in by_account.items())
    )
    cleanup_rows: list[list[object]] = []
    for jobs in (1_000_000, 10_000_000, 100_000_000):
        load = cleanup_account_load(jobs, cleanup_cost)
        in_flight = cleanup_messages_in_flight(jobs, cleanup_cost, compute)
        cleanup_rows.append(
            [
                f"{jobs:,}",
                f"{cleanup_cost.requests:.2f}",
                f"{cleanup_cost.window_s / 3600:.0f} h",
                f"{load:,.0f} ({load / limits.account_requests_per_s:.1%})",
                f"{in_flight:,.1f}",
                f"{math.ceil(in_flight / 16):,}",
                *(f"{fires_left_during_cleanup(jobs, cleanup_cost, c, limits):,.0f}" for c in costs),
                *(f"{fires_left_during_cleanup(jobs, cleanup_cost, c, limits, split=True):,.0f}" for c in split_costs),
            ]
        )
    print()
    print(
        table(
            [
                "jobs",
                "requests/job",
                "spread over",
                "account requests/s while it runs",
                "messages in flight",
                "instances (16 each)",
                *(f"fires/s one account has left ({c.requests:.2f} requests/fire)" for c in costs),
                *(f"fires/s the split accounts have left ({c.requests:.2f} requests/fire)" for c in split_costs),
            ],
            cleanup_rows,
        )
    )
    print()
    prices, peers = Prices(), PeerPrices()
    cost_rows: list[list[object]] = []
    for cost in costs:
        parts = cost_per_million_fires(cost, prices, limits, compute)
        cost_rows.append([cost.label, *(f"${v:.2f}" for v in parts.values()), f"**${sum(parts.values()):.2f}**"])
    print(table(["per million fires", *cost_per_million_fires(GOAL, prices, limits, compute), "total"], cost_rows))
    print()
    account_rows: list[list[object]] = []
    for cost in split_costs:
        one = storage_cost_by_account(cost, prices, split=False)
        parts = storage_cost_by_account(cost, prices, split=True)
        account_rows.append(
            [
                cost.label,
                f"${one['main']:.3f}",
                *(f"${v:.3f}" for v in parts.values()),
                f"**${sum(parts.values()):.3f}**",
            ]
        )
    print(
        table(
            [
                "storage requests per million fires",
                "one account",
                *(f"split: {role} account" for role in ROLES),
                "split: total (the same bill)",
            ],
            account_rows,
        )
    )
    print()
    peer_rows = [
        [f"every {name}", *(f"${v:,.2f}" for v in peer_cost_per_million_fires(peers, period).values())]
        for name, period in periods
    ]
    print(table(["peers, per million fires, jobs firing", *peer_cost_per_million_fires(peers, 60.0)], peer_rows))


if __name__ == "__main__":
    main()
