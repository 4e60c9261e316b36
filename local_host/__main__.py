"""``python -m local_host``: run the function app locally, without Azure Functions Core Tools.

python -m local_host run [--azurite] [--port 7071]   serve the app (what ``make run`` does)
python -m local_host run --plan elastic-premium      ... with HTTP and timers on the worker's one pool
python -m local_host run --worker process            ... with the functions in a worker process
python -m local_host keygen [--subscriptions a,b] [--role reader]    make an API key and its settings entry

``run`` checks every port it needs before it starts anything: a busy one is one line on stderr naming the
option to change (``make run PORT=...`` / ``AZURITE_PORTS=...`` when started by ``make``, ``--port`` /
``--azurite-ports`` otherwise) and exit status 2.

``--plan elastic-premium`` runs HTTP and timer invocations on the one pool of ``PYTHON_THREADPOOL_THREAD_COUNT``
threads that runs queue functions, as the Python worker runs every sync function in Azure; ``--worker process``
runs the functions in a worker process that the host kills on a ``functionTimeout`` and replaces when it dies
(see ``local_host/runtime.py`` and ``local_host/worker.py``).
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import time
from pathlib import Path

from local_host.app_index import load_app
from local_host.azurite import PROJECT_ROOT, Azurite, AzuritePorts
from local_host.hostjson import apply_log_levels, load_host_json
from local_host.http_server import HttpLimits
from local_host.local_settings import (
    STORAGE_QUEUE_ENDPOINT,
    apply_local_settings,
    binding_defaults,
    follow_azurite,
    local_http_port,
    new_local_settings,
)
from local_host.ports import PortInUseError, ensure_free, suggest_azurite_ports, suggest_port
from local_host.preflight import api_key_preflight
from local_host.queues import THREAD_COUNT_SETTING
from local_host.runtime import PLANS, WORKERS, LocalHost
from local_host.sas import add_sas_command
from scheduler_core import auth, settings
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.api.handler import MAX_BODY_BYTES
from scheduler_core.errors import ConfigurationError
from scheduler_core.settings import LOG_LEVEL_NAMES

log = logging.getLogger("local_host")

#: Where ``--init`` keeps the API key it made, under the project root (git-ignored).
KEY_FILE = Path(".run") / "api-key"
#: Where ``run`` writes the address it listens on while it runs, for the command line (``python -m
#: scheduler_core``) to find whatever port it was given; removed when it stops.
ENDPOINT_FILE = Path(".run") / "endpoint"

#: How a message names the port options, by what started the host (``--option-names``).
PORT_OPTIONS = {
    "cli": ("--port {}", "--azurite-ports {}"),
    "make": ("make run PORT={}", "make run AZURITE_PORTS={}"),
}


def _configure_logging() -> None:
    logging.Formatter.converter = time.gmtime
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)sZ %(levelname)s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    for noisy in ("azure", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _apply_log_format() -> None:
    """SCHEDULER_LOG_FORMAT=json (from the environment or local.settings.json): JSON lines on the console."""
    from scheduler_core import settings, telemetry

    if settings.log_format() == "json":
        for handler in logging.getLogger().handlers:
            handler.setFormatter(telemetry.JsonFormatter())


def _apply_log_level(chosen: str | None, host_json: Path) -> None:
    """The console's level: ``--log-level``, else ``SCHEDULER_LOG_LEVEL`` (the environment or
    local.settings.json), else host.json's ``logging.logLevel.default``, else INFO; host.json's other
    categories (``Function.<name>``: a function's invocation lines) as it says. A level chosen here is passed on
    to the worker process and to the app (``SCHEDULER_LOG_LEVEL``)."""
    if chosen:
        os.environ["SCHEDULER_LOG_LEVEL"] = chosen
    levels = load_host_json(host_json).log_levels
    default = {category.lower(): level for category, level in levels}.get("default", logging.INFO)
    level = settings.log_level()
    apply_log_levels(levels, level if level is not None else default)


def ensure_local_settings(
    path: Path, sample: Path, http_port: int = 7071, azurite: AzuritePorts | None = None
) -> str | None:
    """Create ``local.settings.json`` from the sample with a fresh API key and this run's ports
    (``Host.LocalHttpPort``, the Storage queue endpoint of the Azurite it starts). Returns the key if known."""
    key_file = path.parent / KEY_FILE
    if not path.exists():
        key = auth.generate_key()
        endpoint = azurite.queue_endpoint() if azurite is not None else None
        path.write_text(new_local_settings(sample, auth.hash_entry(key), http_port, endpoint), encoding="utf-8")
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.write_text(key + "\n", encoding="utf-8")
        key_file.chmod(0o600)
        print(f"created {path.name} with a new API key (its hash only; the key is in {key_file})")
        return key
    if key_file.exists():
        return key_file.read_text(encoding="utf-8").strip()
    return None


def check_ports(host: str, port: int, azurite: AzuritePorts | None) -> None:
    """Raise :class:`PortInUseError` for the first port of this run that is taken (or given twice)."""
    if azurite is not None:
        for service, taken in azurite.by_service().items():
            if port == taken:
                raise PortInUseError(port, "HTTP", host, reason=f"is also the Azurite {service} port")
    if port:
        ensure_free(host, port, "HTTP")
    if azurite is not None:
        for service, taken in azurite.by_service().items():
            ensure_free("127.0.0.1", taken, f"Azurite {service}")


def port_advice(error: PortInUseError, args: argparse.Namespace) -> str:
    """What to run instead: the option that sets the busy port, with free ports filled in."""
    http_option, azurite_option = PORT_OPTIONS[args.option_names]
    azurite = AzuritePorts.parse(args.azurite_ports) if args.azurite else None
    if error.service == "HTTP":
        avoid = azurite.by_service().values() if azurite is not None else ()
        return "choose another: " + http_option.format(suggest_port(error.port, avoid, error.host))
    http_port = args.port if args.port is not None else local_http_port(Path(args.root) / "local.settings.json")
    return "choose others: " + azurite_option.format(",".join(map(str, suggest_azurite_ports([http_port]))))


def _stop_on_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _elapsed(since: float) -> str:
    return f"{time.monotonic() - since:.1f} s"


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    settings_file = root / "local.settings.json"
    port = args.port if args.port is not None else local_http_port(settings_file)
    azurite_ports = AzuritePorts.parse(args.azurite_ports) if args.azurite else None
    check_ports(args.host, port, azurite_ports)  # before anything is started or written
    key = (
        ensure_local_settings(settings_file, root / "local.settings.sample.json", port, azurite_ports)
        if args.init
        else None
    )
    set_by_user = frozenset(os.environ)
    apply_local_settings(settings_file)
    binding_defaults()  # settings added since the file was written (SCHEDULER_CLEANUP_QUEUE)
    _apply_log_format()
    _apply_log_level(args.log_level, root / "host.json")
    azurite: Azurite | None = None
    host: LocalHost | None = None
    endpoint = ""
    signal.signal(signal.SIGTERM, _stop_on_signal)  # `kill` stops cleanly, like Ctrl-C
    # Ctrl-C (or `kill -INT`) stops it too when it was started in the background by a script, whose shell
    # starts background jobs with SIGINT ignored (Python then installs no KeyboardInterrupt handler).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1` prints every thread's stack (a host that does not stop)
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        if azurite_ports is not None:
            location = None if args.in_memory else root / ".azurite"
            print(f"Starting Azurite on 127.0.0.1 ports {azurite_ports} (blob,queue,table)...", flush=True)
            step = time.monotonic()
            azurite = Azurite(azurite_ports, location, own_session=True)
            azurite.start()
            os.environ["AzureWebJobsStorage"] = azurite.connection_string
            follow_azurite(os.environ, azurite_ports.queue_endpoint(), set_by_user)
            print(
                f"Azurite listening on 127.0.0.1 ports {azurite_ports} (data in {location or 'memory'}), "
                f"started in {_elapsed(step)}"
            )
        os.environ.setdefault("WEBSITE_HOSTNAME", f"localhost:{port}")  # as Core Tools sets it
        config = settings.load()
        gate = auth.gate_from_settings(config)  # fail at start-up, not on the first request
        step = time.monotonic()
        provision(config)
        print(f"Tables and queues ready in {_elapsed(step)}", flush=True)
        state_dir = Path(args.state_dir).resolve() if args.state_dir else root / ".run" / "host"
        app = load_app(args.app)
        config_json = load_host_json(root / "host.json")
        limits = HttpLimits(
            max_body_bytes=args.max_body_bytes,
            header_timeout=args.header_timeout,
            keep_alive_timeout=args.keep_alive_timeout,
            body_timeout=args.body_timeout,
            max_concurrent_requests=config_json.http.max_concurrent_requests,
            max_outstanding_requests=config_json.http.max_outstanding_requests,
            max_connections=args.max_connections,
        )
        authenticated = [name.strip() for name in args.authenticate.split(",") if name.strip()]
        preflight = api_key_preflight(gate, authenticated, MAX_BODY_BYTES) if authenticated else None
        host = LocalHost(
            app,
            config_json,
            args.host,
            port,
            state_dir=state_dir,
            http_limits=limits,
            preflight=preflight,
            plan=args.plan,
            worker=args.worker,
            worker_app=args.app,
        )
        host.start()
        endpoint = _write_endpoint(root / ENDPOINT_FILE, port)
        if config.execution_queue_count > 1:
            queues = ", ".join(config.execution_queues)
            print(f"Execution queues ({config.execution_queue_count}, SCHEDULER_EXECUTION_QUEUE_COUNT): {queues}")
        _banner(host, key, config.storage_queue_endpoint if azurite is not None else None, started)
        host.wait()
    except KeyboardInterrupt:
        print("\nstopping...")
    finally:
        if host is not None:
            host.stop()
            _remove_endpoint(root / ENDPOINT_FILE, endpoint)
        if azurite is not None:
            azurite.stop()
            print("Azurite stopped.", flush=True)
    return 0


def _write_endpoint(path: Path, port: int) -> str:
    """Write ``http://127.0.0.1:<port>`` to ``path`` (the command line's default endpoint); returns it."""
    endpoint = f"http://127.0.0.1:{port}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(endpoint + "\n", encoding="utf-8")
    return endpoint


def _remove_endpoint(path: Path, endpoint: str) -> None:
    """Remove ``path`` unless another run has written its own address there since."""
    try:
        if path.read_text(encoding="utf-8").strip() == endpoint:
            path.unlink()
    except OSError:
        pass


def _banner(host: LocalHost, key: str | None, queue_endpoint: str | None, started: float) -> None:
    prefix = host.config.route_prefix.strip("/")
    print(f"Scheduler API listening on {host.base_url} (ready in {_elapsed(started)})")
    print(f"Dashboard: {host.base_url}/{prefix + '/' if prefix else ''}dashboard (sign in with the API key)")
    print(f"API key: {key}" if key else "API key: the one whose hash is in SCHEDULER_API_KEYS")
    print(
        f"Try: curl -H 'Authorization: Bearer <key>' "
        f"'{host.base_url}/subscriptions/x/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01'"
    )
    if queue_endpoint is not None:
        print(f"Storage queue actions go to {queue_endpoint} ({STORAGE_QUEUE_ENDPOINT})")
    if host.pollers:
        print(f"Queue functions run on {host.worker_threads} threads ({THREAD_COUNT_SETTING}, as in Azure)")
    if host.plan == "elastic-premium":
        print(f"Plan elastic-premium: HTTP and timer functions run on those {host.worker_threads} threads too")
    print("Press Ctrl-C to stop.", flush=True)


def keygen(args: argparse.Namespace) -> int:
    key = auth.generate_key()
    subscriptions = [s for s in (args.subscriptions or "").split(",") if s]
    print(f"API key (give it to the client; it is not stored anywhere): {key}")
    role = auth.Role.READER if args.role == "reader" else auth.Role.CONTRIBUTOR
    print(f"SCHEDULER_API_KEYS entry (append with ';'): {auth.hash_entry(key, subscriptions, role)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_host", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    run_parser = sub.add_parser("run", help="serve the function app locally")
    run_parser.add_argument("--root", default=str(PROJECT_ROOT), help="project root (host.json, function_app.py)")
    run_parser.add_argument("--app", default="function_app:app", help="module:attribute of the FunctionApp")
    run_parser.add_argument("--host", default="127.0.0.1")
    run_parser.add_argument(
        "--port", type=int, help="HTTP port (default: Host.LocalHttpPort of local.settings.json, else 7071)"
    )
    run_parser.add_argument("--azurite", action="store_true", help="start Azurite and point the app at it")
    run_parser.add_argument("--azurite-ports", default="10000,10001,10002", help="blob,queue,table ports")
    run_parser.add_argument("--in-memory", action="store_true", help="keep Azurite's data in memory only")
    run_parser.add_argument("--init", action="store_true", help="create local.settings.json with an API key")
    defaults = HttpLimits()
    run_parser.add_argument(
        "--authenticate",
        default="management_api",
        help="comma-separated functions whose API key is checked before the body is read ('' for none)",
    )
    run_parser.add_argument(
        "--max-body-bytes", type=int, default=defaults.max_body_bytes, help="largest request body (413 beyond)"
    )
    run_parser.add_argument(
        "--header-timeout", type=float, default=defaults.header_timeout, help="seconds to send a request's head"
    )
    run_parser.add_argument(
        "--keep-alive-timeout", type=float, default=defaults.keep_alive_timeout, help="seconds an idle connection lives"
    )
    run_parser.add_argument(
        "--body-timeout", type=float, default=defaults.body_timeout, help="seconds to send a request's body"
    )
    run_parser.add_argument(
        "--max-connections", type=int, default=defaults.max_connections, help="open connections at most"
    )
    run_parser.add_argument(
        "--state-dir",
        help="the host's folder (default: <root>/.run/host); its path names the host id, under which "
        "timers' locks and schedule status are kept in AzureWebJobsStorage's blobs",
    )
    run_parser.add_argument(
        "--plan",
        choices=PLANS,
        default="default",
        help="elastic-premium: HTTP and timer invocations share the worker's pool with queue invocations",
    )
    run_parser.add_argument(
        "--worker",
        choices=WORKERS,
        default="threads",
        help="process: run the functions in a worker process, killed on a functionTimeout, replaced if it dies",
    )
    run_parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVEL_NAMES,
        help="the console's least level (default: SCHEDULER_LOG_LEVEL, else host.json's logging.logLevel.default, "
        "else info); debug also shows every empty scan",
    )
    run_parser.add_argument("--option-names", choices=sorted(PORT_OPTIONS), default="cli", help=argparse.SUPPRESS)
    run_parser.set_defaults(handler=run)
    keygen_parser = sub.add_parser("keygen", help="make a new API key and its SCHEDULER_API_KEYS entry")
    keygen_parser.add_argument("--subscriptions", help="comma-separated subscription ids the key may use")
    keygen_parser.add_argument(
        "--role", choices=("contributor", "reader"), default="contributor", help="reader: a read-only key"
    )
    keygen_parser.set_defaults(handler=keygen)
    add_sas_command(sub)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    _configure_logging()
    try:
        return int(args.handler(args))
    except PortInUseError as exc:
        print(f"error: {exc.message}; {port_advice(exc, args)}", file=sys.stderr)
        return 2
    except ConfigurationError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
