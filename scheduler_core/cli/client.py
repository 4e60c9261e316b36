"""A small client of the Microsoft.Scheduler REST API on ``requests``, in the api-version of its connection
(default: the newest, 2026-12-01-preview; ``--api-version``).

Every method is one documented ARM operation (``scheduler_core/api/openapi``); an answer of 400 or more
raises :class:`ApiError` with the ARM error's code and message as the service sent them, and no answer at
all raises :class:`Unreachable`. Names are percent-encoded one segment at a time. ``nextLink`` is
followed by its path and query only, on the configured endpoint, so the key never goes to another host.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import requests

from scheduler_core.adapters.azure import credentials
from scheduler_core.adapters.azure.credentials import Credential
from scheduler_core.cli.common import (
    EXIT_API_ERROR,
    EXIT_AUTH,
    EXIT_NOT_FOUND,
    EXIT_UNREACHABLE,
    MAX_FILE_DEPTH,
    CliError,
    Connection,
)
from scheduler_core.definitions import CLASSIC_VERSION, PREVIEW_VERSION, read_json, wire_of
from scheduler_core.errors import ValidationError

#: The newest api-version (the default of every command), and the classic one of Azure Scheduler.
API_VERSION = PREVIEW_VERSION
CLASSIC_API_VERSION = CLASSIC_VERSION
PROVIDER = "providers/Microsoft.Scheduler"
USER_AGENT = "scheduler-core-cli"
#: The dashboard's read-only job API (``scheduler_core/dashboard``): a stored job's next occurrences.
DASHBOARD_JOB_API = "/dashboard/api/job"


class ApiError(CliError):
    """The API answered with an error: ``status``, and the ARM error's ``code`` and ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.arm_code = code
        self.arm_message = message
        exit_code = {401: EXIT_AUTH, 403: EXIT_AUTH, 404: EXIT_NOT_FOUND}.get(status, EXIT_API_ERROR)
        super().__init__(f"{message} ({code}, HTTP {status})" if code else f"HTTP {status}: {message}", exit_code)

    @classmethod
    def from_response(cls, response: requests.Response) -> ApiError:
        try:
            body = read_json(response.content, "the error answer", MAX_FILE_DEPTH)
        except ValidationError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and ("code" in error or "message" in error):
            return cls(response.status_code, str(error.get("code") or ""), str(error.get("message") or ""))
        text = " ".join(response.text.split())[:300] or response.reason or "no error body"
        return cls(response.status_code, "", text)


