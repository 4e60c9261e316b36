"""HTTP(S) actions at the wire (``request``): parse a client's, read a stored one, write the canonical one;
and their authentication (``request.authentication``: NotSpecified, Basic, ActiveDirectoryOAuth,
ClientCertificate, and with api-version 2026-12-01-preview ManagedServiceIdentity) and, with the preview
wire, their signing (``request.signing``: StandardWebhooks).

A stored secret (password, OAuth secret, certificate, signing secret) is kept when a PUT or PATCH omits it
only while the authentication type (or signing scheme), its identity (username; tenant + clientId;
certificate thumbprint) and the URI's scheme, host and port are unchanged."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, assert_never

from scheduler_core.definitions._certificates import read_pfx
from scheduler_core.definitions._durations import format_duration, read_bounded, read_duration
from scheduler_core.definitions._json import Fields, enum_value, join, preview_only, str_map
from scheduler_core.definitions._prior import Prior, same_text, sub
from scheduler_core.errors import ValidationError
from scheduler_core.model.actions import (
    FRAMING_HEADERS,
    ActiveDirectoryOAuthAuthentication,
    BasicAuthentication,
    ClientCertificateAuthentication,
    HttpAction,
    HttpAuthentication,
    ManagedServiceIdentityAuthentication,
    RequestSigning,
    Secret,
    SigningScheme,
    framing_header,
)
from scheduler_core.model.retry import Duration
from scheduler_core.recurrence import format_instant, parse_instant
from scheduler_core.uris import HIDDEN, UriProblem, hide_credentials, origin, parse_target, restore_credentials

__all__ = [
    "MAX_BODY",
    "MAX_HEADERS",
    "MAX_HEADER_CHARS",
    "MAX_URI",
    "http_json",
    "parse_http",
    "read_http",
]

#: HTTP action limits (includes/scheduler-limits-table.md).
MAX_URI = 2048
MAX_BODY = 8192
#: The fields of ``request`` on api-version 2026-12-01-preview only.
PREVIEW_REQUEST = ("signing", "timeout", "asyncPolling")
#: Bounds of ``request.asyncPolling.maxDuration``: how long an operation a ``202`` started may be polled.
MIN_POLLING = (timedelta(minutes=1), "a minute")
MAX_POLLING = (timedelta(days=1), "a day")
#: Bounds of ``request.timeout``: the Functions host ends an invocation after ``functionTimeout`` (10 minutes,
#: host.json), and an attempt needs time for its storage calls around the call.
MIN_TIMEOUT = timedelta(seconds=1)
MAX_TIMEOUT = timedelta(minutes=9)
MAX_HEADERS = 50
MAX_HEADER_CHARS = 4096

HTTP_AUTH_TYPES = {
    "notspecified": "NotSpecified",
    "clientcertificate": "ClientCertificate",
    "activedirectoryoauth": "ActiveDirectoryOAuth",
    "basic": "Basic",
}
#: The authentication types of the preview wire only.
PREVIEW_AUTH_TYPES = {"managedserviceidentity": "ManagedServiceIdentity"}
_AUTH_FIELDS = {
    "NotSpecified": ("type",),
    "Basic": ("type", "username", "password"),
    "ActiveDirectoryOAuth": ("type", "tenant", "audience", "clientId", "secret"),
    "ClientCertificate": ("type", "pfx", "password", "certificateThumbprint"),
    "ManagedServiceIdentity": ("type", "audience"),
}
_SIGNING_SCHEMES = {scheme.value.lower(): scheme for scheme in SigningScheme}
#: A Standard Webhooks secret: ``whsec_`` and the base64 of 24 to 64 bytes.
SIGNING_KEY_BYTES = (24, 64)
MAX_AUDIENCE = 256
#: Derived, read-only: echoed back by clients that GET, modify and PUT; ignored on input.
_CERT_READ_ONLY = ("certificateSubjectName", "certificateExpirationDate", "certificateExpiration")

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")


# -------------------------------------------------------------------------------------------- parse


def _parse_uri(fields: Fields, https_only: bool, limits: bool, prior: Prior | None) -> str:
    """The target URI under the rule of :mod:`scheduler_core.uris`; a URI written back exactly as it was
    answered, its credentials hidden (:data:`~scheduler_core.uris.HIDDEN`), is the stored one (``prior``)."""
    where = fields.where("uri")
    uri = fields.text("uri", required=True, rule="is required (an absolute http or https URI)")
    assert uri is not None
    if limits and len(uri) > MAX_URI:
        raise ValidationError(where, f"must be at most {MAX_URI} characters, not {len(uri)}")
    try:
        target = parse_target(uri)
    except UriProblem as problem:
        raise ValidationError(where, str(problem)) from None
    if https_only and target.scheme != "https":
        raise ValidationError(where, "must be an https URI for an action of type Https")
    stored = prior.secrets.get("uri", prior.output.get("uri")) if prior is not None else None
    uri, missing = restore_credentials(uri, stored if isinstance(stored, str) else None)
    if missing:
        raise ValidationError(
            where,
            f"hides the value of {', '.join(repr(name) for name in missing)} ({HIDDEN}), which is kept only while "
            "the URI is written back exactly as it was answered: write the credential again",
        )
    return uri


def _parse_headers(value: object, where: str, limits: bool) -> dict[str, str]:
    headers = str_map(value, where)
    if limits and len(headers) > MAX_HEADERS:
        raise ValidationError(where, f"must have at most {MAX_HEADERS} headers, not {len(headers)}")
    total = 0
    for name, item in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValidationError(where, "header names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)")
        if framing_header(name):
            raise ValidationError(
                join(where, name),
                "is a header the sender sets itself (framing and hop-by-hop headers: "
                f"{', '.join(FRAMING_HEADERS)} and Proxy-*) and cannot be set by a job",
            )
        if any(c in item for c in "\r\n\x00"):
            raise ValidationError(join(where, name), "must not contain line breaks or NUL characters")
        total += len(name) + len(item)
    if limits and total > MAX_HEADER_CHARS:
        raise ValidationError(
            where, f"must total at most {MAX_HEADER_CHARS} characters (names and values), not {total}"
        )
    return headers


def parse_http(
    data: object, path: str, prior: Prior | None, *, https: bool, limits: bool, preview: bool = False
) -> HttpAction:
    """Parse a client's ``request`` (``https``: the action's type is ``Https``). ``prior`` is the stored
    ``request`` (its secrets kept while allowed, see the module's docstring). ``preview``: the preview wire
    (``signing``, ManagedServiceIdentity authentication)."""
    known = ("uri", "method", "body", "headers", "authentication") + (PREVIEW_REQUEST if preview else ())
    fields = Fields(data, path, known, preview=() if preview else PREVIEW_REQUEST)
    uri = _parse_uri(fields, https, limits, prior)
    method = fields.text("method", required=True, rule="is required (GET, POST, PUT, DELETE, ...)")
    assert method is not None
    if not _TOKEN.fullmatch(method):
        raise ValidationError(fields.where("method"), "must be an HTTP method such as GET, POST, PUT or DELETE")
    body = fields.text("body")
    if body is not None and limits and len(body) > MAX_BODY:
        raise ValidationError(fields.where("body"), f"must be at most {MAX_BODY} characters, not {len(body)}")
    headers = None
    if "headers" in fields:
        headers = _parse_headers(fields.get("headers"), fields.where("headers"), limits)
    authentication: HttpAuthentication | None = None
    same_origin = prior is not None and origin(prior.output.get("uri")) == origin(uri)
    if "authentication" in fields:
        # a secret never follows the job to another host
        auth_prior = sub(prior, "authentication") if same_origin else None
        authentication = _parse_http_auth(
            fields.get("authentication"), fields.where("authentication"), auth_prior, uri if preview else None
        )
    signing = None
    if "signing" in fields:
        signing = _parse_signing(
            fields.get("signing"), fields.where("signing"), sub(prior, "signing") if same_origin else None
        )
    timeout = _parse_timeout(fields.get("timeout"), fields.where("timeout")) if "timeout" in fields else None
    polling = None
    if "asyncPolling" in fields:
        polling = _parse_polling(fields.get("asyncPolling"), fields.where("asyncPolling"))
    return HttpAction(
        uri=uri,
        method=method.upper(),
        https=https,
        headers=headers,
        body=body,
        authentication=authentication,
        not_specified_written="authentication" in fields and authentication is None,
        signing=signing,
        timeout=timeout,
        async_polling=polling,
    )


def _parse_polling(data: object, path: str) -> Duration:
    """``request.asyncPolling``: ``{"maxDuration": duration}``, :data:`MIN_POLLING` to :data:`MAX_POLLING`."""
    fields = Fields(data, path, ("maxDuration",))
    if "maxDuration" not in fields:
        raise ValidationError(fields.where("maxDuration"), "is required (how long the operation may be polled)")
    return read_bounded(fields.get("maxDuration"), fields.where("maxDuration"), MIN_POLLING, MAX_POLLING)


def _parse_timeout(value: object, path: str) -> Duration:
    """``request.timeout``: an attempt's own bound, :data:`MIN_TIMEOUT` to :data:`MAX_TIMEOUT`."""
    length, style = read_duration(value, path)
    if not MIN_TIMEOUT <= length <= MAX_TIMEOUT:
        raise ValidationError(
            path,
            f"must be between {format_duration(MIN_TIMEOUT, style)} and {format_duration(MAX_TIMEOUT, style)} "
            f"(the function's timeout of 10 minutes less a minute for the attempt's own storage calls), "
            f"not {format_duration(length, style)}",
        )
    return Duration(length, style)


def _parse_signing(data: object, path: str, prior: Prior | None) -> RequestSigning:
    """``request.signing``: the scheme and its write-only secret (kept from ``prior`` when omitted)."""
    fields = Fields(data, path, ("scheme", "secret"))
    if "scheme" not in fields:
        raise ValidationError(fields.where("scheme"), "is required (StandardWebhooks)")
    scheme = enum_value(fields.get("scheme"), fields.where("scheme"), _SIGNING_SCHEMES)
    secret = fields.text("secret")
    if secret is None and prior is not None and prior.output.get("scheme") == scheme.value:
        secret = prior.secrets.get("secret")
    if secret is None:
        raise ValidationError(
            fields.where("secret"),
            "is required (whsec_ and the base64 of 24 to 64 random bytes; a stored secret is kept only while "
            "the scheme and the URI's scheme, host and port stay the same)",
        )
    _check_signing_secret(secret, fields.where("secret"))
    return RequestSigning(Secret(secret), scheme)


def _check_signing_secret(secret: str, where: str) -> None:
    low, high = SIGNING_KEY_BYTES
    rule = f"must be whsec_ followed by the base64 of {low} to {high} random bytes (Standard Webhooks)"
    if not secret.startswith("whsec_"):
        raise ValidationError(where, rule)
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(where, f"{rule}; the part after whsec_ is not base64") from None
    if not low <= len(key) <= high:
        raise ValidationError(where, f"{rule}, not {len(key)} bytes")


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _managed_identity(fields: Fields, uri: str) -> ManagedServiceIdentityAuthentication:
    audience = fields.text(
        "audience", required=True, rule="is required: the resource the app's token is for (https://...)"
    )
    assert audience is not None
    where = fields.where("audience")
    if not audience.strip() or len(audience) > MAX_AUDIENCE or _CONTROL.search(audience):
        raise ValidationError(
            where, f"must be a resource URI or app ID URI of at most {MAX_AUDIENCE} characters, without spaces"
        )
    if audience.strip().lower().startswith(("http:", "https:")):
        try:
            parse_target(audience.strip())
        except UriProblem as problem:
            raise ValidationError(where, f"is an http(s) URI, so it {problem}") from None
    target = parse_target(uri)
    if target.scheme != "https" and not _loopback(target.host):
        raise ValidationError(
            fields.where("type"),
            "ManagedServiceIdentity needs an https URI (the app's token is never sent in clear text, except to a "
            "loopback address)",
        )
    return ManagedServiceIdentityAuthentication(audience)


def _parse_http_auth(
    data: object, path: str, prior: Prior | None, preview_uri: str | None
) -> HttpAuthentication | None:
    """The authentication a client wrote; None for NotSpecified. ``preview_uri``: the request's URI when the
    preview wire is spoken (None: the classic types only)."""
    if not isinstance(data, Mapping):
        raise ValidationError(path, "must be a JSON object with a type")
    types = HTTP_AUTH_TYPES | (PREVIEW_AUTH_TYPES if preview_uri is not None else {})
    type_value = next((v for k, v in data.items() if isinstance(k, str) and k.lower() == "type"), None)
    if type_value is None:
        raise ValidationError(join(path, "type"), f"is required (one of {', '.join(types.values())})")
    preview_type = PREVIEW_AUTH_TYPES.get(type_value.strip().lower()) if isinstance(type_value, str) else None
    if preview_uri is None and preview_type is not None:
        raise preview_only(join(path, "type"), f"authentication type ('{preview_type}')")
    auth_type = enum_value(type_value, join(path, "type"), types)
    ignored = _CERT_READ_ONLY if auth_type == "ClientCertificate" else ()
    fields = Fields(data, path, _AUTH_FIELDS[auth_type], ignored=ignored, hint=f" for {auth_type} authentication")
    if prior is not None and prior.output.get("type") != auth_type:
        prior = None
    if auth_type == "Basic":
        return _basic(fields, prior)
    if auth_type == "ActiveDirectoryOAuth":
        return _oauth(fields, prior)
    if auth_type == "ClientCertificate":
        return _client_certificate(fields, prior)
    if auth_type == "ManagedServiceIdentity" and preview_uri is not None:
        return _managed_identity(fields, preview_uri)
    return None


def _basic(fields: Fields, prior: Prior | None) -> BasicAuthentication:
    rule = "'Username' and 'Password' are required for 'Basic' type of Authentication."
    username = fields.text("username", required=True, rule=rule)
    assert username is not None
    if not username:
        raise ValidationError(fields.where("username"), rule)
    password = fields.text("password")
    if password is None and prior is not None and prior.output.get("username") == username:
        password = prior.secrets.get("password")
    if password is None:
        raise ValidationError(
            fields.where("password"),
            f"{rule} (a stored password is kept only while the type, the username and the URI's host stay the same)",
        )
    return BasicAuthentication(username, Secret(password))


def _oauth(fields: Fields, prior: Prior | None) -> ActiveDirectoryOAuthAuthentication:
    rule = (
        "'Tenant', 'Audience', 'ClientId' and 'Secret' are required for 'ActiveDirectoryOAuth' type of Authentication."
    )
    values: dict[str, str] = {}
    for name in ("tenant", "audience", "clientId"):
        value = fields.text(name, required=True, rule=rule)
        if not value:
            raise ValidationError(fields.where(name), rule)
        values[name] = value
    secret = fields.text("secret")
    if (
        secret is None
        and prior is not None
        and same_text(prior.output.get("tenant"), values["tenant"])
        and same_text(prior.output.get("clientId"), values["clientId"])
    ):
        secret = prior.secrets.get("secret")
    if secret is None:
        raise ValidationError(
            fields.where("secret"),
            f"{rule} (a stored secret is kept only while the type, the tenant, the clientId and the URI's "
            "host stay the same)",
        )
    return ActiveDirectoryOAuthAuthentication(values["tenant"], values["audience"], values["clientId"], Secret(secret))


def _client_certificate(fields: Fields, prior: Prior | None) -> ClientCertificateAuthentication:
    rule = "'Pfx' is required for 'ClientCertificate' type of Authentication."
    pfx = fields.text("pfx")
    password = fields.text("password")
    if pfx is None:
        claimed = fields.text("certificateThumbprint")
        stored = prior.secrets.get("pfx") if prior is not None else None
        if (
            prior is None
            or stored is None
            or (claimed is not None and not same_text(claimed, prior.output.get("certificateThumbprint")))
        ):
            raise ValidationError(
                fields.where("pfx"),
                f"{rule} (a stored certificate is kept only while the type, the certificateThumbprint and the "
                "URI's host stay the same)",
            )
        pfx = stored
        if password is None:
            password = prior.secrets.get("password")
    info = read_pfx(pfx, password, fields.where("pfx"))
    return ClientCertificateAuthentication(
        pfx=Secret(pfx),
        password=Secret(password) if password else None,
        thumbprint=info.thumbprint,
        subject_name=info.subject,
        expiration=info.expires,
    )


# --------------------------------------------------------------------------------------------- read


def read_http(request: Mapping[str, Any], *, https: bool) -> HttpAction:
    """The action of a stored (canonical) ``request`` with its secrets in place, trusted: nothing is
    checked and no certificate is opened."""
    auth = request.get("authentication")
    headers = request.get("headers")
    return HttpAction(
        uri=str(request.get("uri", "")),
        method=str(request.get("method") or "GET"),
        https=https,
        headers=dict(headers) if headers is not None else None,
        body=request.get("body"),
        authentication=_read_http_auth(auth) if auth is not None else None,
        not_specified_written=auth is not None and auth.get("type") == "NotSpecified",
        signing=_read_signing(request.get("signing")),
        timeout=Duration(*read_duration(timeout, "timeout")) if (timeout := request.get("timeout")) else None,
        async_polling=_read_polling(request.get("asyncPolling")),
    )


def _read_polling(polling: Mapping[str, Any] | None) -> Duration | None:
    if not polling or not polling.get("maxDuration"):
        return None
    return Duration(*read_duration(polling["maxDuration"], "asyncPolling.maxDuration"))


def _read_signing(signing: Mapping[str, Any] | None) -> RequestSigning | None:
    if not signing:
        return None
    return RequestSigning(_secret(signing, "secret"), SigningScheme(signing.get("scheme", "StandardWebhooks")))


def _secret(data: Mapping[str, Any], name: str) -> Secret:
    return Secret(str(data.get(name) or ""))


def _read_http_auth(auth: Mapping[str, Any]) -> HttpAuthentication | None:
    kind = auth.get("type")
    if kind == "Basic":
        return BasicAuthentication(str(auth.get("username", "")), _secret(auth, "password"))
    if kind == "ActiveDirectoryOAuth":
        return ActiveDirectoryOAuthAuthentication(
            str(auth.get("tenant") or ""),
            str(auth.get("audience") or ""),
            str(auth.get("clientId") or ""),
            _secret(auth, "secret"),
        )
    if kind == "ClientCertificate":
        password = auth.get("password")
        return ClientCertificateAuthentication(
            pfx=_secret(auth, "pfx"),
            password=Secret(str(password)) if password else None,
            thumbprint=str(auth.get("certificateThumbprint", "")),
            subject_name=str(auth.get("certificateSubjectName", "")),
            expiration=parse_instant(auth.get("certificateExpirationDate"), "certificateExpirationDate"),
        )
    if kind == "ManagedServiceIdentity":
        return ManagedServiceIdentityAuthentication(str(auth.get("audience") or ""))
    return None


# -------------------------------------------------------------------------------------------- write


def http_json(action: HttpAction, *, preview: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """The canonical ``request`` and its secrets by dotted path inside it. ``preview=False``: as the classic
    wire answers it (no signing; a ManagedServiceIdentity authentication left out)."""
    shown, hidden = hide_credentials(action.uri)
    output: dict[str, Any] = {"uri": shown, "method": action.method}
    if action.body is not None:
        output["body"] = action.body
    if action.headers is not None:
        output["headers"] = dict(action.headers)
    secrets: dict[str, str] = {"uri": action.uri} if hidden else {}
    auth = action.authentication
    if auth is None:
        if action.not_specified_written:
            output["authentication"] = {"type": "NotSpecified"}
    elif preview or not isinstance(auth, ManagedServiceIdentityAuthentication):
        written, auth_secrets = _http_auth_json(auth)
        output["authentication"] = written
        secrets.update({f"authentication.{name}": value for name, value in auth_secrets.items()})
    if action.signing is not None and preview:
        output["signing"] = {"scheme": action.signing.scheme.value}
        secrets["signing.secret"] = action.signing.secret.reveal()
    if action.timeout is not None and preview:
        output["timeout"] = format_duration(action.timeout.value, action.timeout.style)
    if action.async_polling is not None and preview:
        polling = action.async_polling
        output["asyncPolling"] = {"maxDuration": format_duration(polling.value, polling.style)}
    return output, secrets


def _http_auth_json(auth: HttpAuthentication) -> tuple[dict[str, Any], dict[str, str]]:
    match auth:
        case BasicAuthentication():
            return {"type": "Basic", "username": auth.username}, {"password": auth.password.reveal()}
        case ActiveDirectoryOAuthAuthentication():
            written = {
                "type": "ActiveDirectoryOAuth",
                "tenant": auth.tenant,
                "audience": auth.audience,
                "clientId": auth.client_id,
            }
            return written, {"secret": auth.secret.reveal()}
        case ClientCertificateAuthentication():
            written = {
                "type": "ClientCertificate",
                "certificateThumbprint": auth.thumbprint,
                "certificateSubjectName": auth.subject_name,
                "certificateExpirationDate": format_instant(auth.expiration),
            }
            secrets = {"pfx": auth.pfx.reveal()}
            if auth.password is not None:
                secrets["password"] = auth.password.reveal()
            return written, secrets
        case ManagedServiceIdentityAuthentication():
            return {"type": "ManagedServiceIdentity", "audience": auth.audience}, {}
        case _:
            assert_never(auth)
