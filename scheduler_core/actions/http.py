"""HTTP(S) actions with ``requests``: no connection or cookie left from one call to the next, a deadline for the
whole call, success = 2xx after redirects.

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

import codecs
import dataclasses
import http.client
import math
import re
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, assert_never
from urllib.parse import unquote, urljoin, urlparse

import requests
import urllib3

from scheduler_core import __version__, telemetry
from scheduler_core.actions.base import MAX_BODY_IN_HISTORY, ActionContext, ActionResult, Failure
from scheduler_core.actions.call import OutboundCall
from scheduler_core.actions.http_auth import (
    AuthenticationProblem,
    BasicAuth,
    BearerTokenAuth,
    ClientCertificateAuth,
    ClientCertificateContexts,
    OAuthTokens,
    OutboundRequest,
    RequestAuth,
)
from scheduler_core.actions.managed_identity import ManagedIdentityAuth, ManagedIdentityTokens
from scheduler_core.actions.outbound import OutboundPolicy, OutboundRefused, guarded_session, host_name
from scheduler_core.actions.outcome import CUT, failure_reason, outcome_message, shown
from scheduler_core.actions.placeholders import expand_http
from scheduler_core.actions.redact import redact
from scheduler_core.actions.signing import signer_for
from scheduler_core.definitions._http import MAX_URI
from scheduler_core.model.actions import (
    ActiveDirectoryOAuthAuthentication,
    BasicAuthentication,
    ClientCertificateAuthentication,
    HttpAction,
    HttpAuthentication,
    ManagedServiceIdentityAuthentication,
    framing_header,
)
from scheduler_core.recurrence import format_instant
from scheduler_core.uris import CREDENTIAL_PARAMETERS, origin

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
    """Sends :class:`~scheduler_core.model.actions.HttpAction` (``Http``/``Https``).

    ``session`` is the template of each call's session: its ``verify`` (trusted CAs) is used; each call is
    sent on a session whose http and https adapters are guarded by ``policy`` (``resolver`` there is the
    name-resolution seam) and which is emptied when the call ends (:meth:`call_session`, :meth:`end_call`),
    so **no connection, and no cookie, is ever shared between two calls** (a connection reused across jobs
    of different subscriptions is what request smuggling needs, and a cookie a target set for one job must
    not reach another's). ``timeout`` (or the action's own
    ``timeout``, api-version 2026-12-01-preview) is the **deadline of the whole call**
    (:mod:`~scheduler_core.actions.call`): connect, TLS, the answer's head and the part of its body the
    history keeps, on every redirect hop.

    Every decision that depends on the target's host (the outbound policy, the identity audience, where
    credentials may go, the history's and span's host) is made on the host the connection is made to:
    requests' own reading of the prepared URL (:func:`connection_host`), and again by the guarded adapter
    on each hop. Framing and hop-by-hop headers
    (:data:`~scheduler_core.model.actions.FRAMING_HEADERS`) are the sender's: any a job stored before the
    rule that refuses them holds are dropped.

    ``oauth`` gets ``ActiveDirectoryOAuth`` tokens (its authority host is a setting; by default its calls
    are guarded by ``policy`` too); ``identity`` gets the app's own tokens for ``ManagedServiceIdentity``
    (by default none: such an action fails, saying the app has no identity; ``default_runner`` passes the
    platform's). Authentication: ``Basic``, ``ClientCertificate`` (mutual TLS with the certificate's SSL
    context), ``ActiveDirectoryOAuth`` and ``ManagedServiceIdentity`` (``Authorization: Bearer``), each a
    scheme of :mod:`~scheduler_core.actions.http_auth` / :mod:`~scheduler_core.actions.managed_identity`
    that sees the built request (:meth:`authenticator`); then the signature, if any. ``clock`` (seconds
    since the epoch) stamps signatures."""

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
        self.session = session or requests.Session()
        self.timeout = timeout
        self.oauth = oauth or OAuthTokens(policy=self.policy)
        self.certificates = ClientCertificateContexts()
        self.identity = identity or ManagedIdentityTokens(None)
        self.clock = clock
        self._sessions = threading.local()

    def call_session(self, ssl_context: ssl.SSLContext | None) -> requests.Session:
        """The session of one call: guarded adapters (with the client certificate's ``ssl_context``, if any),
        the template's trusted CAs, nothing else from the environment (no proxies: the connection must be to
        the checked address; no .netrc credentials), and an empty cookie jar. Without a client certificate
        it is this thread's session of this sender, emptied by :meth:`end_call` when each call ends (its
        pools closed with their connections, its cookies dropped); with one, a new session."""
        if ssl_context is None:
            session: requests.Session | None = getattr(self._sessions, "session", None)
            if session is not None:
                return session
        session = guarded_session(self.policy, ssl_context)
        session.hooks["response"].append(skip_redirect_body)
        session.trust_env = False
        session.verify = self.session.verify
        if ssl_context is None:
            self._sessions.session = session
        return session

    @staticmethod
    def end_call(session: requests.Session) -> None:
        """After a call, whatever it became: no connection and no cookie of it is left for another call."""
        session.cookies.clear()
        session.close()  # each adapter's pools, with their connections

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
        """Send the request (or, for ``context.poll``, the GET that polls the operation the action started:
        :func:`poll_request`) and read the answer's head; in a client span (a child of the attempt's span)
        whose context the target receives as ``traceparent``. Success is a 2xx answer after redirects."""
        from opentelemetry.trace import SpanKind, StatusCode

        action = expand_http(poll_request(action, context.poll) if context.poll else action, context)
        method = action.method.upper()
        try:
            url = prepared_url(action.uri)
        except (requests.RequestException, ValueError) as exc:
            text = outcome_message("Http", "Request not sent", f"the URI cannot be called ({type(exc).__name__})")
            return ActionResult(False, text, failure=Failure.NOT_SENT)
        if urlparse(url).scheme.lower() not in ("http", "https"):  # a Location polled (jobs are checked when written)
            text = outcome_message("Http", "Request not sent", "the URI cannot be called (not http or https)")
            return ActionResult(False, text, failure=Failure.NOT_SENT)
        host = connection_host(url)
        with telemetry.tracer().start_as_current_span(
            method, kind=SpanKind.CLIENT, attributes=client_span_attributes(method, url)
        ) as span:
            result = self._send(action, context, method, url, host)
            if result.status_code is not None:
                span.set_attribute("http.response.status_code", result.status_code)
            if not result.succeeded:
                span.set_status(StatusCode.ERROR, "no answer" if result.status_code is None else "not a 2xx answer")
            return result

    def _send(self, action: HttpAction, context: ActionContext, method: str, url: str, host: str) -> ActionResult:
        own = {name: wire_header(value) for name, value in (action.headers or {}).items() if not framing_header(name)}
        request = OutboundRequest(
            method=method,
            uri=url,
            host=host,
            headers={**scheduler_headers(context), **own},
            body=action.body.encode() if action.body is not None else None,
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
                text = outcome_message("Http", "Request not sent", str(exc), f"Request to host '{host}'")
                return ActionResult(False, text, failure=Failure.NOT_SENT)
        secrets = request_secrets(request, action)
        timeout = action.timeout.value.total_seconds() if action.timeout is not None else self.timeout
        call = OutboundCall(timeout)
        if any(name.lower() == "authorization" for name in request.headers):
            call.credentials_host = host_name(host)  # an Authorization header goes to this host only
        session = self.call_session(request.ssl_context)
        try:
            with call.running():
                response = session.request(
                    request.method,
                    request.uri,
                    data=request.body,
                    headers=request.headers,
                    timeout=(min(CONNECT_TIMEOUT_SECONDS, timeout), timeout),
                    allow_redirects=True,
                    stream=True,
                    verify=trusted_cas(self.session),
                )
                try:
                    head = read_head(response, call)
                finally:
                    response.close()
        except OutboundRefused as exc:
            return ActionResult(False, refused_message(host, exc), failure=Failure.REFUSED)
        except (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
            timed_out = call.expired_now() or isinstance(exc, requests.Timeout)
            failure = Failure.TIMEOUT if timed_out else Failure.CONNECTION_ERROR
            return ActionResult(False, no_answer_message(host, exc, timeout, call), failure=failure)
        finally:
            self.end_call(session)
        return answered(action, context, host, response, head, secrets, datetime.fromtimestamp(self.clock(), UTC))


#: The statuses whose ``Retry-After`` sets the wait before the next retry (RFC 9110 section 10.2.3).
RETRY_AFTER_STATUSES = (429, 503)


#: Request headers a poll does not repeat: they describe the first request's body, which a GET has not.
_BODY_HEADERS = frozenset({"content-type", "content-length", "content-encoding", "content-md5", "transfer-encoding"})


def poll_request(action: HttpAction, url: str) -> HttpAction:
    """The GET that polls the operation ``action`` started at ``url`` (``request.asyncPolling``): the action's
    own headers but those of a body, and its authentication and signing only when ``url`` has the action's
    scheme, host and port (a ``Location`` elsewhere never receives the job's credentials); every hop of it
    goes through the outbound policy as any call does."""
    same = origin(url) is not None and origin(url) == origin(action.uri)
    headers = {name: value for name, value in (action.headers or {}).items() if name.lower() not in _BODY_HEADERS}
    return dataclasses.replace(
        action,
        uri=url,
        method="GET",
        body=None,
        headers=headers or None,
        authentication=action.authentication if same else None,
        not_specified_written=False,
        signing=action.signing if same else None,
    )


def answered(
    action: HttpAction,
    context: ActionContext,
    host: str,
    response: requests.Response,
    head: bytes,
    secrets: list[str],
    now: datetime,
) -> ActionResult:
    """The result of an answer: a success for a 2xx; an operation still running (``asyncPolling``); else a
    failure carrying the body's excerpt and what ``Retry-After`` asks (secrets masked throughout)."""
    status = response.status_code
    text = redact(describe_response(host, response, head), secrets)
    poll = operation_running(action, context, response)
    if poll is not None and len(poll) > MAX_URI:  # as a job's URI may be; a poll's message carries it
        detail = f"its Location is longer than {MAX_URI:,} characters, the most a job's URI may be"
        return ActionResult(
            False, outcome_message("Http", "Operation not followed", detail, f"Response from host '{host}'"), status
        )
    if poll is not None:
        return ActionResult(False, text, status, poll=poll, retry_after=asked_to_wait(response, now, statuses=(202,)))
    if 200 <= status < 300:
        return ActionResult(True, text, status)
    body = redact(body_text(response, head), secrets)
    return ActionResult(False, text, status, body=body, retry_after=asked_to_wait(response, now))


def operation_running(action: HttpAction, context: ActionContext, response: requests.Response) -> str | None:
    """With ``request.asyncPolling``, the URL to poll when the answer says the operation still runs: a ``202``
    with ``Location`` (resolved against the answer's URL: a poll to a URL that cannot be called fails as any
    call does), or, when this call is itself a poll, a ``202`` without one (the same URL again). None: the
    answer is the outcome."""
    if action.async_polling is None or response.status_code != 202:
        return None
    location = response.headers.get("location", "").strip()
    if not location:
        return response.url if context.poll else None
    return urljoin(response.url, location)


def asked_to_wait(
    response: requests.Response, now: datetime, statuses: tuple[int, ...] = RETRY_AFTER_STATUSES
) -> timedelta | None:
    """How long an answer of one of ``statuses`` (by default a 429 or 503) asks to be left alone: its
    ``Retry-After`` in seconds or as an HTTP date (from ``now``, in whole seconds rounded up; a date in the past
    is no wait); None for another status or a value that is neither."""
    if response.status_code not in statuses:
        return None
    value = response.headers.get("retry-after", "").strip()[:64]
    if value.isdigit():
        return timedelta(seconds=min(int(value), MAX_RETRY_AFTER_SECONDS))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return timedelta(seconds=max(0, math.ceil((when - now).total_seconds())))  # never before the date


#: A ``Retry-After`` in seconds is read up to this (a year; the retry policy caps the wait far below it).
MAX_RETRY_AFTER_SECONDS = 366 * 86400


def prepared_url(uri: str) -> str:
    """``uri`` as ``requests`` prepares it to send (its parser, urllib3's, splits it; the host IDNA-encoded,
    the path and query re-quoted). Raises what ``requests`` raises for a URL it cannot send."""
    prepared = requests.PreparedRequest()
    prepared.prepare_url(uri, None)
    return str(prepared.url)


def connection_host(url: str) -> str:
    """The host a prepared ``url`` is connected to, read as ``requests``' adapter reads it to pick its
    connection pool (``urlparse(...).hostname``, lower case, IPv6 without brackets)."""
    return urlparse(url).hostname or ""


def timed_out_message(host: str, timeout: float, call: OutboundCall) -> str:
    """The history message of a call whose deadline ran out: which part of the call was running then."""
    hops = f" (redirect hop {len(call.hops)})" if len(call.hops) > 1 else ""
    return outcome_message(
        "Http",
        f"Request timed out after {timeout:g} s",
        f"the call's deadline ran out while {call.ran_out_while or call.phase}{hops}",
        f"Request to host '{host}'",
    )


def no_answer_message(host: str, error: BaseException, timeout: float, call: OutboundCall) -> str:
    """The history message of a call that got no answer: timed out (:func:`timed_out_message`), a TLS error,
    or another failure, each with its reason (:func:`failure_reason`), never the URL an exception quotes."""
    if call.expired_now() or isinstance(error, requests.Timeout):
        return timed_out_message(host, timeout, call)
    outcome = "TLS error" if isinstance(error, requests.exceptions.SSLError) else "Request failed"
    return outcome_message("Http", outcome, failure_reason(error), f"Request to host '{host}'")


def client_span_attributes(method: str, uri: str) -> dict[str, str | int]:
    """The attributes of an HTTP call's client span (OpenTelemetry's HTTP conventions): method, scheme,
    server address and port, never the URL's path, query string or user info (they may hold secrets)."""
    try:
        parts = urlparse(uri)
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
    ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` (read now, as ``requests`` reads them, since the session does
    not trust the rest of the environment), or the default trust store."""
    if session.verify is not True:
        return session.verify
    verify: bool | str | None = _ENVIRONMENT.merge_environment_settings(None, {}, None, True, None)["verify"]
    return verify


#: A session used only to read the environment as ``requests`` does (never to send).
_ENVIRONMENT = requests.Session()


def refused_message(host: str, refusal: OutboundRefused) -> str:
    """The history message of a call the outbound policy refused (on its first hop or a redirect)."""
    hop = "" if refusal.host.strip("[]").lower() == host.strip("[]").lower() else f"a redirect to '{refusal.host}': "
    return outcome_message(
        "Http",
        "Request refused by the outbound policy",
        f"{hop}{refusal} (not allowed unless SCHEDULER_ALLOW_METADATA_ENDPOINTS is set)",
        f"Request to host '{host}'",
    )


def read_head(response: requests.Response, call: OutboundCall, limit: int = MAX_BODY_IN_HISTORY + 1) -> bytes:
    """At most ``limit`` bytes of the body (by default one more than the history keeps, so that
    :func:`describe_response` knows that it cuts it), read before ``call``'s deadline (which also shuts the
    socket down: a read cannot outlast it). Raises :class:`requests.Timeout` once the deadline has passed,
    even when the shut-down socket made the body look complete."""
    call.phase = f"reading the answer's body from '{urlparse(response.url).hostname or ''}'"
    head = b""
    while len(head) < limit:
        if call.expired_now():
            raise requests.Timeout("the response body did not arrive before the call's deadline")
        # read1 returns what has arrived (each read still bounded by the read timeout), decoded
        chunk = response.raw.read1(limit - len(head), decode_content=True)
        if not chunk:
            break
        head += chunk
    if call.expired_now():
        raise requests.Timeout("the response did not arrive before the call's deadline")
    return head[:limit]


#: ``charset=`` in the first part of a ``Content-Type`` value (read linearly, never a full MIME parse).
_CHARSET = re.compile(r"""charset\s*=\s*["']?([A-Za-z0-9._:+-]{1,40})""", re.IGNORECASE)
#: At most this much of a ``Content-Type`` value is looked at for its charset.
MAX_CONTENT_TYPE_READ = 256
#: At most this many characters of the answer's headers are kept in a history message.
MAX_HEADERS_IN_HISTORY = 2048


def body_charset(response: requests.Response) -> str:
    """The charset the answer's ``Content-Type`` names, if Python knows it; else UTF-8 (never Latin-1 by
    default, which ``requests`` assumes for ``text/*`` after RFC 2616, and which turns UTF-8 into mojibake).
    Only the first :data:`MAX_CONTENT_TYPE_READ` characters are read, with one linear pattern: a hostile
    target's header cannot cost more than that."""
    found = _CHARSET.search(response.headers.get("content-type", "")[:MAX_CONTENT_TYPE_READ])
    if found:
        try:
            return codecs.lookup(found.group(1)).name
        except LookupError:
            pass
    return "utf-8"


def skip_redirect_body(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
    """A response hook: the body of an answer that ``requests`` will follow (a 3xx with ``Location``) is never
    read or decoded (``requests`` reads it whole before the next hop, and a compressed one decodes to as
    much memory as its sender likes); the connection is closed instead, never reused anyway."""
    if response.is_redirect:
        response._content = b""
        response._content_consumed = True  # type: ignore[attr-defined]
        response.raw.close()
    return response


def body_text(response: requests.Response, content: bytes) -> str:
    """What a history message shows of a body: at most :data:`MAX_BODY_IN_HISTORY` bytes of it decoded with
    its charset (a character cut at the end is dropped, an invalid byte is U+FFFD), characters a terminal acts
    on escaped (:func:`~scheduler_core.actions.outcome.shown`), and ``… (body cut at 2,048 bytes)`` when
    there was more; a body that is not text (a NUL byte, or mostly undecodable) is ``(binary body, N bytes)``."""
    cut = len(content) > MAX_BODY_IN_HISTORY
    content = content[:MAX_BODY_IN_HISTORY]
    decoder = codecs.getincrementaldecoder(body_charset(response))(errors="replace")
    text = decoder.decode(content, final=not cut)
    more = "+" if cut else ""
    if b"\x00" in content or text.count("\ufffd") * 8 > max(len(text), 1):
        return f"(binary body, {len(content):,}{more} bytes)"
    shown_text = shown(text).strip()
    return f"{shown_text}{CUT} (body cut at {MAX_BODY_IN_HISTORY:,} bytes)" if cut else shown_text


def describe_response(host: str, response: requests.Response, content: bytes) -> str:
    """The history message of an answer, outcome first: ``<status> <reason>[: <body>] | Http Action - Response
    from host '<host>' | Response Headers: <headers>`` (the body as :func:`body_text` shows it, at most
    :data:`MAX_HEADERS_IN_HISTORY` characters of headers, cut with a marker). The caller masks secrets."""
    headers = ", ".join(f"{k}: {v}" for k, v in response.headers.items())
    if len(headers) > MAX_HEADERS_IN_HISTORY:
        headers = headers[:MAX_HEADERS_IN_HISTORY] + f"{CUT} (headers cut at {MAX_HEADERS_IN_HISTORY:,} characters)"
    status = shown(f"{response.status_code} {response.reason or ''}".strip(), one_line=True)
    more = f"Response Headers: {shown(headers, one_line=True)}" if headers else ""
    return outcome_message("Http", status, body_text(response, content), f"Response from host '{host}'", more)


#: Request headers whose values are credentials (compared in lower case, by the words their names contain).
_CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|password|signature|cookie|session|credential")


def request_secrets(request: OutboundRequest, action: HttpAction) -> list[str]:
    """Every credential a request carries, masked in its history message wherever a target echoes it (a body
    or header that repeats the ``Authorization`` header): the values of its credential headers (and the token
    after ``Bearer``/``Basic``), the credential parameters of its query (:data:`~scheduler_core.uris.
    CREDENTIAL_PARAMETERS`, raw and decoded), the Basic password and the signing secret."""
    secrets: list[str] = []
    for name, value in request.headers.items():
        if _CREDENTIAL_HEADER.search(name.lower()):
            secrets += [value, value.partition(" ")[2]]
    query = urlparse(request.uri).query
    for pair in re.split(r"[&;]", query):
        name, _, value = pair.partition("=")
        if unquote(name).strip().lower() in CREDENTIAL_PARAMETERS and value:
            secrets += [value, unquote(value)]
    if isinstance(action.authentication, BasicAuthentication):
        secrets.append(action.authentication.password.reveal())
    if action.signing is not None:
        secrets.append(action.signing.secret.reveal())
    return sorted({secret for secret in secrets if len(secret) >= 4}, key=len, reverse=True)
