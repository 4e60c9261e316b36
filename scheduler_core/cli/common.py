"""What every command shares: exit codes, the errors a command reports, reading JSON files, and the
connection options (endpoint, API key, subscription, resource group) with their environment variables.

A :class:`CliError`'s message may hold values from outside (a file, the service's answer): print it with
:func:`scheduler_core.cli.output.write_error`, which escapes what a terminal would act on."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from scheduler_core.definitions import API_VERSIONS, MAX_DEPTH, PREVIEW_VERSION, read_json
from scheduler_core.errors import ValidationError

#: Exit statuses (documented in docs/cli.md).
EXIT_OK = 0
EXIT_API_ERROR = 1  # the API refused the request (its ARM error is printed), or an import had failures
EXIT_INVALID = 2  # a bad command line, an unreadable or invalid input file, a definition refused locally
EXIT_UNREACHABLE = 3  # no answer from the endpoint (connection refused, DNS, TLS, timeout)
EXIT_AUTH = 4  # 401 or 403: the API key is missing, wrong or not allowed on the subscription
EXIT_NOT_FOUND = 5  # 404: the collection or job does not exist

#: Environment variables of the command line (client side: not app settings of the service).
ENV_ENDPOINT = "SCHEDULER_ENDPOINT"
ENV_API_KEY = "SCHEDULER_API_KEY"
ENV_API_KEY_FILE = "SCHEDULER_API_KEY_FILE"
ENV_SUBSCRIPTION = "SCHEDULER_SUBSCRIPTION"
ENV_RESOURCE_GROUP = "SCHEDULER_RESOURCE_GROUP"
ENV_COLLECTION = "SCHEDULER_COLLECTION"
#: ENTRA ID SIGN-IN: the scope of the access token (``<Application ID URI>/.default``, docs/security.md).
ENV_ENTRA_SCOPE = "SCHEDULER_ENTRA_SCOPE"

#: The endpoint of `make run` when it has written none (``.run/endpoint``) and ``local.settings.json`` names
#: no ``Host.LocalHttpPort``.
DEFAULT_ENDPOINT = "http://127.0.0.1:7071"
#: The project directory: the checkout this package runs from, where `make run` writes ``.run/`` and
#: ``local.settings.json`` (so the command line finds them from any working directory).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def project_file(relative: str) -> Path:
    """A file `make run` writes, in the working directory when it is there (a project directory), else in
    :data:`PROJECT_ROOT`."""
    here = Path(relative)
    return here if here.is_file() else PROJECT_ROOT / relative


#: Where `make run` writes the API key it generated (read only for a loopback endpoint), the address it
#: listens on while it runs (``python -m local_host run``), and the settings it reads its port from
#: (``Host.LocalHttpPort``) when no ``PORT`` is given; each found by :func:`project_file`.
LOCAL_KEY_FILE = ".run/api-key"
LOCAL_ENDPOINT_FILE = ".run/endpoint"
LOCAL_SETTINGS_FILE = "local.settings.json"
#: The api-version the resource commands speak unless ``--api-version`` says otherwise: the newest.
DEFAULT_API_VERSION = PREVIEW_VERSION
DEFAULT_TIMEOUT = 60.0
#: How deep a JSON file the command line reads may nest (arrays and objects): an export file holds each job
#: 5 levels down (the document, its collections, a collection, its jobs, the job), and a job may nest as
#: deep as the API takes a body (``MAX_DEPTH``).
MAX_FILE_DEPTH = MAX_DEPTH + 8


class CliError(Exception):
    """A problem to report on standard error (``error: ...``) with exit status ``code``."""

    def __init__(self, message: str, code: int = EXIT_INVALID) -> None:
        super().__init__(message)
        self.code = code


def read_json_file(path: str, stdin: TextIO | None = None) -> Any:
    """The JSON document in ``path`` (``-``: standard input). A BOM is accepted (PowerShell writes one).

    Decoded by the service's own strict reader (:func:`scheduler_core.definitions._json.read_json`): a file
    that cannot be read, is not UTF-8, is not JSON or nests deeper than :data:`MAX_FILE_DEPTH` levels is a
    :class:`CliError` (exit status 2) naming the file and the rule, never a traceback."""
    try:
        text = (stdin or sys.stdin).read() if path == "-" else Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path} is not UTF-8 text: {exc}") from None
    try:
        return read_json(text, path, MAX_FILE_DEPTH)
    except ValidationError as exc:
        raise CliError(exc.rule) from None


def _is_loopback(endpoint: str) -> bool:
    host = (urlsplit(endpoint).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


@dataclass(frozen=True)
class Connection:
    """Where the API is and how to present the key: resolved from flags, then the environment."""

    endpoint: str
    api_key: str | None
    subscription: str | None
    resource_group: str | None
    functions_key_header: bool
    headers: tuple[tuple[str, str], ...]
    timeout: float
    #: ENTRA ID SIGN-IN: when set, requests carry an Entra ID access token for this scope (from
    #: azure-identity's DefaultAzureCredential) as ``Authorization: Bearer``, and no API key.
    entra_scope: str | None = None
    #: The api-version of every request (one of ``scheduler_core.definitions.API_VERSIONS``).
    api_version: str = DEFAULT_API_VERSION

    def require_subscription(self) -> str:
        if not self.subscription:
            raise CliError(f"no subscription: pass --subscription or set {ENV_SUBSCRIPTION}")
        return self.subscription

    def require_resource_group(self) -> str:
        if not self.resource_group:
            raise CliError(f"no resource group: pass --resource-group (-g) or set {ENV_RESOURCE_GROUP}")
        return self.resource_group


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError("expected 'Name: value'")
    return name.strip(), value.strip()


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be between 0 and 3600 seconds")
    return value


def api_version_arg(text: str) -> str:
    """An api-version the service accepts (``--api-version``), spelled as the service lists it."""
    for known in API_VERSIONS:
        if known.lower() == text.strip().lower():
            return known
    raise argparse.ArgumentTypeError(f"must be one of {', '.join(API_VERSIONS)}, not {text!r}")


def add_connection_options(parser: argparse.ArgumentParser, *, resource_group: bool = True) -> None:
    """The options every command that calls the API takes (after the command's name)."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--endpoint",
        help=f"base URL of the service (default: ${ENV_ENDPOINT}, else the address `make run` listens on, "
        f"else {DEFAULT_ENDPOINT})",
    )
    group.add_argument("--api-key", help=f"API key (default: ${ENV_API_KEY}); sent as 'Authorization: Bearer KEY'")
    group.add_argument(
        "--api-key-file",
        metavar="PATH",
        help=f"read the API key from a file (default: ${ENV_API_KEY_FILE}; for a loopback endpoint, "
        "the project's .run/api-key as `make run` writes it)",
    )
    group.add_argument(
        "--entra-scope",
        metavar="SCOPE",
        help="sign in with Entra ID instead of an API key: an access token for SCOPE (e.g. "
        f"api://scheduler/.default) from azure-identity's DefaultAzureCredential (default: ${ENV_ENTRA_SCOPE})",
    )
    group.add_argument("--subscription", help=f"subscription id (default: ${ENV_SUBSCRIPTION})")
    if resource_group:
        group.add_argument("-g", "--resource-group", help=f"resource group (default: ${ENV_RESOURCE_GROUP})")
    group.add_argument(
        "--functions-key-header",
        action="store_true",
        help="send the key as 'x-functions-key' (when App Service Authentication needs Authorization)",
    )
    group.add_argument(
        "--header",
        action="append",
        type=_header,
        default=[],
        metavar="'NAME: VALUE'",
        help="extra request header, e.g. 'X-ZUMO-AUTH: <token>' (repeatable)",
    )
    group.add_argument(
        "--timeout", type=_timeout, default=DEFAULT_TIMEOUT, help="seconds to wait for each answer (default 60)"
    )
    group.add_argument(
        "--api-version",
        type=api_version_arg,
        metavar="VERSION",
        help=f"the api-version of the requests (default {DEFAULT_API_VERSION}, the newest; "
        "2016-03-01 shows and sends no preview property)",
    )


