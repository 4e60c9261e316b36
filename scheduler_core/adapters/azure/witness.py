"""The witness as a blob lease (docs/regions.md): one blob in a storage account outside both regions, its lease
kept by the Blob service, its holder and epoch in the blob's metadata.

A holding's lease id is derived from the region and the epoch (:func:`lease_id`), so every instance of the
region can renew or release it without sharing state. The metadata can only be written under the lease, so
what it names is the holder of the lease that runs (or ran last). An acquisition reads the epoch, takes the
lease with the next epoch's id, then writes the metadata: two regions racing compute the same epoch but
different lease ids, and the Blob service gives the lease to one (409 for the other).
"""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import AzureError, HttpResponseError, ResourceExistsError, ResourceNotFoundError

from scheduler_core.regions.witness import HANDBACK_HOLD, LEASE, WitnessState, WitnessUnreachable
from scheduler_core.settings import StorageAccount

if TYPE_CHECKING:
    from azure.storage.blob import ContainerClient

__all__ = ["BlobWitness", "blob_witness", "lease_id"]

#: Every witness call is bounded: a region must learn within its beat that the witness is out of reach.
CONNECT_TIMEOUT_SECONDS = 5
READ_TIMEOUT_SECONDS = 5
RETRIES = 0  # the next beat (15 s later) is the retry

#: The namespace of holdings' lease ids.
_HOLDINGS = uuid.UUID("5d1f0c3e-6a39-4c1b-9b62-3f3a4f0e2a61")


def lease_id(region: str, epoch: int) -> str:
    """The lease id of ``region``'s holding of ``epoch`` (the same in every instance of the region)."""
    return str(uuid.uuid5(_HOLDINGS, f"{region}|{epoch}"))


class BlobWitness:
    """A :class:`~scheduler_core.regions.witness.Witness` on the blob ``name`` of ``container`` (both created when
    missing). ``lease``: 15 to 60 s, as the Blob service allows; ``hold``: a hand-back's
    (:data:`~scheduler_core.regions.witness.HANDBACK_HOLD`)."""

    def __init__(
        self, container: ContainerClient, name: str, lease: timedelta = LEASE, hold: timedelta = HANDBACK_HOLD
    ) -> None:
        seconds = lease.total_seconds()
        if not 15 <= seconds <= 60 or seconds != int(seconds):
            raise ValueError("a blob lease lasts a whole number of seconds from 15 to 60")
        self.container = container
        self.blob = container.get_blob_client(name)
        self.lease = lease
        self.hold = hold

    def read(self) -> WitnessState:
        return self._read()[0]

    def _read(self) -> tuple[WitnessState, str | None]:
        """What the blob says, and its ETag (None: no blob)."""
        try:
            properties = self.blob.get_blob_properties()
        except ResourceNotFoundError:
            return WitnessState(None, 0, False), None
        except AzureError as error:
            raise WitnessUnreachable(_reason(error)) from error
        metadata = properties.metadata or {}
        handing_back = metadata.get("handback") or None
        if handing_back is not None and datetime.now(UTC) - properties.last_modified >= self.hold:
            handing_back = None  # its hold is over (timed by the blob's last write, the storage service's clock)
        state = WitnessState(
            metadata.get("holder") or None,
            int(metadata.get("epoch", "0") or 0),
            properties.lease.state == "leased",
            frozenset(name for name in metadata.get("demoted", "").split(",") if name),
            handing_back,
        )
        return state, properties.etag

    def acquire(self, region: str) -> int | None:
        from azure.storage.blob import BlobLeaseClient

        state, etag = self._read()
        if state.leased or region in state.demoted or state.handing_back == region:
            return None
        epoch = state.epoch + 1
        lease = BlobLeaseClient(self.blob, lease_id=lease_id(region, epoch))
        try:
            if etag is None:
                self._create()
            lease.acquire(lease_duration=int(self.lease.total_seconds()))
        except HttpResponseError as error:
            if error.status_code == 409:  # another region took it first
                return None
            raise WitnessUnreachable(_reason(error)) from error
        except AzureError as error:
            raise WitnessUnreachable(_reason(error)) from error
        # written only over what was read: a demotion (or another acquisition) since then wins. The lease is
        # never released here: its id is the region's, and another instance of the region may hold it and act.
        try:
            self.blob.set_blob_metadata(_metadata(region, epoch, state.demoted), lease=lease, **_unchanged_since(etag))
        except HttpResponseError as error:
            if error.status_code != 412:
                raise WitnessUnreachable(_reason(error)) from error
            now = self.read()  # another instance of this region wrote the same holding, or a demotion came first
            return epoch if (now.holder, now.epoch) == (region, epoch) and region not in now.demoted else None
        except AzureError as error:
            raise WitnessUnreachable(_reason(error)) from error
        return epoch

    def set_demoted(self, region: str, demoted: bool) -> None:
        from azure.storage.blob import BlobLeaseClient

        for _ in range(5):  # a write that lost a race with another reads again
            state, etag = self._read()
            names = state.demoted | {region} if demoted else state.demoted - {region}
            holding = state.holder if state.leased else None  # a leased blob is written under its lease
            lease = BlobLeaseClient(self.blob, lease_id=lease_id(holding, state.epoch)) if holding else None
            try:
                if etag is None:
                    self._create()
                    continue
                self.blob.set_blob_metadata(
                    _metadata(state.holder, state.epoch, names), lease=lease, **_unchanged_since(etag)
                )
                return
            except HttpResponseError as error:
                if error.status_code not in (409, 412):
                    raise WitnessUnreachable(_reason(error)) from error
            except AzureError as error:
                raise WitnessUnreachable(_reason(error)) from error
        raise WitnessUnreachable("the witness's blob kept changing while the demotion was written")

    def renew(self, region: str, epoch: int) -> bool:
        return self._on_holding(region, epoch, "renew")

    def hand_back(self, region: str, epoch: int) -> bool:
        from azure.storage.blob import BlobLeaseClient

        state, etag = self._read()
        if not state.held_by(region) or state.epoch != epoch:
            return False
        lease = BlobLeaseClient(self.blob, lease_id=lease_id(region, epoch))
        metadata = {**_metadata(region, epoch, state.demoted), "handback": region}
        try:
            self.blob.set_blob_metadata(metadata, lease=lease, **_unchanged_since(etag))
        except HttpResponseError as error:
            if error.status_code in (409, 412):  # no longer its lease, or the blob changed: told to try again
                return False
            raise WitnessUnreachable(_reason(error)) from error
        except AzureError as error:
            raise WitnessUnreachable(_reason(error)) from error
        return True

    def release(self, region: str, epoch: int) -> None:
        self._on_holding(region, epoch, "release")

    def _on_holding(self, region: str, epoch: int, operation: str) -> bool:
        """Renew or release ``region``'s holding of ``epoch``: False when it is not that region's (the lease is
        another holding's, or none, or the blob is gone)."""
        from azure.storage.blob import BlobLeaseClient

        lease = BlobLeaseClient(self.blob, lease_id=lease_id(region, epoch))
        try:
            lease.renew() if operation == "renew" else lease.release()
        except HttpResponseError as error:
            if error.status_code in (404, 409, 412):
                return False
            raise WitnessUnreachable(_reason(error)) from error
        except AzureError as error:
            raise WitnessUnreachable(_reason(error)) from error
        return True

    def _create(self) -> None:
        """The witness blob (empty), and its container, when missing; a leased or existing blob is left alone."""
        for attempt in (1, 2):
            try:
                self.blob.upload_blob(b"", overwrite=False)
                return
            except ResourceExistsError:
                return
            except HttpResponseError as error:
                if error.status_code == 412:  # leased meanwhile
                    return
                if error.status_code != 404 or attempt == 2:
                    raise
            with contextlib.suppress(ResourceExistsError):
                self.container.create_container()


