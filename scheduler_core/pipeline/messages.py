"""Queue messages of the pipeline: small, versioned JSON that names work and never carries secrets."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from scheduler_core.errors import ValidationError

VERSION = 1

Trigger = Literal["schedule", "manual", "retry"]
ActionKind = Literal["main", "error"]


@dataclass(frozen=True)
class ExecutionMessage:
    """One attempt of one occurrence of a job's action. The executor reloads the job it names."""

    job_partition: str
    job_row: str
    generation: int
    occurrence: str  # ISO 8601 UTC: the expected execution time
    attempt: int = 0
    action: ActionKind = "main"
    trigger: Trigger = "schedule"
    missed: int = 0  # > 0: a late run standing for this many occurrences missed during downtime
    last: bool = False  # the last occurrence of its series (the job ends Completed or Faulted after it)
    v: int = VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ExecutionMessage:
        try:
            data: dict[str, Any] = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValidationError("message", f"not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("v") != VERSION:
            raise ValidationError("message.v", f"unsupported execution message version {data.get('v')!r}")
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    @property
    def occurrence_time(self) -> datetime:
        return datetime.fromisoformat(self.occurrence.replace("Z", "+00:00"))

    @property
    def attempt_key(self) -> str:
        """What names this attempt within its job: occurrence, trigger, action and attempt number."""
        return f"{self.occurrence}|{self.trigger}|{self.action}|{self.attempt}"

    def stable_execution_id(self) -> str:
        """The execution id of this attempt: the same for every message and every delivery that names it
        (a redelivery, a watchdog's re-send, a second scan's copy), so receivers can de-duplicate: UUID
        version 5 of the job and the attempt key, 32 hex digits. (Messages of earlier versions carried an
        ``execution_id`` field; it is ignored.)"""
        return uuid.uuid5(EXECUTION_ID_NAMESPACE, f"{self.job_partition}|{self.job_row}|{self.attempt_key}").hex


#: Namespace of execution ids (UUID version 5 of the job identity and the attempt key).
EXECUTION_ID_NAMESPACE = uuid.UUID("6f1c9a57-4c7e-4e0b-9d4e-2f7f5b7f0a11")


@dataclass(frozen=True)
class ScanMessage:
    """Scan one due-index shard (one message per shard per tick)."""

    shard: str
    tick: str
    v: int = VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ScanMessage:
        try:
            data = json.loads(text)
            return cls(shard=str(data["shard"]), tick=str(data["tick"]))
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
            raise ValidationError("message", f"not a scan message: {exc}") from None