class Unreachable(CliError):
    """No answer from the endpoint."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_UNREACHABLE)


def _segment(name: str) -> str:
    """One path segment. ``.`` and ``..`` are encoded (%2E), or a URL library would resolve them as
    relative path steps and address another resource; the service refuses them by name."""
    if name in (".", ".."):
        return name.replace(".", "%2E")
    return quote(name, safe="")


@dataclass(frozen=True)
class Answer:
    """A successful answer: status, JSON body (None when empty) and ETag."""

    status: int
    body: Any
    etag: str | None


def default_credential() -> Credential:
    """ENTRA ID SIGN-IN: azure-identity's ``DefaultAzureCredential`` (environment variables, workload or
    managed identity, the Azure CLI's or PowerShell's sign-in, ...), imported on first use."""
    return credentials.default_credential()


#: A token is fetched again when it expires within this many seconds (long imports outlive a token).
TOKEN_REFRESH_MARGIN = 300


class EntraToken:
    """ENTRA ID SIGN-IN: an access token for one scope, from a credential, fetched on first use and again
    shortly before it expires. A credential that cannot give one is a :class:`CliError` (exit status 4)."""

    def __init__(self, scope: str, credential: Callable[[], Credential] | None = None) -> None:
        self.scope = scope
        self._make = credential
        self._credential: Credential | None = None
        self._token = ""
        self._expires_on = 0

    def value(self) -> str:
        if self._token and self._expires_on - time.time() > TOKEN_REFRESH_MARGIN:
            return self._token
        try:
            if self._credential is None:
                self._credential = (self._make or default_credential)()
            self._token, self._expires_on = credentials.access_token(self._credential, self.scope)
        except credentials.TokenUnavailable as exc:
            message = f"could not get an Entra ID token for scope {self.scope}: {exc.reason}"
            raise CliError(message, EXIT_AUTH) from None
        return self._token


class SchedulerClient:
    """The management API of one endpoint, for one subscription."""

    def __init__(
        self,
        conn: Connection,
        session: requests.Session | None = None,
        credential: Callable[[], Credential] | None = None,
    ) -> None:
        self.conn = conn
        self.endpoint = conn.endpoint
        self.session = session or requests.Session()
        self.token = EntraToken(conn.entra_scope, credential) if conn.entra_scope else None
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if conn.api_key:
            if conn.functions_key_header:
                headers["x-functions-key"] = conn.api_key
            else:
                headers["Authorization"] = f"Bearer {conn.api_key}"
        headers.update(dict(conn.headers))
        self.headers = headers

    @property
    def api_version(self) -> str:
        return self.conn.api_version

    @property
    def preview(self) -> bool:
        """Whether the requests speak the preview wire (calendars, occurrences, the preview properties)."""
        return wire_of(self.conn.api_version).preview

    # ------------------------------------------------------------------------------------------- paths

    def subscription_path(self) -> str:
        return f"/subscriptions/{_segment(self.conn.require_subscription())}"

    def group_path(self, group: str) -> str:
        return f"{self.subscription_path()}/resourceGroups/{_segment(group)}"

    def collection_path(self, group: str, collection: str) -> str:
        return f"{self.group_path(group)}/{PROVIDER}/jobCollections/{_segment(collection)}"

    def job_path(self, group: str, collection: str, job: str) -> str:
        return f"{self.collection_path(group, collection)}/jobs/{_segment(job)}"

    # ----------------------------------------------------------------------------------------- requests

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        if_match: str | None = None,
        raw_query: str | None = None,
    ) -> Answer:
        """One request; raises :class:`ApiError` for an error answer, :class:`Unreachable` for none."""
        url = f"{self.endpoint}{path}"
        headers = dict(self.headers)
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token.value()}"
        if if_match:
            headers["If-Match"] = if_match
        query: dict[str, str] | None = None
        if raw_query is not None:
            url = f"{url}?{raw_query}"
        else:
            query = {"api-version": self.api_version, **(params or {})}
        try:
            response = self.session.request(
                method, url, params=query, json=body, headers=headers, timeout=self.conn.timeout, allow_redirects=False
            )
        except requests.Timeout:
            raise Unreachable(f"{self.endpoint} did not answer within {self.conn.timeout:g} s") from None
        except requests.RequestException as exc:
            raise Unreachable(f"cannot reach {self.endpoint}: {_reason(exc)}") from None
        if response.status_code >= 400:
            raise ApiError.from_response(response)
        if 300 <= response.status_code < 400:
            raise ApiError(response.status_code, "", f"redirected to {response.headers.get('Location', '?')}")
        payload: Any = None
        if response.content:
            try:
                payload = read_json(response.content, "the answer", MAX_FILE_DEPTH)
            except ValidationError as exc:  # not JSON, or nested deeper than any answer of the service
                reason = "the answer is not JSON" if "valid JSON" in exc.rule else exc.rule
                raise ApiError(response.status_code, "", reason) from None
        return Answer(response.status_code, payload, response.headers.get("ETag"))

    def pages(self, path: str, params: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a list operation, following ``nextLink`` (on this endpoint only)."""
        answer = self.call("GET", path, params=params)
        while True:
            body = answer.body if isinstance(answer.body, dict) else {}
            for item in body.get("value") or []:
                if isinstance(item, dict):
                    yield item
            link = body.get("nextLink")
            if not link:
                return
            parts = urlsplit(str(link))
            answer = self.call("GET", parts.path, raw_query=parts.query)

    # -------------------------------------------------------------------------------------- collections

    def list_collections(self, group: str | None = None) -> list[dict[str, Any]]:
        base = self.group_path(group) if group else self.subscription_path()
        return list(self.pages(f"{base}/{PROVIDER}/jobCollections"))

    def get_collection(self, group: str, collection: str) -> dict[str, Any]:
        body: dict[str, Any] = self.call("GET", self.collection_path(group, collection)).body
        return body

    def find_collection(self, group: str, collection: str) -> dict[str, Any] | None:
        """The collection, or None when it does not exist (404)."""
        try:
            return self.get_collection(group, collection)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def put_collection(self, group: str, collection: str, body: Mapping[str, Any]) -> Answer:
        return self.call("PUT", self.collection_path(group, collection), body=dict(body))

    def delete_collection(self, group: str, collection: str) -> None:
        self.call("DELETE", self.collection_path(group, collection))

    def set_collection_state(self, group: str, collection: str, enable: bool) -> None:
        self.call("POST", f"{self.collection_path(group, collection)}/{'enable' if enable else 'disable'}")

    # --------------------------------------------------------------------------------------------- jobs

    def list_jobs(
        self, group: str, collection: str, state: str | None = None, tags: Sequence[tuple[str, str]] = ()
    ) -> list[dict[str, Any]]:
        """The jobs of a collection, those in ``state`` and with every tag of ``tags`` when given (tags need
        api-version 2026-12-01-preview)."""
        clauses = [f"state eq '{state}'"] if state else []
        clauses.extend(f"tags/{name} eq '{value.replace(chr(39), chr(39) * 2)}'" for name, value in tags)
        params = {"$filter": " and ".join(clauses)} if clauses else None
        return list(self.pages(f"{self.collection_path(group, collection)}/jobs", params))

    def get_job(self, group: str, collection: str, job: str) -> Answer:
        return self.call("GET", self.job_path(group, collection, job))

    def put_job(
        self, group: str, collection: str, job: str, body: Mapping[str, Any], if_match: str | None = None
    ) -> Answer:
        return self.call("PUT", self.job_path(group, collection, job), body=dict(body), if_match=if_match)

    def patch_job(
        self, group: str, collection: str, job: str, body: Mapping[str, Any], if_match: str | None = None
    ) -> Answer:
        return self.call("PATCH", self.job_path(group, collection, job), body=dict(body), if_match=if_match)

    def delete_job(self, group: str, collection: str, job: str) -> None:
        self.call("DELETE", self.job_path(group, collection, job))

    def run_job(self, group: str, collection: str, job: str) -> None:
        self.call("POST", f"{self.job_path(group, collection, job)}/run")

    def rerun_history(self, group: str, collection: str, job: str, history_id: str) -> dict[str, str]:
        """``POST .../jobs/{job}/history/{historyId}/rerun`` (api-version 2026-12-01-preview): the occurrence of
        the job's history entry ``history_id`` (the entry's ``name``, its execution id) runs again now. The
        answer's ``scheduledTime`` (the occurrence, its expected execution time) and ``executionId`` (the
        replay's first attempt: the ``name`` of its history entry). An answer without both as strings is an
        :class:`ApiError`; the service's refusals (400 for a classic api-version, 403 for a Reader, 404 for
        an unknown job or entry) are raised as every operation raises them."""
        path = f"{self.job_path(group, collection, job)}/history/{_segment(history_id)}/rerun"
        answer = self.call("POST", path)
        body = answer.body if isinstance(answer.body, dict) else {}
        scheduled, execution = body.get("scheduledTime"), body.get("executionId")
        if not (isinstance(scheduled, str) and scheduled and isinstance(execution, str) and execution):
            raise ApiError(answer.status, "", "the answer names no scheduledTime and executionId of a replay")
        return {"scheduledTime": scheduled, "executionId": execution}

    def list_calendars(self, group: str, collection: str) -> list[dict[str, Any]]:
        """The collection's calendars (preview api-version only)."""
        return list(self.pages(f"{self.collection_path(group, collection)}/calendars"))

    def put_calendar(self, group: str, collection: str, name: str, body: Mapping[str, Any]) -> Answer:
        return self.call("PUT", f"{self.collection_path(group, collection)}/calendars/{_segment(name)}", dict(body))

    def delete_calendar(self, group: str, collection: str, name: str) -> None:
        self.call("DELETE", f"{self.collection_path(group, collection)}/calendars/{_segment(name)}")

    def occurrences(
        self, group: str, collection: str, job: str, top: int, after: str | None = None
    ) -> list[dict[str, Any]]:
        """The first page (at most ``top``, 1 to 100) of the job's occurrences (preview api-version only):
        ``{"scheduledTime", "fireTime"}`` each; without ``after`` from the first not yet run, with it those
        firing after it."""
        params = {"$top": str(top), **({"after": after} if after is not None else {})}
        body = self.call("GET", f"{self.job_path(group, collection, job)}/occurrences", params=params).body
        items = body.get("value") if isinstance(body, dict) else None
        return [item for item in items or [] if isinstance(item, dict)]

    def job_insight(
        self, group: str, collection: str, job: str, count: int, after: datetime | None = None
    ) -> dict[str, Any] | None:
        """The dashboard's job API: the job's next ``count`` occurrences computed by the service (which knows
        the job's creation time, so the recurrence's ``count`` applies) from ``after`` or now. None when the
        endpoint has no such API (a version older than the dashboard: the host answers 404 without the
        service's ``ResourceNotFound``, or the dashboard answers that it has nothing at that path)."""
        query = {"count": str(count)}
        if after is not None:
            query["after"] = after.isoformat().replace("+00:00", "Z")
        try:
            answer = self.call(
                "GET", DASHBOARD_JOB_API + self.job_path(group, collection, job), raw_query=urlencode(query)
            )
        except ApiError as exc:
            no_route = exc.arm_code != "ResourceNotFound" or exc.arm_message.startswith("the dashboard has nothing")
            if exc.status == 404 and no_route:
                return None
            raise
        body = answer.body if isinstance(answer.body, dict) else None
        if body is None or not isinstance(body.get("occurrences"), list):
            return None
        if after is not None and "after" not in body:  # a dashboard from before ``after``: it was ignored
            return None
        return body

    def history(
        self, group: str, collection: str, job: str, status: str | None = None, top: int | None = None
    ) -> list[dict[str, Any]]:
        """The job's history, newest first, at most ``top`` entries."""
        params: dict[str, str] = {}
        if status:
            params["$filter"] = f"status eq '{status}'"
        if top is not None:
            params["$top"] = str(min(top, 100))
        rows: list[dict[str, Any]] = []
        for row in self.pages(f"{self.job_path(group, collection, job)}/history", params):
            rows.append(row)
            if top is not None and len(rows) >= top:
                break
        return rows


def _reason(exc: requests.RequestException) -> str:
    """The innermost cause of a connection error, in one line (no URL with its query)."""
    cause: BaseException = exc
    while cause.__cause__ is not None or cause.__context__ is not None:
        nxt = cause.__cause__ or cause.__context__
        assert nxt is not None
        cause = nxt
    text = str(cause) or type(cause).__name__
    return " ".join(text.split())[:200]
