"""HTTP(S) actions with ``requests``: a pooled session, a timeout, success = 2xx after redirects.

Every connection, on every redirect hop, goes through the outbound policy (``outbound.py``): redirects are
followed (as Azure Scheduler did), at most :data:`~scheduler_core.actions.outbound.MAX_REDIRECTS` of them,
each hop's host resolved and checked when it is connected to. A refused connection is a failed attempt
whose message says which host was refused and why.

Each call is a client span (OpenTelemetry), the child of the attempt's span, and the target receives its
context as a W3C ``traceparent`` header (when tracing is configured: :mod:`scheduler_core.telemetry`), so
that it can join the trace. The result carries the answer's status code (``ActionResult.status_code``).

A request is built in this order: the placeholders expanded (``action.expandPlaceholders``,
:mod:`~scheduler_core.actions.placeholders`), the ``x-ms-scheduler-*`` headers then the job's own, the trace
context, the authentication scheme, and last the signature (``request.signing``,
:mod:`~scheduler_core.actions.signing`) over the body exactly as sent. A header value that Latin-1 cannot
hold (a job named in another script) is sent as its UTF-8 bytes (:func:`wire_header`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import assert_never
from urllib.parse import urlsplit

import requests

from scheduler_core import __version__, telemetry
from scheduler_core.actions.base import MAX_BODY_IN_HISTORY, ActionContext, ActionResult
from scheduler_core.actions.http_auth import (
    AuthenticationProblem,
    BasicAuth,
    BearerTokenAuth,
    ClientCertificateAuth,
    ClientCertificateSessions,
    OAuthTokens,
    OutboundRequest,
    RequestAuth,
)
from scheduler_core.actions.managed_identity import ManagedIdentityAuth, ManagedIdentityTokens
from scheduler_core.actions.outbound import OutboundPolicy, OutboundRefused, guard_session
from scheduler_core.actions.placeholders import expand_http
from scheduler_core.actions.signing import signer_for
from scheduler_core.model.actions import (
    ActiveDirectoryOAuthAuthentication,
    BasicAuthentication,
    ClientCertificateAuthentication,
    HttpAction,
    HttpAuthentication,
    ManagedServiceIdentityAuthentication,
)
from scheduler_core.recurrence import format_instant

USER_AGENT = f"azure-scheduler-successor/{__version__} (compatible; Azure-Scheduler)"
DEFAULT_TIMEOUT_SECONDS = 60.0
CONNECT_TIMEOUT_SECONDS = 10.0


def wire_header(value: str) -> str:
    """A header value as ``http.client`` can send it: unchanged when Latin-1 holds it (``http.client`` sends
    it so), else the text whose Latin-1 bytes are the value's UTF-8 bytes (sent as UTF-8, as receivers read
    header bytes today), never an error that would lose the attempt."""
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8").decode("latin-1")
    return value


def scheduler_headers(context: ActionContext) -> dict[str, str]:
    """Headers that let a receiver recognise and de-duplicate a call (compatible with Azure Scheduler)."""
    return {
        "x-ms-scheduler-jobid": wire_header(context.job_id),
        "x-ms-scheduler-jobcollectionid": wire_header(context.collection_id),
        "x-ms-scheduler-expected-execution-time": format_instant(context.expected_time),
        "x-ms-scheduler-execution-id": context.execution_id,
        "x-ms-scheduler-retry-count": str(context.retry_count),
        "x-ms-client-request-id": context.execution_id,
        "User-Agent": USER_AGENT,
    }


class HttpSender:
    """Sends :class:`~scheduler_core.model.actions.HttpAction` (``Http``/``Https``). ``session`` is a pooled
    ``requests.Session`` (its http and https adapters are replaced by ones guarded by ``policy``, whose
    ``resolver`` is the name-resolution seam);
    ``oauth`` gets ``ActiveDirectoryOAuth`` tokens (its authority host is a setting; by default its calls
    are guarded by ``policy`` too); ``identity`` gets the app's own tokens for ``ManagedServiceIdentity``
    (by default none: such an action fails, saying the app has no identity; ``default_runner`` passes the
    platform's). Authentication: ``Basic``, ``ClientCertificate`` (mutual TLS; a guarded session per
    certificate, which copies ``session``'s trust settings), ``ActiveDirectoryOAuth`` and
    ``ManagedServiceIdentity`` (``Authorization: Bearer``), each a scheme of
    :mod:`~scheduler_core.actions.http_auth` / :mod:`~scheduler_core.actions.managed_identity` that sees the
    built request (:meth:`authenticator`); then the signature, if any. ``clock`` (seconds since the epoch)
    stamps signatures."""

    def __init__(
        self,
        session: requests.Session | None = None,
        policy: OutboundPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        oauth: OAuthTokens | None = None,
        identity: ManagedIdentityTokens | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy or OutboundPolicy()
        self.session = guard_session(session or requests.Session(), self.policy)
        # Nothing from the environment but the CA bundle (see trusted_cas): no proxies (the connection must
        # be to the checked address), no .netrc credentials, and so no proxy credentials sent to a target.
        self.session.trust_env = False
        self.timeout = timeout
        self.oauth = oauth or OAuthTokens(policy=self.policy)
        self.certificates = ClientCertificateSessions(self.session, self.policy)
        self.identity = identity or ManagedIdentityTokens(None)
        self.clock = clock

    def authenticator(self, authentication: HttpAuthentication | None) -> RequestAuth | None:
        """The scheme that authenticates a request with ``authentication`` (None: none)."""
        match authentication:
            case None:
                return None
            case BasicAuthentication():
                return BasicAuth(authentication)
            case ActiveDirectoryOAuthAuthentication():
                return BearerTokenAuth(authentication, self.oauth)
            case ClientCertificateAuthentication():
                return ClientCertificateAuth(authentication, self.certificates)
            case ManagedServiceIdentityAuthentication():
                return ManagedIdentityAuth(authentication, self.identity)
            case _:
                assert_never(authentication)

    def send(self, action: HttpAction, context: ActionContext) -> ActionResult:
        """Send the request and read the answer's head; in a client span (a child of the attempt's span)
        whose context the target receives as ``traceparent``. Success is a 2xx answer after redirects."""
        from opentelemetry.trace import SpanKind, StatusCode

        action = expand_http(action, context)
        uri = action.uri
        host = urlsplit(uri).hostname or ""
        method = action.method.upper()
        with telemetry.tracer().start_as_current_span(
            method, kind=SpanKind.CLIENT, attributes=client_span_attributes(method, uri)
        ) as span:
            result = self._send(action, context, method, uri, host)
            if result.status_code is not None:
                span.set_attribute("http.response.status_code", result.status_code)
            if not result.succeeded:
                span.set_status(StatusCode.ERROR, "no answer" if result.status_code is None else "not a 2xx answer")
            return result

    def _send(self, action: HttpAction, context: ActionContext, method: str, uri: str, host: str) -> ActionResult:
        request = OutboundRequest(
            method=method,
            uri=uri,
            headers={
                **scheduler_headers(context),
                **{name: wire_header(value) for name, value in (action.headers or {}).items()},
            },
            body=action.body.encode() if action.body is not None else None,
            session=self.session,
        )
        telemetry.inject_trace_context(request.headers)  # a traceparent of the job's own headers is kept
        steps: list[RequestAuth] = []
        auth = self.authenticator(action.authentication)
        if auth is not None:
            steps.append(auth)
        signer = signer_for(action.signing, context.delivery_id, self.clock)
        if signer is not None:
            steps.append(signer)  # last: it signs the body as sent
        for step in steps:
            try:
                step.apply(request)
            except AuthenticationProblem as exc:
                return ActionResult(False, f"Http Action - Request to host '{host}' not sent: {exc}")
        deadline = time.monotonic() + self.timeout
        try:
            response = request.session.request(
                request.method,
                request.uri,
                data=request.body,
                headers=request.headers,
                timeout=(min(CONNECT_TIMEOUT_SECONDS, self.timeout), self.timeout),
                allow_redirects=True,
                stream=True,
                verify=trusted_cas(request.session),
            )
            try:
                head = read_head(response, deadline)
            finally:
                response.close()  # the rest of the body is not read: the connection is not reused
        except OutboundRefused as exc:
            return ActionResult(False, refused_message(host, exc))
        except requests.Timeout:
            return ActionResult(False, f"Http Action - Request to host '{host}' timed out after {self.timeout:g} s")
        except requests.exceptions.SSLError as exc:
            return ActionResult(False, f"Http Action - TLS error talking to host '{host}': {type(exc).__name__}")
        except requests.RequestException as exc:
            reason = type(exc).__name__
            return ActionResult(False, f"Http Action - Request to host '{host}' failed: {reason}")
        status = response.status_code
        return ActionResult(200 <= status < 300, describe_response(host, response, head), status)


def client_span_attributes(method: str, uri: str) -> dict[str, str | int]:
    """The attributes of an HTTP call's client span (OpenTelemetry's HTTP conventions): method, scheme,
    server address and port, never the URL's path, query string or user info (they may hold secrets)."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return {"http.request.method": method}
    attributes: dict[str, str | int] = {
        "http.request.method": method,
        "url.scheme": parts.scheme,
        "server.address": parts.hostname or "",
    }
    default_port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    if port is not None or default_port is not None:
        attributes["server.port"] = port if port is not None else default_port or 0
    return attributes


