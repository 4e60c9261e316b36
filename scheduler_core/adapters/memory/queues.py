"""An in-memory message queue (the :class:`~scheduler_core.ports.ExecutionQueue` port) in simulated time:
it keeps each message with the instant it becomes visible, and a test takes the visible ones."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_core.adapters.memory.seam import FaultSeam, faultable, utc
from scheduler_core.errors import StorageError
from scheduler_core.ports import Clock

#: The longest visibility timeout a Storage queue accepts (seven days).
MAX_VISIBILITY = 7 * 24 * 3600


@dataclass(frozen=True)
class QueuedMessage:
    """A message as sent: its text, when it was sent and when it becomes visible (by the queue's clock)."""

    text: str
    sent_at: datetime
    visible_at: datetime


class MemoryQueue(FaultSeam):
    """A queue of :class:`QueuedMessage` in send order. Calling it (or :meth:`send`) sends a message, as
    ``MessageQueue.send`` does; :meth:`receive` takes the messages visible as of the clock. A visibility
    outside 0–7 days is refused with :class:`~scheduler_core.errors.StorageError` (400), as Azure refuses it."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self._clock = clock
        self._messages: list[QueuedMessage] = []
        self._lock = threading.Lock()

    @faultable
    def send(self, text: str, visibility: int = 0) -> None:
        """Send ``text``, invisible for ``visibility`` whole seconds (0: visible at once)."""
        if not 0 <= visibility <= MAX_VISIBILITY:
            raise StorageError(f"storage answered 400 (visibility timeout {visibility} out of range)", 400)
        now = utc(self._clock())
        with self._lock:
            self._messages.append(QueuedMessage(text, now, now + timedelta(seconds=visibility)))

    def __call__(self, text: str, visibility: int = 0, /) -> None:
        self.send(text, visibility)

    def receive(self, max_messages: int | None = None, *, at: datetime | None = None) -> list[QueuedMessage]:
        """Take (remove) the messages visible at ``at`` (default: the clock's now), earliest visible first
        and in send order among equals, at most ``max_messages``."""
        now = utc(at) if at is not None else utc(self._clock())
        with self._lock:
            visible = sorted((m for m in self._messages if m.visible_at <= now), key=lambda m: m.visible_at)
            taken = visible if max_messages is None else visible[:max_messages]
            gone = {id(message) for message in taken}
            self._messages = [message for message in self._messages if id(message) not in gone]
        return taken

    @faultable
    def behind(self, older_than: timedelta, now: datetime) -> bool:
        """Whether a message visible at ``now``, not yet received, was sent more than ``older_than`` before it
        (as ``MessageQueue.behind``: the consumers are behind)."""
        moment, cutoff = utc(now), utc(now) - older_than
        with self._lock:
            return any(m.visible_at <= moment and m.sent_at < cutoff for m in self._messages)

    def peek(self) -> list[QueuedMessage]:
        """Every message not yet received, visible or not, in send order (nothing is removed)."""
        with self._lock:
            return list(self._messages)

    def next_visible_at(self) -> datetime | None:
        """When the earliest message not yet received becomes visible (None: the queue is empty)."""
        with self._lock:
            return min((m.visible_at for m in self._messages), default=None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._messages)
