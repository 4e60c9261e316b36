"""The function app's own identity as a credential, built once on first use (``DefaultAzureCredential``
picks up the managed identity in Azure; set ``AZURE_CLIENT_ID`` for a user-assigned one). Where it may be
presented is :class:`scheduler_core.identity.IdentityScope`'s rule."""

from __future__ import annotations

import threading
from collections.abc import Callable

from azure.core.credentials import TokenCredential

__all__ = ["Credential", "LazyCredential", "TokenUnavailable", "access_token", "default_credential"]

#: A credential of azure-identity (for code outside the adapters, which imports no Azure SDK).
Credential = TokenCredential


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


def default_credential() -> TokenCredential:
    """azure-identity's ``DefaultAzureCredential`` (environment variables, workload or managed identity, the
    Azure CLI's or PowerShell's sign-in, ...), imported on first use."""
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


class TokenUnavailable(Exception):
    """A credential could not give a token; ``reason`` is the credential's message on one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def access_token(credential: TokenCredential, scope: str) -> tuple[str, int]:
    """An access token for ``scope`` and when it expires (seconds since the epoch); :class:`TokenUnavailable`
    when the credential cannot give one (``CredentialUnavailableError`` included)."""
    from azure.core.exceptions import ClientAuthenticationError

    try:
        token = credential.get_token(scope)
    except ClientAuthenticationError as exc:
        raise TokenUnavailable(" ".join(str(exc.message if hasattr(exc, "message") else exc).split())[:400]) from None
    return token.token, int(token.expires_on)
