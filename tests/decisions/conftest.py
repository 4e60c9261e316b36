"""Fixtures of the decision tests: one deployment on the memory adapter in simulated time
(:class:`tests.support.harness.Deployment`, from :data:`~tests.support.harness.START`, with the Standard
collection :data:`~tests.support.harness.COLLECTION`), and a real HTTP server its actions call
(:func:`tests.support.http_target.http_target`)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.pipeline import durable
from scheduler_core.settings import Settings
from tests.support.harness import START, Deployment
from tests.support.http_target import HttpTarget, http_target


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)


@pytest.fixture
def deployment(memory_env: Settings, clock: SimulatedClock) -> Deployment:
    return Deployment.on_memory(memory_env, clock)


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpTarget]:
    """One real HTTP server for the session (stopping one takes half a second: its polling interval)."""
    with http_target() as server:
        yield server


@pytest.fixture
def target(http_server: HttpTarget) -> HttpTarget:
    """A real HTTP server on 127.0.0.1 that records what it receives and answers 200 unless told otherwise;
    nothing received before this test is kept."""
    http_server.answer([200])
    with http_server.lock:
        http_server.received.clear()
    return http_server


@pytest.fixture
def simulated_durable_waits(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's durable writes (``durable.durably``) wait between tries with their default
    ``sleep``, ``time.sleep``: the executor's ``sleep`` seam does not reach them. Here that default is
    the simulated clock (so a wait is seen, and takes no real time)."""
    sleep, backoff = durable.durably.__defaults__ or (None, None)
    assert sleep is time.sleep, "durably's signature changed: adapt this fixture"
    monkeypatch.setattr(durable.durably, "__defaults__", (deployment.clock.advance, backoff))
