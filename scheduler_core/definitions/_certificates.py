"""PFX (PKCS #12) certificates of ``ClientCertificate`` authentication: open one with its password and
derive the public facts that responses carry (thumbprint, subject, expiration)."""

from __future__ import annotations

import base64
import binascii
import functools
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import pkcs12

from scheduler_core.errors import ValidationError

__all__ = ["CertificateInfo", "read_pfx"]


@dataclass(frozen=True)
class CertificateInfo:
    """``thumbprint``: SHA-1 of the DER certificate, upper-case hex (as Windows shows it);
    ``subject``: the subject in .NET's ``X509Certificate2.Subject`` form (``CN=name, O=org``);
    ``expires``: the end of the validity period, aware UTC."""

    thumbprint: str
    subject: str
    expires: datetime


def _subject(cert: x509.Certificate) -> str:
    return ", ".join(rdn.rfc4514_string() for rdn in reversed(cert.subject.rdns))


@functools.lru_cache(maxsize=64)
def _open(pfx: bytes, password: bytes | None) -> CertificateInfo | None:
    """The certificate's facts, or None when the PFX does not open with this password."""
    try:
        _key, cert, _extra = pkcs12.load_key_and_certificates(pfx, password)
    except (ValueError, TypeError):
        return None
    if cert is None:
        raise ValueError("no certificate")
    return CertificateInfo(
        thumbprint=cert.fingerprint(hashes.SHA1()).hex().upper(),  # a thumbprint, not a security use
        subject=_subject(cert),
        expires=cert.not_valid_after_utc.astimezone(UTC),
    )


def read_pfx(pfx: str, password: str | None, path: str) -> CertificateInfo:
    """Open a base64 PFX with ``password`` (None or "" = no password). ``path`` names the ``pfx`` field.

    Raises :class:`ValidationError` (never quoting either value) when the text is not base64, is not a
    PKCS #12 file, holds no certificate, or does not open with the password.
    """
    try:
        data = base64.b64decode("".join(pfx.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(path, "must be a base64-encoded PFX (PKCS #12) file") from None
    if not data:
        raise ValidationError(path, "must be a base64-encoded PFX (PKCS #12) file, not empty")
    candidates: list[bytes | None] = [password.encode("utf-8")] if password else [None, b""]
    try:
        for candidate in candidates:
            info = _open(data, candidate)
            if info is not None:
                return info
    except ValueError:
        raise ValidationError(path, "must contain a certificate (the PFX holds none)") from None
    raise ValidationError(
        path,
        "could not be opened with the given password (a wrong password, or not a PFX/PKCS #12 file)",
    )
