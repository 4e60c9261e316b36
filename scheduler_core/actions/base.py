"""The action seam: context, result, the sender protocol and the runner that dispatches a typed action
(:data:`~scheduler_core.model.actions.Action`) to the sender registered for its class.

A new kind of action is one model class, one parser (``scheduler_core.definitions``) and one sender
registered here; :meth:`ActionRunner.run` matches every class of the union, and ``mypy`` reports the
``match`` that lacks a new one (``assert_never``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar, assert_never, cast

from scheduler_core.actions.outcome import outcome_message
from scheduler_core.model.actions import (
    Action,
    HttpAction,
    ServiceBusQueueAction,
    ServiceBusTopicAction,
    StorageQueueAction,
)
from scheduler_core.model.retry import Failure, FailureFacts

__all__ = ["MAX_BODY_IN_HISTORY", "ActionContext", "ActionResult", "ActionRunner", "Failure", "Sender"]

#: At most this much of a response body is kept in a history message (as Azure Scheduler).
MAX_BODY_IN_HISTORY = 2048

A = TypeVar("A", bound=Action)
A_contra = TypeVar("A_contra", contravariant=True)


@dataclass(frozen=True)
class ActionContext:
    """Who is firing and why: sent to targets as x-ms-scheduler-* headers, used in messages, and the values
    of the placeholders (:mod:`scheduler_core.actions.placeholders`) when ``expand_placeholders`` is on.

    ``message_id`` names what every attempt of one occurrence's action delivers (the Standard Webhooks
    ``webhook-id``: the same on each retry, so a receiver drops a repeat); None: the ``execution_id``.
    ``started_at`` is when the attempt started on the executor's clock (None: now)."""

    job_id: str  # ARM resource id of the job
    collection_id: str  # ARM resource id of the collection
    expected_time: datetime  # the occurrence (the same on every retry)
    execution_id: str  # one per attempt
    retry_count: int  # 0 on the first try
    started_at: datetime | None = None
    expand_placeholders: bool = False  # the job's action.expandPlaceholders
    message_id: str | None = None
    #: An error action's: how the main action failed (``@{failure.*}``); None: not known.
    failure: FailureFacts | None = None
    #: The URL of the operation a ``202 Accepted`` started that this call polls (``request.asyncPolling``: the
    #: HTTP sender GETs it; a 202 again, with or without ``Location``, means it still runs). "": the action's
    #: own call.
    poll: str = ""
    #: The app's host name (``myapp.azurewebsites.net``; "" when unknown): ``@{historyUrl}`` links its dashboard.
    app_host: str = ""

    @property
    def job_name(self) -> str:
        """The job's name (the last segment of its resource id)."""
        return self.job_id.rstrip("/").rsplit("/", 1)[-1]

    @property
    def collection_name(self) -> str:
        """The job collection's name (the last segment of its resource id)."""
        return self.collection_id.rstrip("/").rsplit("/", 1)[-1]

    @property
    def delivery_id(self) -> str:
        """``message_id``, or the execution id when the context has none."""
        return self.message_id or self.execution_id

    def actual_time(self) -> datetime:
        """When the attempt started: ``started_at``, or now (UTC)."""
        return self.started_at if self.started_at is not None else datetime.now(UTC)


@dataclass(frozen=True)
class ActionResult:
    """The outcome of one attempt: success, the history message (the outcome first, never quoting a secret:
    :mod:`~scheduler_core.actions.outcome`), and the HTTP status
    code of the answer when the target gave one (the final answer after redirects; None for a call that got
    no answer and for actions other than HTTP).

    A failed result also says how it failed (``failure``; given or not, a result with a status code failed
    by :attr:`Failure.STATUS`, any other by :attr:`Failure.ERROR`), the status of a queue service's refusal
    (``service_status``: the storage service's HTTP status, or the one Service Bus's REST API answers for the
    broker's error; None for HTTP actions, whose status is ``status_code``), what the target said
    (``body``: an excerpt, secrets masked, for ``@{failure.body}``), and how long it asked to be left alone
    (``retry_after``: an HTTP ``Retry-After`` on a 429 or 503)."""

    succeeded: bool
    message: str
    status_code: int | None = None
    failure: Failure | None = None
    service_status: int | None = None
    body: str = ""
    retry_after: timedelta | None = None
    #: ``request.asyncPolling``: the operation the call started (or polled) still runs; poll this URL next
    #: (after ``retry_after`` when the answer said). None: the call's answer is its outcome.
    poll: str | None = None

    def __post_init__(self) -> None:
        if self.succeeded or self.poll is not None:
            object.__setattr__(self, "failure", None)
        elif self.failure is None:
            failed_by = Failure.STATUS if self.failure_status is not None else Failure.ERROR
            object.__setattr__(self, "failure", failed_by)

    @property
    def failure_status(self) -> int | None:
        """The status a failure carries: the HTTP answer's, else a queue service's (None: none)."""
        return self.status_code if self.status_code is not None else self.service_status


class Sender(Protocol[A_contra]):
    """Sends one kind of action (``A_contra``: a class of :data:`Action`, or a union of them). Must not
    raise for a failure of the target: it returns a failed result whose message says why."""

    def send(self, action: A_contra, context: ActionContext) -> ActionResult: ...


class ActionRunner:
    """Runs an action (a job's ``main`` or ``error`` action) with the sender registered for its class.
    An action whose class has no sender, or whose sender raises, is a failed result, never an exception."""

    def __init__(self) -> None:
        self._senders: dict[type[Any], Sender[Any]] = {}

    def register(self, kind: type[A], sender: Sender[A]) -> ActionRunner:
        """Send actions of class ``kind`` with ``sender`` (replacing any sender it had); returns the runner."""
        self._senders[kind] = sender
        return self

    def sender_for(self, kind: type[A]) -> Sender[A] | None:
        """The sender registered for ``kind``, if any."""
        return cast("Sender[A] | None", self._senders.get(kind))

    def senders(self) -> list[Sender[Any]]:
        """Each registered sender once (one may send several kinds)."""
        return list({id(sender): sender for sender in self._senders.values()}.values())

    def close(self) -> None:
        """Close every sender that holds connections (those with a ``close`` method)."""
        for sender in self.senders():
            close = getattr(sender, "close", None)
            if callable(close):
                close()

    def run(self, action: Action, context: ActionContext) -> ActionResult:
        """Send ``action`` with its class's sender: the sender's result, or a failed one when no sender
        is registered for the class (``Not supported: this action type is not sent here | <Type> Action``) or
        the sender raised (``Internal error: <exception class> | <Type> Action``, nothing more, as an
        exception may quote a secret)."""
        match action:
            case HttpAction():
                return self._send(action, self.sender_for(HttpAction), context)
            case StorageQueueAction():
                return self._send(action, self.sender_for(StorageQueueAction), context)
            case ServiceBusQueueAction():
                return self._send(action, self.sender_for(ServiceBusQueueAction), context)
            case ServiceBusTopicAction():
                return self._send(action, self.sender_for(ServiceBusTopicAction), context)
            case _:
                assert_never(action)

    @staticmethod
    def _send(action: A, sender: Sender[A] | None, context: ActionContext) -> ActionResult:
        type_name = action.type_name
        if sender is None:
            text = outcome_message(type_name, "Not supported", "this action type is not sent here")
            return ActionResult(False, text, failure=Failure.ERROR)
        try:
            return sender.send(action, context)
        except Exception as exc:  # a sender bug must not lose the occurrence: record it as a failure
            return ActionResult(False, outcome_message(type_name, "Internal error", type(exc).__name__))
