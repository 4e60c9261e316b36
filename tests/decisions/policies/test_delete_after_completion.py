"""deleteAfterCompletion (api-version 2026-12-01-preview): a job that asks for it is deleted when it ends
completed, never when it ends faulted nor while it goes on. The rule (pure); the pipeline acting on it (the
job and its place under maxJobCount gone) is shown end to end in
``tests/e2e/policies/test_delete_after_completion.py``."""

from __future__ import annotations

from scheduler_core import policies
from scheduler_core.model import JobState


def test_delete_after_completion_only_when_completed() -> None:
    assert policies.deletes(True, JobState.COMPLETED)
    assert not policies.deletes(True, JobState.FAULTED)
    assert not policies.deletes(True, None)
    assert not policies.deletes(False, JobState.COMPLETED)
