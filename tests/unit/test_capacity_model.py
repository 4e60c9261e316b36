"""bench/capacity.py's model on fixed inputs: each figure worked out by hand below, so a slip in its
arithmetic (or a limit left out of the minimum) fails here."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from bench.capacity import (
    COUNTED,
    GOAL,
    MEASURED_BEFORE,
    CleanupCost,
    Compute,
    Counted,
    Deployment,
    FireCost,
    Limits,
    PeerPrices,
    Prices,
    Scaling,
    account_ceilings,
    accounts_needed,
    applies,
    burst_lateness,
    ceilings,
    cleanup_pass_seconds,
    cost_per_million_fires,
    create_rate,
    fires_left_during_cleanup,
    jobs_per_deployment,
    jobs_with_cleanup,
    max_fires_per_second,
    peer_cost_per_million_fires,
    per_collection_fires_per_s,
    per_instance_fires_per_s,
    queues_needed,
    request_target,
    storage_cost_by_account,
    storage_roles,
)
from scheduler_core import settings

COST = FireCost(
    label="fixed",
    table_requests=3.0,
    queue_requests=2.0,
    other_queue_requests=0.0,
    due_entities=4.0,
    job_entities=2.0,
    create_requests=5.0,
)
#: COST with where its requests land when the storage is split: main 4 - 2 table + 0.5 other queue = 2.5,
#: history 2, execution 2 (6.5 in all).
SPLIT_COST = FireCost(
    label="fixed, split",
    table_requests=4.0,
    queue_requests=2.0,
    other_queue_requests=0.5,
    due_entities=4.0,
    job_entities=2.0,
    create_requests=5.0,
    history_requests=2.0,
)
#: 6 cleanup requests per job and day: 1 in the main account, 3 measured + 2 claim batches in the history one.
CLEANUP = CleanupCost(requests_per_job=4.0, claim_batches=2.0, window_s=72_000.0, history_requests_per_job=3.0)
LIMITS = Limits(max_instances=100)  # 20,000 req/s, 2,000 entities/s, 2,000 msgs/s, 2 GB, 1 vCPU, 40 threads
COMPUTE = Compute(cpu_ms_per_fire=10.0, wall_ms_per_fire=200.0, queue_put_ms=1.0)  # scans: 1,000 sends/s each


def top(cost: FireCost, limits: Limits, deployment: Deployment) -> tuple[float, str]:
    """The ceiling to a thousandth of a fire per second, and the limit that sets it."""
    value, name = max_fires_per_second(cost, limits, deployment, COMPUTE)
    return round(value, 3), name


def test_the_documented_limits_are_the_defaults() -> None:
    limits = Limits()
    assert (limits.account_requests_per_s, limits.partition_entities_per_s, limits.queue_messages_per_s) == (
        20_000,
        2_000,
        2_000,
    )
    assert (limits.max_instances, limits.per_instance_concurrency) == (1_000, 40)


def test_an_instance_runs_what_its_core_or_its_threads_allow() -> None:
    assert per_instance_fires_per_s(LIMITS, COMPUTE) == pytest.approx(100.0)  # 1 core / 10 ms (40/0.2 s = 200)
    slow_target = Compute(cpu_ms_per_fire=10.0, wall_ms_per_fire=800.0)
    assert per_instance_fires_per_s(LIMITS, slow_target) == pytest.approx(50.0)  # 40 threads / 0.8 s
    two_cores_one_process = Limits(instance_vcpus=2.0, worker_processes=1)
    assert per_instance_fires_per_s(two_cores_one_process, COMPUTE) == pytest.approx(100.0)  # one interpreter
    two_processes = Limits(instance_vcpus=2.0, worker_processes=2)
    assert per_instance_fires_per_s(two_processes, COMPUTE) == pytest.approx(200.0)


def test_each_limit_gives_its_ceiling_and_the_least_one_breaks_first() -> None:
    deployment = Deployment(execution_queues=2, due_shards=5, storage_accounts=1)
    found = ceilings(COST, LIMITS, deployment, COMPUTE)
    assert found == pytest.approx(
        {
            "dispatch (scans)": 5 * 1 * 1_000.0,  # 5 shards, one send at a time, 1 ms each
            "storage account requests": 20_000 / 5,  # 4,000
            "execution queues": 2 * 2_000 / 2,  # 2,000
            "due-index shards (partitions)": 5 * 2_000 / 4,  # 2,500
            "function instances": 100 * 100.0,  # 10,000
        }
    )
    assert top(COST, LIMITS, deployment) == (2_000, "execution queues")
    more_queues = Deployment(execution_queues=8, due_shards=5, storage_accounts=1)
    assert top(COST, LIMITS, more_queues) == (2_500, "due-index shards (partitions)")
    wide = Deployment(execution_queues=8, due_shards=64, storage_accounts=1)
    assert top(COST, LIMITS, wide) == (4_000, "storage account requests")
    two_accounts = Deployment(execution_queues=10, due_shards=64, storage_accounts=2)
    # 40,000 / 5 (queues 10,000, shards 64,000, instances 10,000)
    assert top(COST, LIMITS, two_accounts) == (8_000, "storage account requests")
    few_instances = Limits(max_instances=10)
    assert top(COST, few_instances, two_accounts) == (1_000, "function instances")


def test_scans_that_send_one_message_after_the_other_cap_the_dispatch() -> None:
    compute = Compute(cpu_ms_per_fire=10.0, queue_put_ms=8.0)  # 125 sends/s per scan
    sequential = Deployment(execution_queues=8, due_shards=16, scan_concurrency=1)
    assert ceilings(COST, LIMITS, sequential, compute)["dispatch (scans)"] == pytest.approx(2_000)
    value, name = max_fires_per_second(COST, LIMITS, sequential, compute)
    assert (round(value), name) == (2_000, "dispatch (scans)")
    fanned_out = Deployment(execution_queues=8, due_shards=16, scan_concurrency=8)
    assert ceilings(COST, LIMITS, fanned_out, compute)["dispatch (scans)"] == pytest.approx(16_000)
    value, name = max_fires_per_second(COST, LIMITS, fanned_out, compute)
    assert (round(value), name) == (4_000, "storage account requests")


def test_the_daily_cleanup_walks_every_job() -> None:
    compute = Compute(cpu_ms_per_fire=10.0, storage_call_ms=10.0)
    assert cleanup_pass_seconds(10_000_000, compute) == pytest.approx(200_000)  # 2 calls x 10 ms per job
    assert cleanup_pass_seconds(10_000_000, compute, workers=100) == pytest.approx(2_000)
    assert cleanup_pass_seconds(30_000, compute) == pytest.approx(600)  # what one 10-minute invocation covers


def test_the_queue_limit_may_count_messages_instead_of_requests() -> None:
    messages = Limits(max_instances=100, queue_limit_counts_requests=False)
    deployment = Deployment(execution_queues=2, due_shards=64)
    assert ceilings(COST, messages, deployment, COMPUTE)["execution queues"] == pytest.approx(4_000)
    assert queues_needed(5_000, COST, messages) == 3  # 5,000 messages / 2,000 per queue


def test_what_a_target_needs() -> None:
    assert queues_needed(5_000, COST, LIMITS) == 5  # 10,000 queue requests / 2,000
    assert queues_needed(1, COST, LIMITS) == 1
    assert accounts_needed(5_000, COST, LIMITS) == 2  # 25,000 requests / 20,000
    assert accounts_needed(4_000, COST, LIMITS) == 1
    assert per_collection_fires_per_s(COST, LIMITS) == pytest.approx(1_000)  # 2,000 entities / 2 per fire


def test_jobs_and_creates() -> None:
    assert jobs_per_deployment(2_000, 3_600, 0.5) == pytest.approx(3_600_000)
    assert jobs_per_deployment(5_000, 86_400, 1.0) == pytest.approx(432_000_000)
    assert create_rate(COST, LIMITS, Deployment()) == pytest.approx(4_000)  # 20,000 / 5
    assert create_rate(COST, LIMITS, Deployment(storage_accounts=3)) == pytest.approx(12_000)


def test_cost_per_million_fires() -> None:
    parts = cost_per_million_fires(COST, Prices(), LIMITS, COMPUTE)
    assert parts == pytest.approx(
        {
            "table requests": 1e6 * 3 * 0.00036 / 1e4,  # $0.108
            "queue requests": 1e6 * 2 * 0.004 / 1e4,  # $0.80
            "function executions": 0.40,
            "function execution time": 1e6 * (2.0 / 100.0) * 0.000026,  # 0.02 GB-s per fire: $0.52
        }
    )
    assert sum(parts.values()) == pytest.approx(1.828)


def test_peer_prices_per_million_fires() -> None:
    hourly = peer_cost_per_million_fires(PeerPrices(), 3_600)
    month = 30.4375 * 86_400
    assert hourly["EventBridge Scheduler"] == pytest.approx(1.00)
    assert hourly["Cloud Scheduler"] == pytest.approx(0.10 / (month / 3_600) * 1e6)  # about $136.89
    assert hourly["Cloud Scheduler"] == pytest.approx(136.89, abs=0.01)
    assert hourly["Logic Apps (Consumption) recurrence"] == pytest.approx(50.0)  # 2 actions x $0.000025
    assert peer_cost_per_million_fires(PeerPrices(), 60)["Cloud Scheduler"] == pytest.approx(2.28, abs=0.01)


def test_a_burst_drains_at_the_ceiling() -> None:
    scaling = Scaling(initial_instances_per_function=1.0, instances_added_per_second_per_function=0.0)
    late = burst_lateness(1_000, 100.0, 1_000.0, LIMITS, Deployment(), scaling)
    assert late.p50 == pytest.approx(5.0, abs=0.06)  # 500 at 100/s
    assert late.p99 == pytest.approx(9.9, abs=0.06)
    assert late.max == pytest.approx(10.0, abs=0.06)
    assert burst_lateness(0, 100.0, 1_000.0, LIMITS, Deployment(), scaling).max == 0.0


def test_a_burst_waits_for_instances_and_k_queues_scale_out_k_times_faster() -> None:
    scaling = Scaling(initial_instances_per_function=1.0, instances_added_per_second_per_function=1.0)
    one = burst_lateness(1_000, math.inf, 10.0, LIMITS, Deployment(execution_queues=1), scaling)
    assert one.max == pytest.approx(-1 + math.sqrt(201), abs=0.06)  # 10 (t + t^2/2) = 1,000: 13.18 s
    two = burst_lateness(1_000, math.inf, 10.0, LIMITS, Deployment(execution_queues=2), scaling)
    assert two.max == pytest.approx(-1 + math.sqrt(101), abs=0.06)  # 20 (t + t^2/2) = 1,000: 9.05 s
    capped = Limits(max_instances=2)
    flat = burst_lateness(1_000, math.inf, 10.0, capped, Deployment(execution_queues=2), scaling)
    assert flat.max == pytest.approx(50.0, abs=0.06)  # 2 instances x 10/s


def test_a_burst_cannot_run_before_the_scans_sent_it() -> None:
    scaling = Scaling(dispatch_lead_s=15.0, dispatch_sends_per_s=50.0)
    late = burst_lateness(1_000, math.inf, math.inf, LIMITS, Deployment(), scaling)
    assert late.max == pytest.approx(5.0, abs=0.06)  # 1,000 sends at 50/s from 15 s before the due second
    assert late.p50 == pytest.approx(0.0, abs=0.06)  # 500 were sent by -5 s


def test_the_built_in_inputs_add_up_to_their_labels() -> None:
    assert MEASURED_BEFORE.requests == pytest.approx(8.4)
    assert GOAL.requests == pytest.approx(4.0)
    value, name = max_fires_per_second(GOAL, Limits(), Deployment(6, 16, 1, scan_concurrency=8), Compute(9.0))
    assert (round(value), name) == (5_000, "storage account requests")  # the goal, on paper


def test_the_simple_count_classifies_storage_requests() -> None:
    from bench.capacity import Counted, classify_request

    table = "http://127.0.0.1:10002/devstoreaccount1"
    queue = "http://127.0.0.1:10001/devstoreaccount1/exec"
    cases = {
        ("GET", f"{table}/Jobs(PartitionKey='a',RowKey='b')", ""): "table get",
        ("GET", f"{table}/Jobs()?$filter=x", ""): "table query",
        ("POST", f"{table}/$batch", ""): "table batch",
        ("POST", f"{table}/Executions", ""): "table insert",
        ("PUT", f"{table}/Jobs(PartitionKey='a',RowKey='b')", ""): "table update",
        ("PATCH", f"{table}/Jobs(PartitionKey='a',RowKey='b')", ""): "table merge",
        ("POST", f"{table}/Jobs(PartitionKey='a',RowKey='b')", "MERGE"): "table merge",
        ("DELETE", f"{table}/DueIndex(PartitionKey='a',RowKey='b')", ""): "table delete",
        ("POST", f"{queue}/messages", ""): "queue put",
        ("GET", f"{queue}/messages?numofmessages=32", ""): "queue get",
        ("DELETE", f"{queue}/messages/id-1?popreceipt=x", ""): "queue delete",
        ("PUT", f"{queue}/messages/id-1?popreceipt=x", ""): "queue update",
    }
    for (method, url, tunnel), expected in cases.items():
        headers = {"X-HTTP-Method": tunnel} if tunnel else {}
        assert classify_request(method, url, headers, 10002) == expected, (method, url)
    counted = Counted(
        creates=2,
        fires=4,
        create_ops={"table insert": 6, "table get": 2},
        fire_ops={"queue put": 4, "queue get": 1, "queue delete": 4, "table insert": 4, "table merge": 3},
    )
    assert (counted.per_create(), counted.per_fire()) == (4.0, 4.0)
    cost = counted.as_fire_cost()
    assert (cost.queue_requests, cost.table_requests, cost.create_requests) == (2.25, 1.75, 4.0)
    assert cost.requests == 4.0


def test_a_split_deployment_puts_each_request_in_its_account() -> None:
    assert SPLIT_COST.account_requests(split=False) == {"main": 6.5}
    assert SPLIT_COST.account_requests(split=True) == {"main": 2.5, "history": 2.0, "execution": 2.0}
    assert CLEANUP.account_requests(split=False) == {"main": 6.0}
    assert CLEANUP.account_requests(split=True) == {"main": 1.0, "history": 5.0, "execution": 0.0}
    with pytest.raises(ValueError, match="history tables"):
        COST.account_requests(split=True)  # no history share: it cannot be placed
    assert not applies(COST, Deployment(split_storage=True))
    assert applies(COST, Deployment()) and applies(SPLIT_COST, Deployment(split_storage=True))


def test_the_split_accounts_ceiling_is_the_least_of_the_three() -> None:
    split = Deployment(execution_queues=10, due_shards=64, split_storage=True)
    assert account_ceilings(SPLIT_COST, LIMITS, split) == pytest.approx(
        {"main": 20_000 / 2.5, "history": 20_000 / 2.0, "execution": 20_000 / 2.0}
    )
    found = ceilings(SPLIT_COST, LIMITS, split, COMPUTE)
    assert found["storage account requests"] == pytest.approx(8_000)  # the main account
    # queues 10 x 2,000 / 2 = 10,000, shards 64 x 2,000 / 4 = 32,000, instances 10,000, dispatch 64,000
    assert top(SPLIT_COST, LIMITS, split) == (8_000, "storage account requests (main)")
    one_account = Deployment(execution_queues=10, due_shards=64)
    assert top(SPLIT_COST, LIMITS, one_account) == (round(20_000 / 6.5, 3), "storage account requests")
    heavy_history = FireCost("h", 5.0, 2.0, 0.5, 4.0, 2.0, 5.0, history_requests=3.0)  # main 2.5, history 3
    assert top(heavy_history, LIMITS, split) == (round(20_000 / 3, 3), "storage account requests (history)")


def test_the_due_index_and_the_queues_still_bind_a_split_deployment() -> None:
    limits, compute = Limits(), Compute(cpu_ms_per_fire=10.0, queue_put_ms=8.0)
    cost = FireCost("c", 4.0, 2.0, 0.0, 6.0, 2.0, 2.0, history_requests=2.0)  # accounts: 10,000 each
    shards16 = Deployment(execution_queues=8, due_shards=16, scan_concurrency=16, split_storage=True)
    value, name = max_fires_per_second(cost, limits, shards16, compute)
    assert (round(value), name) == (5_333, "due-index shards (partitions)")  # 16 x 2,000 / 6
    shards32 = replace(shards16, due_shards=32)
    value, name = max_fires_per_second(cost, limits, shards32, compute)
    assert (round(value), name) == (8_000, "execution queues")  # 8 x 2,000 / 2 (shards 10,667, accounts 10,000)
    six = replace(shards32, execution_queues=6)
    assert round(max_fires_per_second(cost, limits, six, compute)[0]) == 6_000


def test_hourly_jobs_with_their_daily_cleanup() -> None:
    split = Deployment(execution_queues=10, due_shards=64, split_storage=True)
    one = Deployment(execution_queues=10, due_shards=64)
    # Other ceilings: 10,000 fires/s (queues and instances) x 0.5 x 3,600 s = 18 million jobs.
    # Split, per job: main 2.5 / 3,600 + 1 / 72,000 = 51 / 72,000 requests/s, so 10,000 / that = 14.1 million;
    # history 40 / 72,000 + 5 / 72,000: 16 million; execution 40 / 72,000: 18 million.
    jobs, limit = jobs_with_cleanup(SPLIT_COST, CLEANUP, LIMITS, split, COMPUTE, 3_600.0, 0.5)
    assert jobs == pytest.approx(10_000 * 72_000 / 51)
    assert limit == "storage account requests (main)"
    # One account: 6.5 / 3,600 + 6 / 72,000 = 136 / 72,000.
    jobs, limit = jobs_with_cleanup(SPLIT_COST, CLEANUP, LIMITS, one, COMPUTE, 3_600.0, 0.5)
    assert jobs == pytest.approx(10_000 * 72_000 / 136)
    assert limit == "storage account requests"
    # Daily jobs, split: main 2.5 / 86,400 + 1 / 72,000 = 0.0000428 requests/s a job: 234 million; history
    # 2 / 86,400 + 5 / 72,000 = 0.0000926: 108 million; the others 10,000 x 0.5 x 86,400 = 432 million.
    jobs, limit = jobs_with_cleanup(SPLIT_COST, CLEANUP, LIMITS, split, COMPUTE, 86_400.0, 0.5)
    assert jobs == pytest.approx(10_000 / (2 / 86_400 + 5 / 72_000))
    assert limit == "storage account requests (history)"
    none = CleanupCost(requests_per_job=0.0, claim_batches=0.0, history_requests_per_job=0.0)
    for deployment in (split, one):
        ceiling, _ = max_fires_per_second(SPLIT_COST, LIMITS, deployment, COMPUTE)
        jobs, _ = jobs_with_cleanup(SPLIT_COST, none, LIMITS, deployment, COMPUTE, 3_600.0, 0.5)
        assert jobs == pytest.approx(jobs_per_deployment(ceiling, 3_600.0, 0.5))
    few_queues = Deployment(execution_queues=2, due_shards=64, split_storage=True)  # 2,000 fires/s: 3.6 M
    jobs, limit = jobs_with_cleanup(SPLIT_COST, CLEANUP, LIMITS, few_queues, COMPUTE, 3_600.0, 0.5)
    assert jobs == pytest.approx(3_600_000)
    assert limit == "execution queues"


def test_fires_left_while_the_cleanup_runs_on_split_accounts() -> None:
    jobs = 7_200_000  # main: 7.2 M x 1 / 72,000 = 100 requests/s, history: 500, one account: 600
    assert fires_left_during_cleanup(jobs, CLEANUP, SPLIT_COST, LIMITS) == pytest.approx(19_400 / 6.5)
    split = fires_left_during_cleanup(jobs, CLEANUP, SPLIT_COST, LIMITS, split=True)
    assert split == pytest.approx(19_900 / 2.5)  # main 7,960; history 19,500 / 2 = 9,750; execution 10,000
    history_heavy = replace(CLEANUP, history_requests_per_job=4.0, requests_per_job=4.0)  # history 6/job: 600/s
    tight = fires_left_during_cleanup(60_000_000, history_heavy, SPLIT_COST, LIMITS, split=True)
    assert tight == pytest.approx((20_000 - 5_000) / 2)  # history 60 M x 6 / 72,000 = 5,000/s: 7,500 < main 8,000


def test_the_split_changes_where_the_bill_lands_not_the_bill() -> None:
    prices = Prices()  # table $0.036 and queue $0.40 per million fires per request per fire
    one = storage_cost_by_account(SPLIT_COST, prices, split=False)
    split = storage_cost_by_account(SPLIT_COST, prices, split=True)
    assert one == pytest.approx({"main": 4 * 0.036 + 2.5 * 0.4})  # $1.144
    assert split == pytest.approx({"main": 2 * 0.036 + 0.5 * 0.4, "history": 2 * 0.036, "execution": 2 * 0.4})
    assert sum(split.values()) == pytest.approx(one["main"])
    parts = cost_per_million_fires(SPLIT_COST, prices, LIMITS, COMPUTE)
    assert parts["table requests"] + parts["queue requests"] == pytest.approx(one["main"])


def test_requests_are_attributed_to_their_table_or_queue_and_its_account() -> None:
    table = "http://127.0.0.1:10002/devstoreaccount1"
    queue = "http://127.0.0.1:10001/devstoreaccount1/exec"
    assert request_target(f"{table}/t1Jobs(PartitionKey='a',RowKey='b')") == "t1Jobs"
    assert request_target(f"{table}/t1Jobs()?$filter=x") == "t1Jobs"
    assert request_target(f"{table}/t1Executions") == "t1Executions"
    assert request_target(f"{table}/Tables") == "Tables"
    assert request_target(f"{queue}/messages?numofmessages=32") == "exec"
    assert request_target(f"{queue}/messages/id-1?popreceipt=x") == "exec"
    body = (
        "--batch_1\r\nContent-Type: multipart/mixed; boundary=changeset_1\r\n\r\n--changeset_1\r\n"
        "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        f"DELETE {table}/t1DueIndex(PartitionKey='0001',RowKey='x') HTTP/1.1\r\nIf-Match: *\r\n\r\n"
        "--changeset_1\r\nContent-Type: application/http\r\n\r\n"
        f"PATCH {table}/t1DueIndex(PartitionKey='0001',RowKey='y') HTTP/1.1\r\n\r\n--changeset_1--\r\n"
    )
    assert request_target(f"{table}/$batch", body.encode()) == "t1DueIndex"
    assert request_target(f"{table}/$batch", None) == "$batch"

    config = settings.load(
        {"AzureWebJobsStorage__accountName": "acct", "SCHEDULER_TABLE_PREFIX": "t1", "SCHEDULER_EXECUTION_QUEUE": "exe"}
        | {"SCHEDULER_EXECUTION_QUEUE_COUNT": "2", "SCHEDULER_SCAN_QUEUE": "scan"}
    )
    roles = storage_roles(config)
    assert {name for name, role in roles.items() if role == "history"} == {"t1Executions", "t1JobHistory"}
    assert {name for name, role in roles.items() if role == "execution"} == {
        "exe",
        "exe-1",
        "exe-poison",
        "exe-1-poison",
    }
    assert roles["t1Jobs"] == roles["t1DueIndex"] == roles["scan"] == roles["t1JobCollections"] == "main"

    counted = Counted(
        creates=1,
        fires=4,
        create_ops={"table insert": 2},
        fire_ops={"queue put": 5, "queue delete": 4, "table get": 4, "table insert": 4, "table merge": 4},
        fire_targets={
            ("exe", "queue put"): 4,
            ("scan", "queue put"): 1,
            ("exe-1", "queue delete"): 4,
            ("t1Jobs", "table get"): 4,
            ("t1Executions", "table insert"): 4,
            ("t1JobHistory", "table merge"): 2,
            ("t1Jobs", "table merge"): 2,
        },
        roles=roles,
    )
    assert counted.per_role() == {"main": 1.75, "history": 1.5, "execution": 2.0}
    cost = counted.as_fire_cost()
    assert (cost.queue_requests, cost.other_queue_requests, cost.table_requests) == (2.0, 0.25, 3.0)
    assert cost.history_requests == 1.5
    assert cost.account_requests(split=True) == counted.per_role()


def test_the_recorded_count_adds_up() -> None:
    assert COUNTED.requests == pytest.approx(6.45)
    assert COUNTED.account_requests(split=True) == pytest.approx(
        {"main": 724 / 300, "history": 2.0, "execution": 611 / 300}  # 2.41, 2.00, 2.04
    )
    split = Deployment(6, 16, 1, 16, split_storage=True)
    value, name = max_fires_per_second(COUNTED, Limits(), split, Compute(10.0))
    assert (round(value), name) == (5_333, "due-index shards (partitions)")
