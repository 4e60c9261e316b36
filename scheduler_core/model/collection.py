"""Job collections: a named group of jobs with a plan (SKU), quotas and a state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler_core.model.states import CollectionState
from scheduler_core.storage.keys import CollectionRef


@dataclass(frozen=True)
class JobCollection:
    """A stored job collection. ``properties`` is its canonical ``JobCollectionProperties`` JSON (sku,
    quota, state); ``etag`` is the version it was read at (an ETag-guarded write fails when it changed)."""

    ref: CollectionRef
    location: str
    tags: dict[str, str]
    properties: dict[str, Any]  # canonical JobCollectionProperties
    created_at: datetime
    etag: str = ""
    job_count: int | None = None  # jobs in the collection (None: not known, count them)
    modified_at: datetime | None = None  # when the row was last written (the table's Timestamp)

    @property
    def state(self) -> CollectionState:
        return CollectionState(str(self.properties.get("state", CollectionState.ENABLED)))

    @property
    def deleting(self) -> bool:
        """Marked for deletion (hidden from clients) while its jobs are being deleted."""
        return self.state == CollectionState.DELETED
