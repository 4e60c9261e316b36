"""One exception tree for the whole service, rooted at :class:`SchedulerError`.

Every error that can reach a client carries an HTTP ``status`` and an ARM error ``code`` so that the
management API can answer with the ARM envelope ``{"error": {"code": ..., "message": ...}}``.
Messages name the offending field (as a JSON path such as ``properties.recurrence.schedule.hours[0]``)
and the rule it broke; they never contain secret values.
"""

from __future__ import annotations

from typing import Any


class SchedulerError(Exception):
    """Base class of every error raised by ``scheduler_core``."""

    status: int = 500
    code: str = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_arm(self) -> dict[str, Any]:
        """The ARM error body for this error."""
        return {"error": {"code": self.code, "message": self.message}}


class ValidationError(SchedulerError):
    """A request or definition breaks a rule. ``path`` names the field (JSON path), may be empty."""

    status = 400
    code = "BadRequest"

    def __init__(self, path: str, rule: str) -> None:
        self.path = path
        self.rule = rule
        super().__init__(f"{path}: {rule}" if path else rule)


class PayloadTooLargeError(ValidationError):
    """A request body or definition exceeds a documented size limit."""

    status = 413
    code = "RequestEntityTooLarge"


class AuthenticationError(SchedulerError):
    """The request carries no valid credentials."""

    status = 401
    code = "AuthenticationFailed"


class ForbiddenError(SchedulerError):
    """The credentials are valid but do not grant access to this resource."""

    status = 403
    code = "AuthorizationFailed"


class NotFoundError(SchedulerError):
    """The addressed resource does not exist."""

    status = 404
    code = "ResourceNotFound"


class MethodNotAllowedError(SchedulerError):
    """The HTTP method is not supported on this path."""

    status = 405
    code = "InvalidHttpVerb"


class ConflictError(SchedulerError):
    """The request conflicts with the stored state (final job states, races)."""

    status = 409
    code = "Conflict"


class WriteRaceError(SchedulerError):
    """A storage write lost a race with another writer: the row changed since it was read (ETag
    mismatch) or was created meanwhile. The only error a concurrency loop retries (it reads again and
    re-decides); every other error is final and reaches the client as raised."""


class AlreadyExistsError(ConflictError, WriteRaceError):
    """A create found the row already there (another request created it first)."""


class QuotaExceededError(ConflictError):
    """A job collection quota (``maxJobCount``, ``maxRecurrence``) or plan limit would be exceeded."""

    code = "QuotaExceeded"


class RegionNotActiveError(ConflictError):
    """A write to the standby region (docs/regions.md): nothing is stored; the active region takes writes."""

    code = "RegionNotActive"


class PreconditionFailedError(SchedulerError):
    """An ``If-Match`` ETag did not match the stored resource."""

    status = 412
    code = "PreconditionFailed"


class EtagMismatchError(PreconditionFailedError, WriteRaceError):
    """A write guarded by an ETag found the row changed or gone. With a client's ``If-Match`` it is the
    client's 412; without one the service reads again and retries."""


class ContentionError(SchedulerError):
    """A guarded write kept losing races with other writers of the same row for longer than its time budget
    (the job's counters: :func:`scheduler_core.pipeline.counters.count_attempt`). Not a
    :class:`WriteRaceError`: the loop that raises it has retried already. The pipeline lets it fail the queue
    message, whose retry does the work again (idempotently); never answered to a client."""

    status = 503
    code = "ServiceUnavailable"


class ConfigurationError(SchedulerError):
    """A setting is missing or malformed. Raised at start-up, never to a client."""

    code = "ConfigurationError"


class StorageError(SchedulerError):
    """A store could not be reached or answered with an error the store does not map to a domain error
    (:class:`AlreadyExistsError`, :class:`EtagMismatchError`). ``storage_status`` is the storage service's
    HTTP status (None: no answer, the connection failed or timed out). Adapters raise it in place of their
    SDK's exceptions (the foreign error is its ``__cause__``). A client sees a 500 as for any unexpected
    failure; the pipeline retries it while it is :attr:`transient`."""

    def __init__(self, message: str, storage_status: int | None = None) -> None:
        super().__init__(message)
        self.storage_status = storage_status

    @property
    def transient(self) -> bool:
        """Whether trying again may help: no answer (connection error, timeout), 408, 429 or a 5xx."""
        status = self.storage_status
        return status is None or status in (408, 429) or status >= 500

    @property
    def surely_not_applied(self) -> bool:
        """Whether the store certainly refused the request (a 4xx other than 408 and 429), as opposed to a
        failure after which a write may have landed."""
        status = self.storage_status
        return status is not None and 400 <= status < 500 and status not in (408, 429)
