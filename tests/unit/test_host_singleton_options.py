"""The local host's timer singleton settings and names are the Functions host's: host.json ``singleton`` with the
WebJobs SDK's defaults and ranges, host ids as the host accepts them, and the blobs of locks and statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local_host.hostjson import SingletonOptions, load_host_json
from local_host.leases import (
    HOST_ID_SETTING,
    check_host_id,
    default_host_id,
    listener_lock_id,
    lock_blob_name,
    next_renewal_delay,
    resolve_host_id,
    status_blob_name,
)
from local_host.schedule_status import ScheduleStatus
from scheduler_core.errors import ConfigurationError


def host_json(tmp_path: Path, singleton: object) -> Path:
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"version": "2.0", "singleton": singleton}), encoding="utf-8")
    return path


def test_without_a_singleton_section_the_lock_is_the_sdks_default_60_s_and_60_s(tmp_path: Path) -> None:
    (tmp_path / "host.json").write_text('{"version": "2.0"}', encoding="utf-8")
    assert load_host_json(tmp_path / "host.json").singleton == SingletonOptions(60.0, 60.0)
    assert load_host_json(tmp_path / "missing.json").singleton == SingletonOptions(60.0, 60.0)


def test_the_singleton_section_sets_the_listener_lock(tmp_path: Path) -> None:
    path = host_json(tmp_path, {"listenerLockPeriod": "00:00:15", "listenerLockRecoveryPollingInterval": "00:00:20"})
    assert load_host_json(path).singleton == SingletonOptions(15.0, 20.0)
    only_period = host_json(tmp_path, {"listenerLockPeriod": "00:00:30"})
    assert load_host_json(only_period).singleton == SingletonOptions(30.0, 60.0)


def test_timespan_max_value_turns_the_recovery_polling_off(tmp_path: Path) -> None:
    path = host_json(tmp_path, {"listenerLockRecoveryPollingInterval": "10675199.02:48:05.4775807"})
    assert load_host_json(path).singleton.listener_lock_recovery_polling_interval is None


@pytest.mark.parametrize(
    "section",
    [
        {"listenerLockPeriod": "00:00:14"},  # Azure Storage leases last 15 to 60 s
        {"listenerLockPeriod": "00:01:01"},
        {"listenerLockRecoveryPollingInterval": "00:00:10"},  # at least the shortest lease
        "15 seconds",
    ],
)
def test_values_out_of_the_real_hosts_ranges_are_refused(tmp_path: Path, section: object) -> None:
    with pytest.raises(ConfigurationError, match="singleton"):
        load_host_json(host_json(tmp_path, section))


def test_the_lock_and_status_blobs_are_named_as_the_functions_host_names_them() -> None:
    lock = listener_lock_id("myapp", "dispatch_tick")
    assert lock == "myapp/Host.Functions.dispatch_tick.Listener"
    assert lock_blob_name(lock) == "locks/myapp/Host.Functions.dispatch_tick.Listener"
    assert status_blob_name("myapp", "dispatch_tick") == "timers/myapp/Host.Functions.dispatch_tick/status"


def test_the_host_id_is_the_given_one_else_the_setting_else_core_tools_default(tmp_path: Path) -> None:
    assert resolve_host_id("given", tmp_path, {HOST_ID_SETTING: "configured"}) == "given"
    assert resolve_host_id(None, tmp_path, {HOST_ID_SETTING: "configured"}) == "configured"
    derived = resolve_host_id(None, tmp_path, {})
    assert derived == default_host_id(tmp_path) == default_host_id(tmp_path / "." / "")  # stable
    assert derived is not None and check_host_id(derived) == derived
    assert default_host_id(tmp_path / "other") != derived  # another project, another app
    assert resolve_host_id(None, None, {}) is None  # an in-process host of its own: no lock to share


@pytest.mark.parametrize("bad", ["", "UPPER", "a--b", "-a", "a-", "a_b", "x" * 33])
def test_a_host_id_the_functions_host_refuses_is_refused(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="host id"):
        check_host_id(bad)


def test_a_status_written_by_the_functions_host_is_read() -> None:
    # Newtonsoft's dates, and default(DateTime) for a timer that never ran.
    text = '{"Last":"0001-01-01T00:00:00","Next":"2026-11-29T09:01:00+00:00","LastUpdated":"2026-11-29T09:00:12.5"}'
    status = ScheduleStatus.from_json(text)
    assert status.last is None
    assert status.next.isoformat() == "2026-11-29T09:01:00+00:00"
    assert status.last_updated.isoformat() == "2026-11-29T09:00:12.500000+00:00"
    assert ScheduleStatus.from_json(status.to_json()) == status


def test_a_lease_is_renewed_at_half_its_period_and_sooner_after_5xx_failures() -> None:
    assert next_renewal_delay(15.0, 15.0, renewed=True) == 7.5
    waits = [7.5]
    for _ in range(4):
        waits.append(next_renewal_delay(15.0, waits[-1], renewed=False))
    assert waits == [7.5, 3.75, 1.875, 1.0, 1.0]  # at least a second apart
    # A renewal at 7.5 s that fails is tried again at 11.25, 13.125 and 14.125 s: before the lease expires at 15.
    assert 7.5 + sum(waits[1:4]) < 15.0
    assert next_renewal_delay(15.0, 1.0, renewed=True) == 7.5
