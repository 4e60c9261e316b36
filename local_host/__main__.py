"""``python -m local_host``: run the function app locally, without Azure Functions Core Tools.

python -m local_host run [--azurite] [--port 7071]   serve the app (what ``make run`` does)
python -m local_host keygen [--subscriptions a,b]    make an API key and its settings entry
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

from local_host.app_index import load_app
from local_host.azurite import PROJECT_ROOT, Azurite, AzuritePorts
from local_host.hostjson import load_host_json
from local_host.http_server import HttpLimits
from local_host.local_settings import apply_local_settings
from local_host.preflight import api_key_preflight
from local_host.runtime import LocalHost
from scheduler_core import auth, settings
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.api.handler import MAX_BODY_BYTES
from scheduler_core.errors import ConfigurationError

log = logging.getLogger("local_host")

KEY_FILE = PROJECT_ROOT / ".run" / "api-key"


def _configure_logging() -> None:
    logging.Formatter.converter = time.gmtime
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)sZ %(levelname)s %(name)s: %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    for noisy in ("azure", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def ensure_local_settings(path: Path, sample: Path) -> str | None:
    """Create ``local.settings.json`` from the sample with a fresh API key. Returns the key if known."""
    if not path.exists():
        data = json.loads(sample.read_text(encoding="utf-8"))
        key = auth.generate_key()
        data["Values"]["SCHEDULER_API_KEYS"] = auth.hash_entry(key)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
        KEY_FILE.write_text(key + "\n", encoding="utf-8")
        KEY_FILE.chmod(0o600)
        print(f"created {path.name} with a new API key (its hash only; the key is in {KEY_FILE})")
        return key
    if KEY_FILE.exists():
        return KEY_FILE.read_text(encoding="utf-8").strip()
    return None


def _parse_ports(text: str) -> AzuritePorts:
    try:
        blob, queue, table = (int(p) for p in text.split(","))
    except ValueError:
        raise ConfigurationError(f"--azurite-ports must be three ports 'blob,queue,table', got {text!r}") from None
    return AzuritePorts(blob, queue, table)


def _stop_on_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    key = (
        ensure_local_settings(root / "local.settings.json", root / "local.settings.sample.json") if args.init else None
    )
    apply_local_settings(root / "local.settings.json")
    azurite: Azurite | None = None
    host: LocalHost | None = None
    signal.signal(signal.SIGTERM, _stop_on_signal)  # `kill` stops cleanly, like Ctrl-C
    try:
        if args.azurite:
            location = None if args.in_memory else root / ".azurite"
            azurite = Azurite(_parse_ports(args.azurite_ports), location)
            azurite.start()
            os.environ["AzureWebJobsStorage"] = azurite.connection_string
            print(f"Azurite listening on 127.0.0.1 ports {args.azurite_ports} (data in {location or 'memory'})")
        config = settings.load()
        keys = auth.parse_keys(config.api_keys)  # fail at start-up, not on the first request
        provision(config)
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
        preflight = api_key_preflight(keys, authenticated, MAX_BODY_BYTES) if authenticated else None
        host = LocalHost(
            app,
            config_json,
            args.host,
            args.port,
            state_dir=state_dir,
            http_limits=limits,
            preflight=preflight,
        )
        host.start()
        print(f"Scheduler API listening on {host.base_url}")
        print(f"API key: {key}" if key else "API key: the one whose hash is in SCHEDULER_API_KEYS")
        print(
            f"Try: curl -H 'Authorization: Bearer <key>' "
            f"'{host.base_url}/subscriptions/x/providers/Microsoft.Scheduler/jobCollections?api-version=2016-03-01'"
        )
        print("Press Ctrl-C to stop.", flush=True)
        host.wait()
    except KeyboardInterrupt:
        print("\nstopping...")
    finally:
        if host is not None:
            host.stop()
        if azurite is not None:
            azurite.stop()
            print("Azurite stopped.", flush=True)
    return 0


def keygen(args: argparse.Namespace) -> int:
    key = auth.generate_key()
    subscriptions = [s for s in (args.subscriptions or "").split(",") if s]
    print(f"API key (give it to the client; it is not stored anywhere): {key}")
    print(f"SCHEDULER_API_KEYS entry (append with ';'): {auth.hash_entry(key, subscriptions)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_host", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    run_parser = sub.add_parser("run", help="serve the function app locally")
    run_parser.add_argument("--root", default=str(PROJECT_ROOT), help="project root (host.json, function_app.py)")
    run_parser.add_argument("--app", default="function_app:app", help="module:attribute of the FunctionApp")
    run_parser.add_argument("--host", default="127.0.0.1")
    run_parser.add_argument("--port", type=int, default=7071)
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
        "--state-dir", help="where the host keeps timers' schedule status (default: <root>/.run/host)"
    )
    run_parser.set_defaults(handler=run)
    keygen_parser = sub.add_parser("keygen", help="make a new API key and its SCHEDULER_API_KEYS entry")
    keygen_parser.add_argument("--subscriptions", help="comma-separated subscription ids the key may use")
    keygen_parser.set_defaults(handler=keygen)
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    _configure_logging()
    try:
        return int(args.handler(args))
    except ConfigurationError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
