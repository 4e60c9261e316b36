"""The action seam: context, result, and the runner that dispatches on the action type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

#: At most this much of a response body is kept in a history message (as Azure Scheduler).
MAX_BODY_IN_HISTORY = 2048


@dataclass(frozen=True)
class ActionContext:
    """Who is firing and why: sent to targets as x-ms-scheduler-* headers, used in messages."""

    job_id: str  # ARM resource id of the job
    collection_id: str  # ARM resource id of the collection
    expected_time: datetime  # the occurrence (the same on every retry)
    execution_id: str  # one per attempt
    retry_count: int  # 0 on the first try


@dataclass(frozen=True)
class ActionResult:
    succeeded: bool
    message: str


class Sender(Protocol):
    """Runs one kind of action. Must not raise for a failure of the target: return a failed result."""

    def send(self, action: Mapping[str, Any], context: ActionContext) -> ActionResult: ...


class ActionRunner:
    """Runs an action (the ``action`` or ``errorAction`` object of a definition, secrets restored)."""

    def __init__(self, senders: Mapping[str, Sender]) -> None:
        self._senders = dict(senders)

    def register(self, action_type: str, sender: Sender) -> None:
        self._senders[action_type] = sender

    def run(self, action: Mapping[str, Any], context: ActionContext) -> ActionResult:
        action_type = str(action.get("type", ""))
        sender = self._senders.get(action_type)
        if sender is None:
            return ActionResult(False, f"{action_type or 'Unknown'} Action - this action type is not supported here")
        try:
            return sender.send(action, context)
        except Exception as exc:  # a sender bug must not lose the occurrence: record it as a failure
            return ActionResult(False, f"{action_type} Action - internal error: {type(exc).__name__}")
