"""The action runner: typed actions dispatched to the sender registered for their class; a class without a
sender, or a sender that raises, is a failed result and never an exception."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.actions import ActionContext, ActionResult, ActionRunner
from scheduler_core.actions.http import HttpSender
from scheduler_core.model.actions import (
    BasicAuthentication,
    HttpAction,
    Secret,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    StorageQueueAction,
)
from tests.actions.conftest import action_context
from tests.support.http_target import http_target


@dataclass
class RaisingSender:
    """**Test double**: a sender with a bug (it raises, quoting a secret); no real sender does so on purpose."""

    closed: int = 0

    def send(self, action: ServiceBusQueueAction | ServiceBusTopicAction, context: ActionContext) -> ActionResult:
        raise RuntimeError(f"bug while sending with {action.sas_key and action.sas_key.reveal()}")

    def close(self) -> None:
        self.closed += 1


@dataclass
class RecordingSender:
    """**Test double**: records what it was asked to send (to show the runner hands over the typed action)."""

    seen: list[StorageQueueAction] = field(default_factory=list)

    def send(self, action: StorageQueueAction, context: ActionContext) -> ActionResult:
        self.seen.append(action)
        return ActionResult(True, f"StorageQueue Action - recorded {context.execution_id}")


def test_an_action_class_without_a_sender_is_a_failed_result() -> None:
    runner = ActionRunner().register(HttpAction, HttpSender())
    result = runner.run(StorageQueueAction("acct", "q", "m"), action_context())
    assert result == ActionResult(False, "Not supported: this action type is not sent here | StorageQueue Action")
    assert runner.sender_for(StorageQueueAction) is None


def test_a_sender_that_raises_is_a_failed_result_naming_only_the_exception_class() -> None:
    broken = RaisingSender()
    runner = ActionRunner().register(ServiceBusQueueAction, broken).register(ServiceBusTopicAction, broken)
    action = ServiceBusTopicAction("ns", "t", "m")
    assert runner.run(action, action_context()) == ActionResult(
        False, "Internal error: RuntimeError | ServiceBusTopic Action"
    )
    runner.close()
    assert broken.closed == 1  # one sender registered for two classes is closed once


def test_each_class_goes_to_its_own_sender_as_the_typed_action() -> None:
    recorder = RecordingSender()
    runner = ActionRunner().register(StorageQueueAction, recorder).register(HttpAction, HttpSender())
    queue = StorageQueueAction("acct", "q", "m", Secret("sv=1&sig=x"))
    assert runner.run(queue, action_context("e7")).message == "StorageQueue Action - recorded e7"
    assert recorder.seen == [queue]
    with http_target() as target:
        auth = BasicAuthentication("alice", Secret("pässword"))
        result = runner.run(
            HttpAction(target.base_url + "/hook", "POST", body="hi", authentication=auth), action_context()
        )
    assert result.succeeded, result.message
    [seen] = target.received
    assert seen.headers["Authorization"] == "Basic YWxpY2U6cORzc3dvcmQ="  # Latin-1, as requests encodes it
    assert recorder.seen == [queue]
