"""An Azurite of a test's own that serves HTTPS with a certificate of a test CA and accepts bearer tokens
(``--oauth basic``, which Azurite allows over HTTPS only): the storage of identity-based connections."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from local_host.azurite import Azurite, AzuriteHttps
from tests.support.tls import TestCa


@contextmanager
def https_azurite(folder: Path) -> Iterator[tuple[Azurite, Path]]:
    """Start it (its certificate and the CA bundle that trusts it written to ``folder``); yields it and the bundle."""
    ca = TestCa()
    cert, key = ca.issue("127.0.0.1", server=True).write_pem(folder, "azurite")
    bundle = ca.write_pem(folder)
    with Azurite(https=AzuriteHttps(cert, key)) as azurite:  # on ports the kernel picks as it binds them
        yield azurite, bundle