def environment() -> Mapping[str, str]:
    """The user's environment, the one place the command line reads it (the service reads its own settings
    in :mod:`scheduler_core.settings`; the command line is a client on the user's machine)."""
    return os.environ


def connection(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Connection:
    """The connection of a parsed command line: each flag, else its environment variable, else a default."""
    env = environment() if environ is None else environ
    endpoint = (args.endpoint or env.get(ENV_ENDPOINT) or local_endpoint()).strip().rstrip("/")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(f"the endpoint must be an http(s) URL such as {DEFAULT_ENDPOINT}, not {endpoint!r}")
    if parts.query or parts.fragment:
        raise CliError(f"the endpoint must not carry a query or fragment: {endpoint!r}")
    scope = _entra_scope(args, env, endpoint)
    key = None if scope else _api_key(args, env, endpoint)
    return Connection(
        endpoint=endpoint,
        api_key=key,
        subscription=(args.subscription or env.get(ENV_SUBSCRIPTION) or "").strip() or None,
        resource_group=(getattr(args, "resource_group", None) or env.get(ENV_RESOURCE_GROUP) or "").strip() or None,
        functions_key_header=bool(args.functions_key_header),
        headers=tuple(args.header or ()),
        timeout=float(args.timeout),
        entra_scope=scope,
        api_version=getattr(args, "api_version", None) or DEFAULT_API_VERSION,
    )


def local_endpoint(endpoint_file: Path | None = None, settings_file: Path | None = None) -> str:
    """The address of the local host `make run` started: the one it wrote to ``.run/endpoint`` while it runs
    (whatever ``PORT`` it was given), else ``http://127.0.0.1:<Host.LocalHttpPort>`` of
    ``local.settings.json`` (the port `make run` takes without ``PORT``), else :data:`DEFAULT_ENDPOINT`. An
    unreadable or odd file is passed over: the command then reports the address it could not reach. The files
    are :func:`project_file`'s unless given."""
    endpoint_file = endpoint_file or project_file(LOCAL_ENDPOINT_FILE)
    settings_file = settings_file or project_file(LOCAL_SETTINGS_FILE)
    try:
        written = endpoint_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        written = ""
    if written and _is_loopback(written) and urlsplit(written).scheme == "http":
        return written
    try:
        document = read_json(settings_file.read_text(encoding="utf-8-sig"), str(settings_file))
    except (OSError, UnicodeDecodeError, ValidationError):
        return DEFAULT_ENDPOINT
    host = document.get("Host") if isinstance(document, dict) else None
    port = host.get("LocalHttpPort") if isinstance(host, dict) else None
    if isinstance(port, int | str) and str(port).isdigit() and 0 < int(str(port)) < 65536:
        return f"http://127.0.0.1:{int(str(port))}"
    return DEFAULT_ENDPOINT


def _api_key(args: argparse.Namespace, env: Mapping[str, str], endpoint: str) -> str | None:
    """The API key: ``--api-key``, ``--api-key-file``, ``$SCHEDULER_API_KEY``, ``$SCHEDULER_API_KEY_FILE``, then
    (for a loopback endpoint) the key ``make run`` wrote."""
    key: str | None = args.api_key or None
    key_file = args.api_key_file or (None if args.api_key or env.get(ENV_API_KEY) else env.get(ENV_API_KEY_FILE))
    if key is None and not key_file:
        key = env.get(ENV_API_KEY) or None
    local_key = project_file(LOCAL_KEY_FILE)
    if key is None and not key_file and _is_loopback(endpoint) and local_key.is_file():
        key_file = str(local_key)
    if key is None and key_file:
        try:
            key = Path(key_file).read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise CliError(f"cannot read the API key file {key_file}: {exc.strerror or exc}") from None
    return key


def _entra_scope(args: argparse.Namespace, env: Mapping[str, str], endpoint: str) -> str | None:
    """ENTRA ID SIGN-IN: the token scope, when the command signs in with Entra ID rather than an API key.

    A flag wins over the environment (``--api-key`` over ``$SCHEDULER_ENTRA_SCOPE``, ``--entra-scope`` over
    ``$SCHEDULER_API_KEY``); both kinds at one level is an error, as is a token for a plain-http endpoint
    that is not this machine (a bearer token is sent over TLS only, as the Azure SDK does)."""
    flag: str | None = (getattr(args, "entra_scope", None) or "").strip() or None
    key_flag = bool(args.api_key or args.api_key_file)
    if flag and key_flag:
        raise CliError("pass either an API key (--api-key, --api-key-file) or --entra-scope, not both")
    scope = flag
    if scope is None and not key_flag:
        scope = (env.get(ENV_ENTRA_SCOPE) or "").strip() or None
        if scope and (env.get(ENV_API_KEY) or env.get(ENV_API_KEY_FILE)):
            raise CliError(
                f"both {ENV_ENTRA_SCOPE} and {ENV_API_KEY} (or {ENV_API_KEY_FILE}) are set: unset one, or choose "
                "with --entra-scope or --api-key"
            )
    if scope is None:
        return None
    if args.functions_key_header:
        raise CliError("--functions-key-header sends an API key; with --entra-scope no key is sent")
    if urlsplit(endpoint).scheme != "https" and not _is_loopback(endpoint):
        raise CliError(f"an Entra ID token is sent over https only (or to this machine), not to {endpoint}")
    return scope


def _properties_of(document: Any, source: str) -> dict[str, Any]:
    """A job file's ``properties``: the file is a job's ARM JSON or just its properties."""
    if not isinstance(document, dict):
        raise CliError(f"{source}: a job definition must be a JSON object")
    if any(isinstance(k, str) and k.lower() == "properties" for k in document):
        key = next(k for k in document if isinstance(k, str) and k.lower() == "properties")
        properties = document[key]
        if not isinstance(properties, dict):
            raise CliError(f"{source}: 'properties' must be a JSON object")
        return dict(properties)
    return dict(document)


def job_body(document: Any, source: str) -> dict[str, Any]:
    """The PUT body of a job file: ``{"properties": ...}`` without the read-only ``status``."""
    properties = _properties_of(document, source)
    return {"properties": {k: v for k, v in properties.items() if not (isinstance(k, str) and k.lower() == "status")}}
