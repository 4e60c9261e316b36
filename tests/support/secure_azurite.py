"""An Azurite of a test's own that serves HTTPS with a certificate of a test CA and accepts bearer tokens
(``--oauth basic``, which Azurite allows over HTTPS only): the storage of identity-based connections."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from local_host.azurite import Azurite, AzuriteHttps
from scheduler_core.errors import ConfigurationError
from tests.support.tls import TestCa


@contextmanager
def https_azurite(folder: Path) -> Iterator[tuple[Azurite, Path]]:
    """Start it (its certificate and the CA bundle that trusts it written to ``folder``); yields it and the bundle."""
    ca = TestCa()
    cert, key = ca.issue("127.0.0.1", server=True).write_pem(folder, "azurite")
    bundle = ca.write_pem(folder)
    for attempt in range(1, 4):  # free ports may be taken by another worker before Azurite binds them
        azurite = Azurite(https=AzuriteHttps(cert, key))
        try:
            azurite.start()
        except ConfigurationError:
            if attempt == 3:
                raise
            continue
        try:
            yield azurite, bundle
        finally:
            azurite.stop()
        return
