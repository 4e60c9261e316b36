"""The api-versions the management API answers, and the wire each speaks.

Every version up to ``2016-03-01`` speaks the *classic* wire: the ``Microsoft.Scheduler`` 2016-03-01 contract,
answered exactly as Azure Scheduler answered it. ``2026-12-01-preview`` speaks the *preview* wire: the
classic one plus the new properties (overlap, missed-run and failure policies, deletion after completion,
jitter and exclusions, placeholders, managed-identity authentication and request signing) and the new
resources (a collection's calendars, a job's occurrences). A job written with the preview wire keeps its
preview properties when a classic client replaces it (see :func:`scheduler_core.definitions.parse_job`).
"""

from __future__ import annotations

import enum

__all__ = ["API_VERSIONS", "CLASSIC_VERSION", "PREVIEW_VERSION", "Wire", "wire_of"]


class Wire(enum.Enum):
    """What a request's api-version lets it see and write."""

    CLASSIC = "classic"
    """The 2016-03-01 contract (also 2016-01-01 and 2014-08-01-preview): no preview property, in or out."""
    PREVIEW = "preview"
    """2026-12-01-preview: the classic contract plus the preview properties and resources."""

    @property
    def preview(self) -> bool:
        return self is Wire.PREVIEW


#: The version azure-mgmt-scheduler 7.0.0 sends.
CLASSIC_VERSION = "2016-03-01"
#: The version that carries the new properties (ARM's convention: a new preview api-version).
PREVIEW_VERSION = "2026-12-01-preview"
#: Every accepted api-version and its wire.
API_VERSIONS: dict[str, Wire] = {
    "2014-08-01-preview": Wire.CLASSIC,
    "2016-01-01": Wire.CLASSIC,
    CLASSIC_VERSION: Wire.CLASSIC,
    PREVIEW_VERSION: Wire.PREVIEW,
}


def wire_of(api_version: str) -> Wire:
    """The wire of an accepted api-version (``KeyError`` for one that is not: the API refuses it first)."""
    return API_VERSIONS[api_version]
