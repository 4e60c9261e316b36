"""The witness's contract (:mod:`scheduler_core.regions.witness`) over both witnesses: the memory one (simulated
time) and the blob lease on Azurite (real time, with the Blob service's shortest lease, 15 s)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from local_host.azurite import Azurite
from scheduler_core.adapters.memory import SimulatedClock
from scheduler_core.adapters.memory.witness import MemoryWitness
from scheduler_core.regions.witness import Witness, WitnessState, WitnessUnreachable

pytestmark = pytest.mark.long(75)  # the blob witness's real leases: 15-s waits

LEASE = timedelta(seconds=15)
#: A hand-back's hold in these tests (the product's is 120 s).
HOLD = LEASE + timedelta(seconds=5)  # the blob's write time has whole seconds


@dataclass
class WitnessBackend:
    witness: Witness
    wait: Callable[[timedelta], None]  # lets time pass, as the witness times its lease


@pytest.fixture(params=["memory", "blob"])
def backend(request: pytest.FixtureRequest) -> Iterator[WitnessBackend]:
    if request.param == "memory":
        clock = SimulatedClock(datetime(2030, 1, 1, tzinfo=UTC))
        yield WitnessBackend(MemoryWitness(clock, LEASE, HOLD), clock.advance)
        return
    from azure.storage.blob import BlobServiceClient

    from scheduler_core.adapters.azure.witness import BlobWitness

    azurite: Azurite = request.getfixturevalue("azurite")
    service = BlobServiceClient.from_connection_string(azurite.connection_string)
    container = service.get_container_client(f"witness-{uuid.uuid4().hex[:8]}")  # created by the witness
    witness = BlobWitness(container, "regions/active", LEASE, HOLD)
    yield WitnessBackend(witness, lambda span: time.sleep(span.total_seconds()))


def test_a_witness_never_held_names_no_one(backend: WitnessBackend) -> None:
    assert backend.witness.read() == WitnessState(None, 0, False)


def test_the_first_acquisition_is_epoch_1_and_no_other_region_gets_the_running_lease(backend: WitnessBackend) -> None:
    witness = backend.witness
    assert witness.acquire("westeurope") == 1
    assert witness.read() == WitnessState("westeurope", 1, True)
    assert witness.read().held_by("westeurope") and not witness.read().held_by("northeurope")
    assert witness.acquire("northeurope") is None
    assert witness.acquire("westeurope") is None  # a running holding is renewed, not acquired again
    assert witness.renew("westeurope", 1)
    assert not witness.renew("northeurope", 1) and not witness.renew("westeurope", 2)
    assert witness.read() == WitnessState("westeurope", 1, True)


def test_a_lease_that_ran_out_goes_to_the_next_region_with_the_next_epoch_and_the_old_holding_is_over(
    backend: WitnessBackend,
) -> None:
    witness = backend.witness
    assert witness.acquire("westeurope") == 1
    backend.wait(LEASE + timedelta(seconds=1))
    assert witness.read() == WitnessState("westeurope", 1, False)
    assert witness.acquire("northeurope") == 2
    assert witness.read() == WitnessState("northeurope", 2, True)
    assert not witness.renew("westeurope", 1)  # taken since: the old holder learns it is standby
    witness.release("westeurope", 1)  # nothing: not its holding
    assert witness.read() == WitnessState("northeurope", 2, True)


def test_a_holding_renewed_after_its_lease_ran_out_is_kept_while_no_one_took_it(backend: WitnessBackend) -> None:
    witness = backend.witness
    assert witness.acquire("westeurope") == 1
    backend.wait(LEASE + timedelta(seconds=1))
    assert witness.renew("westeurope", 1)
    assert witness.read() == WitnessState("westeurope", 1, True)


def test_a_released_holding_lets_another_region_acquire_at_once(backend: WitnessBackend) -> None:
    witness = backend.witness
    assert witness.acquire("westeurope") == 1
    witness.release("westeurope", 1)
    assert not witness.read().leased
    assert witness.acquire("northeurope") == 2
    assert witness.acquire("westeurope") is None


def test_a_region_cut_off_from_the_memory_witness_is_told_so() -> None:
    witness = MemoryWitness(SimulatedClock(datetime(2030, 1, 1, tzinfo=UTC)))
    witness.cut.add("westeurope")
    with pytest.raises(WitnessUnreachable):
        witness.acquire("westeurope")
    with pytest.raises(WitnessUnreachable):
        witness.seen_from("westeurope").read()
    assert witness.acquire("northeurope") == 1


def test_a_blob_witness_out_of_reach_is_told_so_within_seconds() -> None:
    from local_host.azurite import DEV_ACCOUNT, DEV_KEY, free_port
    from scheduler_core.adapters.azure.witness import blob_witness
    from scheduler_core.settings import StorageAccount

    port = free_port()  # nothing listens there
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )
    witness = blob_witness(StorageAccount(connection), "witness", "regions/active", LEASE)
    for call in (witness.read, lambda: witness.acquire("westeurope"), lambda: witness.renew("westeurope", 1)):
        started = time.monotonic()
        with pytest.raises(WitnessUnreachable):
            call()
        assert time.monotonic() - started < 10


def test_a_demoted_region_never_acquires_until_promoted_whoever_holds_the_lease(backend: WitnessBackend) -> None:
    witness = backend.witness
    witness.set_demoted("westeurope", True)
    assert witness.read() == WitnessState(None, 0, False, frozenset({"westeurope"}))
    assert witness.acquire("westeurope") is None
    assert witness.acquire("northeurope") == 1
    witness.set_demoted("northeurope", True)  # written under the running lease; the holding goes on
    assert witness.read() == WitnessState("northeurope", 1, True, frozenset({"westeurope", "northeurope"}))
    assert witness.renew("northeurope", 1)
    witness.release("northeurope", 1)
    assert witness.acquire("northeurope") is None and witness.acquire("westeurope") is None  # both demoted
    witness.set_demoted("westeurope", False)
    assert witness.acquire("westeurope") == 2
    assert witness.read() == WitnessState("westeurope", 2, True, frozenset({"northeurope"}))


def test_a_handed_back_holding_goes_to_another_region_and_its_region_waits_the_hold(backend: WitnessBackend) -> None:
    witness = backend.witness
    assert witness.acquire("westeurope") == 1
    assert not witness.hand_back("northeurope", 1) and not witness.hand_back("westeurope", 2)  # not theirs
    assert witness.hand_back("westeurope", 1)
    assert witness.read() == WitnessState("westeurope", 1, True, handing_back="westeurope")  # its lease runs on
    backend.wait(LEASE + timedelta(seconds=1))
    assert witness.acquire("westeurope") is None  # it handed the lease back: it does not take it again
    assert witness.acquire("northeurope") == 2
    assert witness.read() == WitnessState("northeurope", 2, True)  # the hand-back is over once another took it
    assert witness.hand_back("northeurope", 2)
    backend.wait(HOLD + timedelta(seconds=2))  # no one took it within the hold: its region may take it back
    assert witness.read().handing_back is None
    assert witness.acquire("northeurope") == 3


def test_regions_racing_for_a_free_lease_leave_one_holder(backend: WitnessBackend) -> None:
    """Eight acquisitions at once, four per region, as every instance of two regions beating together: one
    region holds epoch 1 (its racing instances may each be answered with it), and the witness names it."""
    import threading

    witness, results = backend.witness, []
    start = threading.Barrier(8)

    def race(region: str) -> None:
        start.wait()
        results.append((region, witness.acquire(region)))

    threads = [threading.Thread(target=race, args=(region,)) for region in ("westeurope", "northeurope") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    won = {(region, epoch) for region, epoch in results if epoch is not None}
    assert len(results) == 8 and len(won) == 1, results
    [(region, epoch)] = won
    assert epoch == 1 and witness.read() == WitnessState(region, 1, True)