def trusted_cas(session: requests.Session) -> bool | str | None:
    """What ``session`` verifies servers with: its own ``verify``, or the CA bundle a deployment names in
    ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` (read as ``requests`` does, since the session does not
    trust the rest of the environment), or the default trust store."""
    if session.verify is not True:
        return session.verify
    verify: bool | str | None = requests.Session().merge_environment_settings(None, {}, None, True, None)["verify"]
    return verify


def refused_message(host: str, refusal: OutboundRefused) -> str:
    """The history message of a call the outbound policy refused (on its first hop or a redirect)."""
    hop = "" if refusal.host.strip("[]").lower() == host.strip("[]").lower() else f"a redirect to '{refusal.host}': "
    return (
        f"Http Action - Request to host '{host}' refused by the outbound policy: {hop}{refusal} "
        "(not allowed unless SCHEDULER_ALLOW_METADATA_ENDPOINTS is set)"
    )


def read_head(response: requests.Response, deadline: float) -> bytes:
    """At most :data:`MAX_BODY_IN_HISTORY` bytes of the body, read before ``deadline`` (a target that
    sends its body slowly cannot hold the action past its timeout: ``requests`` times each read, not the
    call). Raises :class:`requests.Timeout` at the deadline."""
    head = b""
    while len(head) < MAX_BODY_IN_HISTORY:
        if time.monotonic() > deadline:
            raise requests.Timeout("the response body did not arrive before the action's timeout")
        # read1 returns what has arrived (each read still bounded by the read timeout), decoded
        chunk = response.raw.read1(MAX_BODY_IN_HISTORY - len(head), decode_content=True)
        if not chunk:
            break
        head += chunk
    if time.monotonic() > deadline:
        raise requests.Timeout("the response did not arrive before the action's timeout")
    return head


def describe_response(host: str, response: requests.Response, content: bytes) -> str:
    """The history message: status, response headers and at most 2,048 bytes of the body."""
    text = content.decode(response.encoding or "utf-8", errors="replace")
    headers = ", ".join(f"{k}: {v}" for k, v in response.headers.items())
    return (
        f"Http Action - Response from host '{host}': '{response.status_code} {response.reason}' "
        f"Response Headers: {headers} Body: {text}"
    )
