"""``python -m local_host sas``: a SAS token for a Storage queue action against the local Azurite, allowing only
what it says (add, by default), refused by a real account's rules of form (bad permissions, lifetimes).

The command runs as a user runs it (a child process); the token is used against the session's Azurite."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.queue import QueueClient, QueueServiceClient

from local_host.azurite import DEV_ACCOUNT, Azurite

pytestmark = [pytest.mark.azurite, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]


def sas(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "local_host", "sas", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_token_adds_to_its_queue_and_does_nothing_else(azurite: Azurite) -> None:
    name = f"sas-{uuid.uuid4().hex[:8]}"
    QueueServiceClient.from_connection_string(azurite.connection_string).create_queue(name)
    made = sas("--queue", name)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert "sp=a" in token and "sig=" in token
    url = f"http://127.0.0.1:{azurite.ports.queue}/{DEV_ACCOUNT}/{name}"
    client = QueueClient.from_queue_url(url, credential=token)
    client.send_message("hello")
    with pytest.raises(HttpResponseError) as refused:  # add only: not read
        list(client.receive_messages())
    assert refused.value.status_code == 403
    other = QueueClient.from_queue_url(f"http://127.0.0.1:{azurite.ports.queue}/{DEV_ACCOUNT}/other", credential=token)
    with pytest.raises(HttpResponseError):  # its queue only
        other.send_message("hello")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--queue", "q", "--permission", "x"], "must be letters of 'raup'"),
        (["--queue", "q", "--hours", "0"], "must be more than 0"),
        (["--queue", "q", "--hours", "9000"], "at most a year"),
        ([], "--queue"),
    ],
)
def test_bad_arguments_are_refused_naming_the_rule(args: list[str], says: str) -> None:
    made = sas(*args)
    assert made.returncode == 2 and says in made.stderr and made.stdout == ""