def blob_witness(account: StorageAccount, container: str, name: str, lease: timedelta = LEASE) -> BlobWitness:
    """The witness on the blob ``container``/``name`` of ``account`` (a connection string, or the blob endpoint
    reached with the app's identity), each call bounded (no retry: the next beat is one;
    :data:`CONNECT_TIMEOUT_SECONDS` and :data:`READ_TIMEOUT_SECONDS`)."""
    from azure.storage.blob import BlobServiceClient

    options: dict[str, Any] = {
        "retry_total": RETRIES,
        "connection_timeout": CONNECT_TIMEOUT_SECONDS,
        "read_timeout": READ_TIMEOUT_SECONDS,
    }
    if account.connection_string:
        service = BlobServiceClient.from_connection_string(account.connection_string, **options)
    else:
        from scheduler_core.adapters.azure.clients import _default_credential

        service = BlobServiceClient(account.endpoint, credential=_default_credential(), **options)
    return BlobWitness(service.get_container_client(container), name, lease)


def _metadata(holder: str | None, epoch: int, demoted: frozenset[str]) -> dict[str, str]:
    metadata = {"epoch": str(epoch), "demoted": ",".join(sorted(demoted))}
    if holder is not None:
        metadata["holder"] = holder
    return metadata


def _unchanged_since(etag: str | None) -> dict[str, Any]:
    """The conditions of a write over the blob as read with ``etag``."""
    from azure.core import MatchConditions

    return {"etag": etag, "match_condition": MatchConditions.IfNotModified} if etag is not None else {}


def _reason(error: AzureError) -> str:
    status = getattr(error, "status_code", None)
    return f"{type(error).__name__}{f' {status}' if status else ''}: {str(error).splitlines()[0][:200]}"
