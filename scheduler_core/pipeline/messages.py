"""Queue messages of the pipeline: small, versioned JSON that names work and never carries secrets."""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Literal

from scheduler_core.errors import ValidationError
from scheduler_core.model.actions import NotificationKind
from scheduler_core.model.claim import claim_key
from scheduler_core.model.retry import FailureFacts
from scheduler_core.model.states import ActionName

VERSION = 1


def _instant(text: str) -> datetime:
    """An instant as messages write it (ISO 8601, UTC, with ``Z``)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


#: How a message names which of the job's actions it runs (its wire spelling; :attr:`ExecutionMessage.action_name`
#: is the :class:`~scheduler_core.model.ActionName`): a notification by its
#: :class:`~scheduler_core.model.actions.NotificationKind`.
MessageAction = Literal["main", "error", "onFailure", "onRecovery", "deadline"]


class Cause(enum.StrEnum):
    """Why an attempt runs (the text is what messages and claim keys carry)."""

    SCHEDULE = "schedule"
    """The first attempt at an occurrence of the job's schedule."""
    RETRY = "retry"
    """A later attempt of a scheduled occurrence, after a failed one (the retry policy's delay)."""
    MANUAL = "manual"
    """Run now, on demand (``POST .../run``): outside the schedule, whatever the job's generation and state,
    retried as ``manual`` too."""
    BACKFILL = "backfill"
    """An occurrence of a past window, run on request (``POST .../backfill``, api-version
    2026-12-01-preview): dropped as a scheduled one is when the job changed or was disabled, retried as
    ``backfill`` too, and never ends the job."""
    REPLAY = "replay"
    """An occurrence run again on request (``POST .../history/{id}/rerun``, api-version 2026-12-01-preview):
    its own expected time, whatever the job's generation and state, as a run on demand; retried as ``replay``
    too, never counted against the schedule and never ending the job."""

    @property
    def on_request(self) -> bool:
        """Whether a client asked for this attempt's occurrence now (a run on demand or a replay): it runs
        whatever the job's generation and state, and never ends the job."""
        return self in (Cause.MANUAL, Cause.REPLAY)


@dataclass(frozen=True)
class Poll:
    """An operation a ``202 Accepted`` started, still running (``request.asyncPolling``): the URL to poll, when
    the operation began (ISO 8601 UTC: the attempt that started it), and the number of this poll (1, 2, ...)."""

    url: str
    since: str
    number: int

    @property
    def since_time(self) -> datetime:
        return _instant(self.since)


@dataclass(frozen=True)
class FlowWait:
    """An attempt waiting for its key's limits (``action.flowControl``): when it first reached them (ISO 8601
    UTC), and the start its key's rate reserved for it ("": none yet, or no rate)."""

    since: str
    at: str = ""

    @property
    def since_time(self) -> datetime:
        return _instant(self.since)

    @property
    def at_time(self) -> datetime | None:
        return _instant(self.at) if self.at else None


