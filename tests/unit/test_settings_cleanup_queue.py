"""SCHEDULER_CLEANUP_QUEUE: the daily cleanup's own queue, named by a setting, checked like the others;
the local host gives it its default when a local.settings.json predates it; provisioning creates it."""

from __future__ import annotations

import pytest

from local_host.local_settings import binding_defaults
from scheduler_core import settings
from scheduler_core.adapters.azure.provision import all_queue_names
from scheduler_core.errors import ConfigurationError

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def test_the_cleanup_queue_has_a_default_and_can_be_renamed() -> None:
    assert settings.load(BASE).cleanup_queue == "scheduler-cleanup"
    assert settings.load({**BASE, "SCHEDULER_CLEANUP_QUEUE": "tidy-q"}).cleanup_queue == "tidy-q"


@pytest.mark.parametrize("value", ["Cleanup", "a", "clean--up", "x" * 60])
def test_a_cleanup_queue_name_storage_refuses_is_a_clear_error(value: str) -> None:
    with pytest.raises(ConfigurationError, match="SCHEDULER_CLEANUP_QUEUE"):
        settings.load({**BASE, "SCHEDULER_CLEANUP_QUEUE": value})


@pytest.mark.parametrize(
    "environ",
    [
        {"SCHEDULER_CLEANUP_QUEUE": "scheduler-scan"},
        {"SCHEDULER_CLEANUP_QUEUE": "scheduler-executions"},
        {"SCHEDULER_CLEANUP_QUEUE": "scheduler-executions-2", "SCHEDULER_EXECUTION_QUEUE_COUNT": "3"},
    ],
)
def test_the_cleanup_queue_is_no_other_queue(environ: dict[str, str]) -> None:
    """Scan and execution functions would take cleanup messages for theirs (and fail them to poison)."""
    with pytest.raises(ConfigurationError, match="must name different queues"):
        settings.load({**BASE, **environ})


def test_provisioning_creates_the_cleanup_queue_and_its_poison_queue_once() -> None:
    names = all_queue_names(settings.load({**BASE, "SCHEDULER_EXECUTION_QUEUE_COUNT": "2"}))
    assert {"scheduler-cleanup", "scheduler-cleanup-poison"} <= set(names)
    assert len(names) == len(set(names)) == 8  # scan, 2 execution queues, cleanup: each with its poison queue


def test_the_local_host_gives_binding_settings_their_defaults() -> None:
    environ = {"SCHEDULER_SCAN_QUEUE": "scan-mine"}
    applied = binding_defaults(environ)
    assert environ["SCHEDULER_SCAN_QUEUE"] == "scan-mine"  # what is set stays
    assert applied == {
        "SCHEDULER_EXECUTION_QUEUE": "scheduler-executions",
        "SCHEDULER_CLEANUP_QUEUE": "scheduler-cleanup",
        "SCHEDULER_DISPATCH_SCHEDULE": "45 * * * * *",
        "SCHEDULER_CLEANUP_SCHEDULE": "0 30 3 * * *",
    }
    assert binding_defaults(environ) == {}
