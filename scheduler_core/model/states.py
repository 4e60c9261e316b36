"""The states and statuses of the domain, as enums whose values are the wire's words (``StrEnum``: a member
equals its text, so JSON and table properties hold the text itself)."""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    """Where a job is in its life. Clients set ``Enabled`` and ``Disabled``; the service sets the two final
    states, after which a job can only be read and deleted."""

    ENABLED = "Enabled"
    """The job fires at its occurrences."""
    DISABLED = "Disabled"
    """The job keeps its definition and counters but does not fire (its due-index row is dropped)."""
    COMPLETED = "Completed"
    """Final: the last occurrence of the series ran (or the series has none left)."""
    FAULTED = "Faulted"
    """Final: the last occurrence of the series failed after its retries (and its error action ran)."""

    @property
    def final(self) -> bool:
        """Whether the job has ended (``Completed`` or ``Faulted``): it cannot be changed any more."""
        return self in (JobState.COMPLETED, JobState.FAULTED)


class CollectionState(StrEnum):
    """The state of a job collection."""

    ENABLED = "Enabled"
    """Its enabled jobs fire."""
    DISABLED = "Disabled"
    """Every job in it was disabled with it (enabling the collection enables them again)."""
    SUSPENDED = "Suspended"
    """Set by an operator (as Azure Scheduler did for unpaid plans); jobs keep their own states."""
    DELETED = "Deleted"
    """A service state, never shown: the collection is being deleted (hidden from clients meanwhile)."""


class HistoryStatus(StrEnum):
    """The outcome of one attempt, as a history entry records it."""

    COMPLETED = "Completed"
    """The action succeeded (for HTTP: a 2xx answer after redirects)."""
    FAILED = "Failed"
    """The action failed (an error answer, a refused or broken connection, a timeout, a lost worker)."""
    POSTPONED = "Postponed"
    """Azure Scheduler's word for an attempt deferred by its service; kept for compatibility, not written."""
    SKIPPED = "Skipped"
    """An occurrence that did not run: ``overlapPolicy`` Skip (or BufferOne, with one already waiting) found
    the previous occurrence unfinished (api-version 2026-12-01-preview; the entry's message says why)."""


class ActionName(StrEnum):
    """Which of a job's actions an attempt ran."""

    MAIN = "MainAction"
    """The job's ``action``."""
    ERROR = "ErrorAction"
    """The job's ``action.errorAction``, run once the main action failed after its retries."""
    NOTIFICATION = "NotificationAction"
    """One of the job's ``notifications`` (api-version 2026-12-01-preview; 2016-03-01 never shows its
    entries)."""
