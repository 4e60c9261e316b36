"""The function app's own identity as a credential, built once on first use (``DefaultAzureCredential``
picks up the managed identity in Azure; set ``AZURE_CLIENT_ID`` for a user-assigned one). Where it may be
presented is :class:`scheduler_core.identity.IdentityScope`'s rule."""

from __future__ import annotations

import threading
from collections.abc import Callable

from azure.core.credentials import TokenCredential

__all__ = ["LazyCredential"]


class LazyCredential:
    """Builds the credential once, on first use: ``factory()`` or, by default, ``DefaultAzureCredential``
    (unless a ready ``credential`` is given)."""

    def __init__(
        self, factory: Callable[[], TokenCredential] | None = None, credential: TokenCredential | None = None
    ) -> None:
        self._factory = factory
        self._credential: TokenCredential | None = credential
        self._lock = threading.Lock()

    def get(self) -> TokenCredential:
        with self._lock:
            if self._credential is None:
                if self._factory is None:
                    from azure.identity import DefaultAzureCredential

                    self._credential = DefaultAzureCredential()
                else:
                    self._credential = self._factory()
            return self._credential
