"""host.json is what the design needs, and the local host reads it as the Functions host does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local_host.hostjson import load_host_json, parse_timespan
from scheduler_core.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


def test_project_host_json_settings() -> None:
    data = json.loads((ROOT / "host.json").read_text())
    assert data["version"] == "2.0"
    assert data["extensionBundle"]["id"] == "Microsoft.Azure.Functions.ExtensionBundle"
    assert data["extensionBundle"]["version"].startswith("[4.")
    config = load_host_json(ROOT / "host.json")
    assert config.route_prefix == ""
    assert config.queues.max_polling_interval <= 5, "queue polling must be low-latency"
    assert config.queues.message_encoding == "base64", "senders use TextBase64EncodePolicy"
    assert 1 <= config.queues.max_dequeue_count <= 10
    assert config.queues.batch_size >= 8


def test_timespans() -> None:
    assert parse_timespan("00:00:02") == 2
    assert parse_timespan("01:02:03") == 3723
    assert parse_timespan("1.00:00:30") == 86430
    assert parse_timespan("00:00:00.5") == 0.5
    with pytest.raises(ConfigurationError):
        parse_timespan("2s")


def test_defaults_when_absent(tmp_path: Path) -> None:
    config = load_host_json(tmp_path / "host.json")
    assert config.route_prefix == "api"
    assert config.queues.max_dequeue_count == 5
    assert config.queues.message_encoding == "base64"


def test_bad_values_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "host.json"
    path.write_text(json.dumps({"version": "2.0", "extensions": {"queues": {"batchSize": 64}}}))
    with pytest.raises(ConfigurationError, match="batchSize"):
        load_host_json(path)
    path.write_text(json.dumps({"version": "2.0", "extensions": {"queues": {"messageEncoding": "utf8"}}}))
    with pytest.raises(ConfigurationError, match="messageEncoding"):
        load_host_json(path)
