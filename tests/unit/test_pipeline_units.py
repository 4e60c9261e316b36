"""Pure units of the pipeline and storage keys: retry policies, outbound policy, keys, messages, paging."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_core.actions.outbound import OutboundPolicy, OutboundRefused
from scheduler_core.api.paging import Paging, paginate, parse_filter, parse_paging
from scheduler_core.api.paths import parse_path
from scheduler_core.definitions import read_retry_policy
from scheduler_core.errors import NotFoundError, ValidationError
from scheduler_core.pipeline.attempts import visibility_seconds
from scheduler_core.pipeline.messages import Cause, ExecutionMessage, ScanMessage
from scheduler_core.storage.keys import (
    CollectionRef,
    JobRef,
    due_row_key,
    escape_key,
    history_row_key,
    shard_of,
)


def test_default_retry_policy_is_four_retries_every_thirty_seconds() -> None:
    policy = read_retry_policy(None)  # an action without a policy
    assert (policy.kind, policy.retry_count, policy.interval) == ("Fixed", 4, timedelta(seconds=30))
    assert [policy.has_retry_after(a) for a in range(6)] == [True, True, True, True, False, False]


def test_none_and_fixed_policies() -> None:
    assert not read_retry_policy({"retryType": "None"}).has_retry_after(0)
    fixed = read_retry_policy({"retryType": "Fixed", "retryInterval": "PT2M", "retryCount": 1})
    assert fixed.delay(0) == timedelta(minutes=2)
    assert fixed.has_retry_after(0)
    assert not fixed.has_retry_after(1)


def test_exponential_policy_doubles_caps_and_jitters() -> None:
    policy = read_retry_policy(
        {
            "retryType": "Exponential",
            "retryInterval": "PT10S",
            "retryCount": 8,
            "maxRetryInterval": "PT1M",
        }
    )
    rng = random.Random(7)
    delays = [policy.delay(a, rng).total_seconds() for a in range(5)]
    for delay, nominal in zip(delays, (10, 20, 40, 60, 60), strict=True):
        assert nominal * 0.9 <= delay <= nominal * 1.1
    assert len({round(d, 3) for d in delays}) == 5  # jittered, not identical


def test_metadata_endpoints_are_refused_unless_allowed() -> None:
    policy = OutboundPolicy()
    for host in ("169.254.169.254", "metadata.google.internal", "[fe80::1]", "169.254.1.1"):
        with pytest.raises(OutboundRefused):
            policy.check_host(host)
    policy.check_host("127.0.0.1")
    policy.check_host("example.invalid")  # unresolvable: left to the call to fail
    OutboundPolicy(allow_metadata_endpoints=True).check_host("169.254.169.254")


def test_keys_escape_forbidden_characters_and_match_case_insensitively() -> None:
    assert escape_key("A/b\\c#d?e%f|g") == "a%2Fb%5Cc%23d%3Fe%25f%7Cg"
    one = JobRef(CollectionRef("Sub", "RG", "Coll"), "Job")
    two = JobRef(CollectionRef("sub", "rg", "coll"), "JOB")
    assert one.identity == two.identity
    assert "/" not in one.identity
    assert "#" not in one.identity
    assert (
        one.resource_id
        == "/subscriptions/Sub/resourceGroups/RG/providers/Microsoft.Scheduler/jobCollections/Coll/jobs/Job"
    )
    with pytest.raises(ValidationError, match="too long"):
        _ = JobRef(CollectionRef("s", "r", "c"), "x" * 2000).row_key


def test_shards_are_stable_and_spread() -> None:
    identities = [JobRef(CollectionRef("s", "r", "c"), f"job{i}").identity for i in range(1600)]
    shards = [shard_of(identity, 16) for identity in identities]
    assert shards == [shard_of(identity, 16) for identity in identities]
    counts = {shard: shards.count(shard) for shard in set(shards)}
    assert len(counts) == 16
    assert min(counts.values()) > 60


def test_due_and_history_keys_sort_by_time() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    keys = [due_row_key(t + timedelta(seconds=s), "id", 1) for s in (0, 1, 59, 3600)]
    assert keys == sorted(keys)
    history = [history_row_key(t + timedelta(seconds=s), "x") for s in (0, 1, 2)]
    assert history == sorted(history, reverse=True)  # newest first


def test_visibility_shows_messages_one_to_two_seconds_early_and_never_negative() -> None:
    now = datetime(2026, 1, 1, 0, 0, 0, 300000, tzinfo=UTC)
    assert visibility_seconds(datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC), now) == 28
    assert visibility_seconds(datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC), now) == 0
    assert visibility_seconds(datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC), now) == 0


def test_messages_round_trip_and_reject_other_versions() -> None:
    message = ExecutionMessage("p", "r", 3, "2026-01-01T00:00:00Z", attempt=2, action="error", missed=4, last=True)
    assert ExecutionMessage.from_json(message.to_json()) == message
    assert message.occurrence_time == datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ValidationError):
        ExecutionMessage.from_json('{"v": 2}')
    with pytest.raises(ValidationError):
        ExecutionMessage.from_json("not json")
    scan = ScanMessage("0003", "2026-01-01T00:00:00Z")
    assert ScanMessage.from_json(scan.to_json()) == scan


def test_arm_paths() -> None:
    path = parse_path(
        "subscriptions/S/resourcegroups/R/providers/Microsoft.Scheduler/jobCollections/C/jobs/J%20x/history"
    )
    assert (path.kind, path.subscription, path.resource_group, path.collection, path.job) == (
        "job_history",
        "S",
        "R",
        "C",
        "J x",
    )
    assert parse_path("subscriptions/S/providers/MICROSOFT.SCHEDULER/jobcollections").kind == "subscription_collections"
    assert (
        parse_path("subscriptions/S/resourceGroups/R/providers/Microsoft.Scheduler/jobCollections/C/disable").action
        == "disable"
    )
    with pytest.raises(NotFoundError):
        parse_path("subscriptions/S/resourceGroups/R/providers/Microsoft.Web/sites/x")


def test_paging_and_filters() -> None:
    items = list(range(7))
    page = paginate(items, Paging(top=3, skip=0), "http://h/x?api-version=1&%24top=3")
    assert page.items == [0, 1, 2]
    assert page.next_link == "http://h/x?api-version=1&$top=3&$skip=3"
    assert paginate(items, Paging(top=3, skip=6), "http://h/x").next_link is None
    assert parse_paging({"$top": "5", "$skip": "2"}) == Paging(5, 2)
    assert parse_filter({"$filter": "State eq 'ENABLED'"}, "state", ("Enabled", "Disabled")) == "Enabled"
    assert parse_filter({"$filter": "status eq failed"}, "status", ("Completed", "Failed")) == "Failed"
    with pytest.raises(ValidationError, match=r"\$filter"):
        parse_filter({"$filter": "state eq 'Sleeping'"}, "state", ("Enabled",))


def test_an_execution_message_names_its_cause_and_reads_one_written_as_trigger() -> None:
    message = ExecutionMessage("p", "r", 7, "2030-01-01T00:00:00Z", attempt=1, cause=Cause.RETRY)
    text = message.to_json()
    assert json.loads(text)["cause"] == "retry" and "trigger" not in json.loads(text)
    assert ExecutionMessage.from_json(text) == message
    # a message queued by a version that called the field "trigger" is read the same
    legacy = json.dumps({**{k: v for k, v in json.loads(text).items() if k != "cause"}, "trigger": "manual"})
    assert ExecutionMessage.from_json(legacy) == replace(message, cause=Cause.MANUAL)
    assert ExecutionMessage.from_json(legacy).attempt_key == "2030-01-01T00:00:00Z|manual|main|1"
    with pytest.raises(ValidationError) as refused:
        ExecutionMessage.from_json(text.replace('"retry"', '"whim"'))
    assert refused.value.path == "message.cause"