@dataclass(frozen=True)
class ExecutionMessage:
    """One attempt of one occurrence of a job's action. The executor reloads the job it names."""

    job_partition: str
    job_row: str
    generation: int
    occurrence: str  # ISO 8601 UTC: the expected execution time
    attempt: int = 0
    action: MessageAction = "main"
    cause: Cause = Cause.SCHEDULE
    missed: int = 0  # > 0: a late run standing for this many occurrences missed during downtime
    last: bool = False  # the last occurrence of its series (the job ends Completed or Faulted after it)
    #: A backfill run one occurrence after another: the last occurrence of its window (when this one's
    #: attempts are over, the next one up to it is sent). "": none (written only when set).
    until: str = ""
    #: overlapPolicy BufferOne: this copy of a waiting occurrence's message comes when the occurrence it waits
    #: for (``"<generation>|<occurrence>"``) would be taken as lost, so the waiting one runs even if that one's
    #: chain was lost (it does nothing when the waiting one already had its turn). "": none (written only
    #: when set).
    waits_for: str = ""
    #: A backfill's occurrence: the id of the backfill request it belongs to, so that two backfills over
    #: one window each run every occurrence once (their claims, execution ids and history entries are their
    #: own), while every copy of one backfill's message still runs once. Given when the message is made
    #: (None: a new id for a ``backfill`` message, "" for any other), carried by its retries, error action
    #: and the next occurrence of a one-after-another backfill. "": none (a message written before it).
    backfill: str | None = None
    #: A replay's request id: two replays of one occurrence each run once (claims, execution ids and history
    #: entries of their own), while every copy of one replay's message runs once; carried by its retries and
    #: error action. "": not a replay (written only when set).
    replay: str = ""
    #: When this attempt is due to start, where that is not its occurrence (ISO 8601 UTC): a retry's retry
    #: time, the send of an error action or of an occurrence released from waiting, a backfill's start slot.
    #: Lateness is measured against it (:attr:`due_time`). "": its occurrence (written only when set).
    due: str = ""
    #: When this action's first attempt at the occurrence started (ISO 8601 UTC), carried by its retries: the
    #: start of ``maxRetryDuration``. "": the first attempt itself, or a retry sent before messages carried it
    #: (its occurrence stands in; written only when set).
    first: str = ""
    #: An error action's: how the main action's last attempt failed (``@{failure.*}``). None: not an error
    #: action, or one sent before messages carried it (written only when set).
    failure: FailureFacts | None = None
    #: A poll of the operation this attempt started (``request.asyncPolling``): a step of the same attempt, with
    #: a claim of its own; its execution id is the attempt's. None: the attempt's call itself.
    poll: Poll | None = None
    #: Waiting for the limits of its ``flowControl`` key (None: it has not waited).
    flow: FlowWait | None = None
    v: int = VERSION

    def __post_init__(self) -> None:
        if self.backfill is None:
            run = uuid.uuid4().hex[:16] if self.cause == Cause.BACKFILL else ""
            object.__setattr__(self, "backfill", run)

    @property
    def cause_key(self) -> str:
        """The cause as the attempt's keys name it: ``backfill.<id>`` for a backfill's, ``replay.<id>`` for a
        replay's (one per request), else the cause."""
        request = self.backfill or self.replay
        return f"{self.cause}.{request}" if request else str(self.cause)

    def to_json(self) -> str:
        data = asdict(self)
        for optional in ("until", "waits_for", "backfill", "replay", "due", "first", "failure", "poll", "flow"):
            if not data[optional]:
                del data[optional]  # the message as it always was
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ExecutionMessage:
        """Read a message; one written before the field was named ``cause`` carries it as ``trigger``."""
        try:
            data: dict[str, Any] = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValidationError("message", f"not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("v") != VERSION:
            raise ValidationError("message.v", f"unsupported execution message version {data.get('v')!r}")
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        cause = str(fields.get("cause", data.get("trigger", Cause.SCHEDULE)))
        try:
            fields["cause"] = Cause(cause)
        except ValueError:
            raise ValidationError("message.cause", f"unknown cause {cause!r}") from None
        fields["backfill"] = str(fields.get("backfill") or "")  # a message written before it: none
        failure, poll, flow = fields.get("failure"), fields.get("poll"), fields.get("flow")
        try:
            if failure is not None:
                fields["failure"] = FailureFacts(**failure)
            if poll is not None:
                fields["poll"] = Poll(**poll)
            if flow is not None:
                fields["flow"] = FlowWait(**flow)
        except TypeError:
            raise ValidationError("message", "not the facts of a failure, a poll or a flow wait") from None
        return cls(**fields)

    @property
    def first_time(self) -> datetime | None:
        """When this action's first attempt at the occurrence started, if the message says (:attr:`first`)."""
        return _instant(self.first) if self.first else None

    @property
    def occurrence_time(self) -> datetime:
        return _instant(self.occurrence)

    @property
    def due_time(self) -> datetime | None:
        """When this attempt was due to start: its :attr:`due`, else its occurrence for the first attempt of
        the main action; None when unknown (a later attempt sent before messages carried ``due``)."""
        if self.due:
            return _instant(self.due)
        return self.occurrence_time if self.attempt == 0 and self.action == "main" else None

    @property
    def action_name(self) -> ActionName:
        """Which of the job's actions this attempt runs."""
        if self.action == "main":
            return ActionName.MAIN
        return ActionName.ERROR if self.action == "error" else ActionName.NOTIFICATION

    @property
    def notification(self) -> NotificationKind | None:
        """The notification this attempt sends (None: it runs the main or the error action)."""
        return NotificationKind(self.action) if self.action_name is ActionName.NOTIFICATION else None

    @property
    def survives_edits(self) -> bool:
        """Whether this attempt runs whatever the job's generation and state: a run on demand, a replay, a
        notification (about an occurrence that has ended)."""
        return self.cause.on_request or self.action_name is ActionName.NOTIFICATION

    @property
    def running_key(self) -> str:
        """How a job names this message's occurrence as its unfinished one (``Job.running``, overlapPolicy)."""
        return f"{self.generation}|{self.occurrence}"

    @property
    def is_main(self) -> bool:
        """Whether this attempt runs the job's main action (not its error action)."""
        return self.action_name is ActionName.MAIN

    @property
    def attempt_key(self) -> str:
        """What names this attempt within its job: occurrence, cause (with its backfill), action and attempt
        number."""
        return f"{self.occurrence}|{self.cause_key}|{self.action}|{self.attempt}"

    @property
    def claim_row(self) -> str:
        """The row key of this attempt's claim (:func:`~scheduler_core.model.claim.claim_key`); a poll's is its
        own (``...poll<n>``)."""
        step = f"{self.action}.poll{self.poll.number}" if self.poll is not None else self.action
        return claim_key(self.occurrence_time, step, self.attempt, self.cause_key)

    def stable_execution_id(self) -> str:
        """The execution id of this attempt: the same for every message and every delivery that names it
        (a redelivery, a watchdog's re-send, a second scan's copy), so receivers can de-duplicate: UUID
        version 5 of the job and the attempt key, 32 hex digits. (Messages of earlier versions carried an
        ``execution_id`` field; it is ignored.)"""
        return uuid.uuid5(EXECUTION_ID_NAMESPACE, f"{self.job_partition}|{self.job_row}|{self.attempt_key}").hex

    def message_id(self) -> str:
        """The Standard Webhooks ``webhook-id`` of this action's call: the execution id of its first attempt,
        the same on every retry and redelivery ("the same when resent", as the specification asks)."""
        first = self.cause if self.cause in (Cause.MANUAL, Cause.BACKFILL, Cause.REPLAY) else Cause.SCHEDULE
        return replace(self, attempt=0, cause=first).stable_execution_id()


#: Namespace of execution ids (UUID version 5 of the job identity and the attempt key).
EXECUTION_ID_NAMESPACE = uuid.UUID("6f1c9a57-4c7e-4e0b-9d4e-2f7f5b7f0a11")


@dataclass(frozen=True)
class ScanMessage:
    """Scan one due-index shard (one message per shard per tick), or the rest of one: the rows after the row
    key ``after``, handed on by a scan that found more rows than one worker should send. A *watch look*
    (``watch``) looks only at the shard's watch entries due by the time it runs: it is sent, delayed, for
    the slot in which entries it knows of fall due (:mod:`scheduler_core.pipeline.watchdog`)."""

    shard: str
    tick: str
    after: str = ""
    watch: bool = False
    v: int = VERSION

    def to_json(self) -> str:
        data = asdict(self)
        if not self.after:
            del data["after"]  # a whole shard: the message as it always was
        if not self.watch:
            del data["watch"]
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ScanMessage:
        try:
            data = json.loads(text)
            return cls(
                shard=str(data["shard"]),
                tick=str(data["tick"]),
                after=str(data.get("after") or ""),
                watch=data.get("watch") is True,
            )
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise ValidationError("message", f"not a scan message: {exc}") from None
