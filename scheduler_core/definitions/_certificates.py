"""PFX (PKCS #12) certificates of ``ClientCertificate`` authentication: refuse a hostile one before it is
opened (:func:`check_pfx`), open one with its password and derive the public facts that responses carry
(:func:`read_pfx`: thumbprint, subject, expiration).

Opening a PFX costs what the file asks for: every key derivation in it (the MAC's, and that of each encrypted
part) runs as many iterations as the file says, up to 2^31 - 1 (about 150 s of CPU each), and the private
key is validated (an RSA key's primes tested, seconds for 8192 bits). The API opens a PFX when a job is
written and the executor when it sends, in the process that also runs other jobs. So before
``cryptography`` sees a byte, :func:`check_pfx` reads the file with a small, strict BER reader (definite and
indefinite lengths, as Windows and Java write PFX files) and refuses it unless:

- it is at most :data:`MAX_PFX_BYTES` (64 KiB) long, and is PKCS #12's structure (RFC 7292): a version 3 PFX
  with ``data`` contents (password integrity), an AuthenticatedSafe of at most :data:`MAX_CONTENTS`
  ``data`` or ``encryptedData`` ContentInfos, at most :data:`MAX_BAGS` SafeBags of the six known types,
  ``safeContentsBag`` nested at most :data:`MAX_NESTING` deep, no BER value nested deeper than
  :data:`MAX_DEPTH`, nothing after a value;
- its algorithms are those real exporters use: a MAC over SHA-1 or SHA-2, or PBMAC1 (RFC 9579) with
  PBKDF2; encryption with PBES2 (PBKDF2 with an HMAC-SHA-1/SHA-2 PRF, AES-CBC or 3DES-CBC) or a PKCS #12
  ``pbeWithSHAAnd*`` algorithm (3DES, RC2, RC4);
- every iteration count it asks for, the MAC's and every PBKDF2's, is at most :data:`MAX_ITERATIONS`
  (600,000), each PKCS #12 ``pbeWithSHAAnd*`` count at most :data:`MAX_LEGACY_ITERATIONS` (100,000), and
  they add up to at most :data:`MAX_TOTAL_ITERATIONS` (1,500,000; the ``pbeWithSHAAnd*`` ones to at most
  :data:`MAX_LEGACY_TOTAL_ITERATIONS`);
- every private key is RSA (modulus at most :data:`MAX_KEY_BITS`, 4096 bits, two primes of at most half
  that), DSA (``p`` at most 4096 bits), EC on a named curve, Ed25519 or Ed448.

The counts that matter include those inside encrypted parts (a shrouded key bag hidden in the encrypted
certificates): the reader decrypts each encrypted part with the password (its own count checked first) to
read what is inside, as a loader would; with no password it tries both forms a loader tries (none and
empty). A part that decrypts with neither is a wrong password. Counts visible without decrypting are all
checked before anything is decrypted, so such a refusal costs milliseconds.

Why these limits: OpenSSL 3 writes 2,048 iterations (MAC and PBKDF2), ``cryptography`` 20,000 for PBKDF2,
Windows 2,000, Java 10,000 (older Java files 50,000, their MAC 100,000); .NET's loader refuses a count over
300,000 and a total over 1,000,000 by default. 600,000 is OWASP's figure for PBKDF2-HMAC-SHA256, so a file
exported with it still opens (``openssl pkcs12 -export -iter 600000`` asks for 2 x 600,000 + 2,048). The
``pbeWithSHAAnd*`` key derivation runs here in Python (``cryptography`` offers none), about six times
slower than OpenSSL's, hence its lower limits; no exporter of those algorithms writes more than 50,000. An
RSA key of 4096 bits takes 0.3 s of CPU to validate, one of 8192 bits 4.4 s. The worst file the limits let
through costs about a second of CPU to check and open; a refused one a few milliseconds.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509
from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4, RC2, TripleDES
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import BlockCipherAlgorithm, Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.serialization import pkcs12

from scheduler_core.errors import ValidationError

__all__ = [
    "MAX_BAGS",
    "MAX_CONTENTS",
    "MAX_DEPTH",
    "MAX_ITERATIONS",
    "MAX_KEY_BITS",
    "MAX_LEGACY_ITERATIONS",
    "MAX_LEGACY_TOTAL_ITERATIONS",
    "MAX_NESTING",
    "MAX_PFX_BYTES",
    "MAX_TOTAL_ITERATIONS",
    "CertificateInfo",
    "PfxPasswordError",
    "PfxRefusedError",
    "check_pfx",
    "read_pfx",
]

#: The largest PFX (decoded) opened: a 4096-bit key and a chain of ten certificates take about 20 KiB.
MAX_PFX_BYTES = 64 * 1024
#: The most iterations of one key derivation: the MAC's, or one PBKDF2's (PBES2, PBMAC1).
MAX_ITERATIONS = 600_000
#: The most iterations of one PKCS #12 ``pbeWithSHAAnd*`` key derivation (it runs in Python here).
MAX_LEGACY_ITERATIONS = 100_000
#: The most iterations of all the key derivations of one PFX together.
MAX_TOTAL_ITERATIONS = 1_500_000
#: The most iterations of all the ``pbeWithSHAAnd*`` key derivations of one PFX together.
MAX_LEGACY_TOTAL_ITERATIONS = 200_000
#: The largest RSA modulus (and DSA ``p``), in bits; an RSA prime may have half as many.
MAX_KEY_BITS = 4096
#: The most ContentInfos in the AuthenticatedSafe, and SafeBags in the whole file.
MAX_CONTENTS = 16
MAX_BAGS = 64
#: The deepest nesting of ``safeContentsBag``s, and of BER values within one encoding.
MAX_NESTING = 4
MAX_DEPTH = 32

PASSWORD_RULE = "could not be opened with the given password (a wrong password, or not a PFX/PKCS #12 file)"


class PfxRefusedError(ValueError):
    """A PFX refused before it is opened. The message is a predicate that names the rule, to follow the
    field's name or "the client certificate (PFX)"; it never quotes the file or the password."""


class PfxPasswordError(PfxRefusedError):
    """An encrypted part of the PFX does not decrypt with the password (nor, without one, with none)."""

    def __init__(self) -> None:
        super().__init__(PASSWORD_RULE)


@dataclass(frozen=True)
class CertificateInfo:
    """``thumbprint``: SHA-1 of the DER certificate, upper-case hex (as Windows shows it);
    ``subject``: the subject in .NET's ``X509Certificate2.Subject`` form (``CN=name, O=org``);
    ``expires``: the end of the validity period, aware UTC."""

    thumbprint: str
    subject: str
    expires: datetime


# ----------------------------------------------------------------------------------------- BER reader


class _Malformed(Exception):
    """Not PKCS #12's structure; the message says what is wrong."""


class _Refused(Exception):
    """Well formed, but over a limit or of an unsupported kind; the message names the rule."""


@dataclass(frozen=True, slots=True)
class _Tlv:
    """One BER value: its identifier octet, a primitive's content, or a constructed one's values."""

    tag: int
    body: bytes
    items: tuple[_Tlv, ...]


_SEQUENCE, _SET, _INTEGER, _OCTETS, _OID, _NULL = 0x30, 0x31, 0x02, 0x04, 0x06, 0x05
_CONSTRUCTED = 0x20


def _read(data: bytes, pos: int, end: int, depth: int) -> tuple[_Tlv, int]:
    """The value at ``pos`` (within ``end``) and where it ends. Low tag numbers only (PKCS #12 uses no
    other); lengths definite (at most 4 octets) or, for a constructed value, indefinite."""
    if depth > MAX_DEPTH:
        raise _Malformed(f"values nested more than {MAX_DEPTH} deep")
    if end - pos < 2:
        raise _Malformed("it is truncated")
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if tag & 0x1F == 0x1F or tag == 0:
        raise _Malformed(f"an unexpected tag 0x{tag:02x}")
    constructed = bool(tag & _CONSTRUCTED)
    if first == 0x80:
        if not constructed:
            raise _Malformed("an indefinite length on a primitive value")
        items: list[_Tlv] = []
        while True:
            if end - pos >= 2 and data[pos] == 0 and data[pos + 1] == 0:
                return _Tlv(tag, b"", tuple(items)), pos + 2
            item, pos = _read(data, pos, end, depth + 1)
            items.append(item)
    if first & 0x80:
        count = first & 0x7F
        if count > 4 or end - pos < count:
            raise _Malformed("it is truncated" if count <= 4 else "a length of more than 4 octets")
        length = int.from_bytes(data[pos : pos + count], "big")
        pos += count
    else:
        length = first
    if length > end - pos:
        raise _Malformed("it is truncated")
    stop = pos + length
    if not constructed:
        return _Tlv(tag, data[pos:stop], ()), stop
    items = []
    while pos < stop:
        item, pos = _read(data, pos, stop, depth + 1)
        items.append(item)
    return _Tlv(tag, b"", tuple(items)), stop


def _parse(data: bytes, what: str) -> _Tlv:
    """Exactly one BER value: nothing may follow it."""
    tlv, end = _read(data, 0, len(data), 0)
    if end != len(data):
        raise _Malformed(f"{len(data) - end} bytes follow {what}")
    return tlv


def _items(tlv: _Tlv, what: str, least: int = 0, most: int | None = None, tag: int = _SEQUENCE) -> tuple[_Tlv, ...]:
    """The values of a SEQUENCE (or ``tag``) holding ``least`` to ``most`` (None: any number) of them."""
    if tlv.tag != tag:
        raise _Malformed(f"{what} is not a {'SET' if tag == _SET else 'SEQUENCE'}")
    if len(tlv.items) < least or (most is not None and len(tlv.items) > most):
        raise _Malformed(f"{what} has {len(tlv.items)} values")
    return tlv.items


def _explicit(tlv: _Tlv, what: str) -> _Tlv:
    """The value inside an ``[0] EXPLICIT`` tag."""
    if tlv.tag != 0xA0 or len(tlv.items) != 1:
        raise _Malformed(f"{what} is not an [0] EXPLICIT value")
    return tlv.items[0]


def _octets(tlv: _Tlv, what: str, tag: int = _OCTETS) -> bytes:
    """An OCTET STRING (or an ``[0] IMPLICIT`` one: ``tag`` 0x80), primitive or, in BER, constructed of
    OCTET STRING segments."""
    if tlv.tag == tag:
        return tlv.body
    if tlv.tag != tag | _CONSTRUCTED:
        raise _Malformed(f"{what} is not an OCTET STRING")
    return b"".join(_octets(item, what) for item in tlv.items)


def _integer(tlv: _Tlv, what: str) -> int:
    if tlv.tag != _INTEGER or not tlv.body:
        raise _Malformed(f"{what} is not an INTEGER")
    return int.from_bytes(tlv.body, "big", signed=True)


def _oid(tlv: _Tlv, what: str) -> str:
    """An OBJECT IDENTIFIER in dotted form."""
    body = tlv.body
    if tlv.tag != _OID or not body or len(body) > 32 or body[-1] & 0x80:
        raise _Malformed(f"{what} is not an OBJECT IDENTIFIER")
    arcs: list[int] = []
    value = 0
    for byte in body:
        value = value << 7 | byte & 0x7F
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    head = min(arcs[0] // 40, 2)
    return ".".join(str(arc) for arc in (head, arcs[0] - 40 * head, *arcs[1:]))


def _algorithm(tlv: _Tlv, what: str) -> tuple[str, _Tlv | None]:
    """An AlgorithmIdentifier: its OID and its parameters (None when absent or NULL)."""
    items = _items(tlv, what, 1, 2)
    parameters = items[1] if len(items) == 2 and items[1].tag != _NULL else None
    return _oid(items[0], what), parameters


# ------------------------------------------------------------------------------------------ algorithms

_DATA = "1.2.840.113549.1.7.1"
_ENCRYPTED_DATA = "1.2.840.113549.1.7.6"
_KEY_BAG = "1.2.840.113549.1.12.10.1.1"
_SHROUDED_KEY_BAG = "1.2.840.113549.1.12.10.1.2"
_CERT_BAG = "1.2.840.113549.1.12.10.1.3"
_CRL_BAG = "1.2.840.113549.1.12.10.1.4"
_SECRET_BAG = "1.2.840.113549.1.12.10.1.5"
_SAFE_CONTENTS_BAG = "1.2.840.113549.1.12.10.1.6"
_PBES2 = "1.2.840.113549.1.5.13"
_PBKDF2 = "1.2.840.113549.1.5.12"
_PBMAC1 = "1.2.840.113549.1.5.14"
#: PBKDF2's PRFs and PBMAC1's MACs: HMAC with SHA-1 and SHA-2.
_HMACS: dict[str, Callable[[], hashes.HashAlgorithm]] = {
    "1.2.840.113549.2.7": hashes.SHA1,
    "1.2.840.113549.2.8": hashes.SHA224,
    "1.2.840.113549.2.9": hashes.SHA256,
    "1.2.840.113549.2.10": hashes.SHA384,
    "1.2.840.113549.2.11": hashes.SHA512,
    "1.2.840.113549.2.12": hashes.SHA512_224,
    "1.2.840.113549.2.13": hashes.SHA512_256,
}
#: The MAC's digests (HMAC keyed by the PKCS #12 key derivation).
_MAC_DIGESTS = (
    "1.3.14.3.2.26",
    "2.16.840.1.101.3.4.2.4",
    "2.16.840.1.101.3.4.2.1",
    "2.16.840.1.101.3.4.2.2",
    "2.16.840.1.101.3.4.2.3",
    "2.16.840.1.101.3.4.2.5",
    "2.16.840.1.101.3.4.2.6",
)
#: PBES2's ciphers: (cipher, key size in bytes).
_PBES2_CIPHERS = {
    "2.16.840.1.101.3.4.1.2": ("aes", 16),
    "2.16.840.1.101.3.4.1.22": ("aes", 24),
    "2.16.840.1.101.3.4.1.42": ("aes", 32),
    "1.2.840.113549.3.7": ("3des", 24),
}
#: PKCS #12's own ``pbeWithSHAAnd*`` algorithms (RFC 7292 appendix C): (cipher, key size in bytes).
_PKCS12_PBE = {
    "1.2.840.113549.1.12.1.1": ("rc4", 16),
    "1.2.840.113549.1.12.1.2": ("rc4", 5),
    "1.2.840.113549.1.12.1.3": ("3des", 24),
    "1.2.840.113549.1.12.1.4": ("3des", 16),
    "1.2.840.113549.1.12.1.5": ("rc2", 16),
    "1.2.840.113549.1.12.1.6": ("rc2", 5),
}
_BLOCK = {"aes": 16, "3des": 8, "rc2": 8, "rc4": 1}

_RSA = ("1.2.840.113549.1.1.1", "1.2.840.113549.1.1.10")
_DSA = "1.2.840.10040.4.1"
_EC = "1.2.840.10045.2.1"
_EDWARDS = ("1.3.101.112", "1.3.101.113")


@dataclass(frozen=True, slots=True)
class _Scheme:
    """How one part is encrypted: a PKCS #12 ``pbeWithSHAAnd*`` algorithm (``legacy``, the key and IV
    derived from the password) or PBES2 (the key by PBKDF2 with ``prf``, the IV given)."""

    legacy: bool
    cipher: str
    key_size: int
    salt: bytes
    iterations: int
    prf: Callable[[], hashes.HashAlgorithm] = hashes.SHA1
    iv: bytes = b""


@dataclass(frozen=True, slots=True)
class _Secret:
    """One password as the two key derivations take it: PKCS #12's (UTF-16BE and two zero bytes; no
    password at all is no bytes) and PBKDF2's (UTF-8)."""

    bmp: bytes
    utf8: bytes


def _secrets(password: str | None) -> tuple[_Secret, ...]:
    """The passwords a loader tries: the one given, or without one both none and the empty one."""
    if not password:
        return (_Secret(b"", b""), _Secret(b"\x00\x00", b""))
    try:
        return (_Secret(password.encode("utf-16-be") + b"\x00\x00", password.encode("utf-8")),)
    except UnicodeEncodeError:  # a lone surrogate: no file opens with it
        raise PfxPasswordError() from None


def _pkcs12_kdf(password: bytes, salt: bytes, iterations: int, purpose: int, size: int) -> bytes:
    """RFC 7292 appendix B.2 with SHA-1 (the ``pbeWithSHAAnd*`` algorithms' hash); ``purpose`` 1 is the
    key, 2 the IV."""
    v = 64

    def stretch(raw: bytes) -> bytes:
        length = v * -(-len(raw) // v)
        return (raw * (length // len(raw) + 1))[:length] if raw else b""

    block = stretch(salt) + stretch(password)
    sha1 = hashlib.sha1
    out = b""
    while True:
        digest = sha1(bytes([purpose]) * v + block).digest()
        for _ in range(iterations - 1):
            digest = sha1(digest).digest()
        out += digest
        if len(out) >= size:
            return out[:size]
        b = int.from_bytes((digest * 4)[:v], "big") + 1
        block = b"".join(
            ((int.from_bytes(block[j : j + v], "big") + b) % (1 << 8 * v)).to_bytes(v, "big")
            for j in range(0, len(block), v)
        )


# RFC 2268's PITABLE. ``cryptography`` offers RC2 with 128-bit keys only; PKCS #12's 40-bit RC2 (the
# certificates of OpenSSL 1.x and older Java files) is decrypted here.
_PITABLE = bytes.fromhex(
    "d978f9c419ddb5ed28e9fd794aa0d89dc67e37832b76538e624c6488448bfba2179a59f587b34f1361456d8d09817d32"
    "bd8f40eb86b77b0bf09521225c6b4e8254d66593ce60b21c7356c014a78cf1dc1275ca1f3bbee4d1423dd430a33cb626"
    "6fbf0eda4669075727f21d9bbc944303f811c7f690ef3ee706c3d52fc8661ed708e8eade8052eef784aa72ac354d6a2a"
    "961ad2715a1549744b9fd05e0418a4ecc2e0416e0f51cbcc2491af50a1f47039997c3a8523b8b47afc02365b25559731"
    "2d5dfa98e38a92ae05df2910676cbac9d300e6cfe19ea82c6316013f58e289a90d38341bab33ffb0bb480c5fb9b1cd2e"
    "c5f3db47e5a59c770aa62068fe7fc1ad"
)


def _rc2_cbc_decrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    """RC2-CBC (RFC 2268) with ``len(key) * 8`` effective key bits, as PKCS #12 uses it."""
    bits, t = 8 * len(key), len(key)
    expanded = bytearray(128)
    expanded[:t] = key
    for i in range(t, 128):
        expanded[i] = _PITABLE[(expanded[i - 1] + expanded[i - t]) & 0xFF]
    t8 = (bits + 7) // 8
    expanded[128 - t8] = _PITABLE[expanded[128 - t8] & (0xFF >> (8 * t8 - bits))]
    for i in range(127 - t8, -1, -1):
        expanded[i] = _PITABLE[expanded[i + 1] ^ expanded[i + t8]]
    k = [expanded[2 * i] | expanded[2 * i + 1] << 8 for i in range(64)]
    out = bytearray()
    previous = iv
    for start in range(0, len(data), 8):
        block = data[start : start + 8]
        x0, x1, x2, x3 = (block[i] | block[i + 1] << 8 for i in (0, 2, 4, 6))
        j = 63
        for rounds in (5, 6, 5):
            for _ in range(rounds):
                x3 = (((x3 >> 5) | (x3 << 11)) - (x0 & ~x2) - (x1 & x2) - k[j]) & 0xFFFF
                x2 = (((x2 >> 3) | (x2 << 13)) - (x3 & ~x1) - (x0 & x1) - k[j - 1]) & 0xFFFF
                x1 = (((x1 >> 2) | (x1 << 14)) - (x2 & ~x0) - (x3 & x0) - k[j - 2]) & 0xFFFF
                x0 = (((x0 >> 1) | (x0 << 15)) - (x1 & ~x3) - (x2 & x3) - k[j - 3]) & 0xFFFF
                j -= 4
            if j > 0:
                x3 = (x3 - k[x2 & 63]) & 0xFFFF
                x2 = (x2 - k[x1 & 63]) & 0xFFFF
                x1 = (x1 - k[x0 & 63]) & 0xFFFF
                x0 = (x0 - k[x3 & 63]) & 0xFFFF
        plain = bytes(
            (x0 & 0xFF, x0 >> 8 & 0xFF, x1 & 0xFF, x1 >> 8 & 0xFF, x2 & 0xFF, x2 >> 8 & 0xFF, x3 & 0xFF, x3 >> 8)
        )
        out += bytes(a ^ b for a, b in zip(plain, previous, strict=True))
        previous = block
    return bytes(out)


def _decrypt(scheme: _Scheme, secret: bytes, data: bytes) -> bytes | None:
    """The plaintext of ``data`` under ``secret`` (in the scheme's form), or None when its padding is not
    PKCS #7's (the password is not this one)."""
    size = _BLOCK[scheme.cipher]
    if not data or len(data) % size:
        return None
    if scheme.legacy:
        key = _pkcs12_kdf(secret, scheme.salt, scheme.iterations, 1, scheme.key_size)
        iv = _pkcs12_kdf(secret, scheme.salt, scheme.iterations, 2, 8) if size > 1 else b""
    else:
        key = PBKDF2HMAC(scheme.prf(), scheme.key_size, scheme.salt, scheme.iterations).derive(secret)
        iv = scheme.iv
    if scheme.cipher == "rc4":
        return Cipher(ARC4(key), None).decryptor().update(data)
    if scheme.cipher == "rc2" and len(key) != 16:
        plain = _rc2_cbc_decrypt(key, iv, data)
    else:
        algorithm: BlockCipherAlgorithm
        if scheme.cipher == "aes":
            algorithm = algorithms.AES(key)
        elif scheme.cipher == "rc2":
            algorithm = RC2(key)  # 128 effective bits, as PKCS #12's 128-bit RC2
        else:
            algorithm = TripleDES(key + key[:8] if len(key) == 16 else key)
        decryptor = Cipher(algorithm, modes.CBC(iv)).decryptor()
        plain = decryptor.update(data) + decryptor.finalize()
    pad = plain[-1]
    if not 1 <= pad <= size or plain[-pad:] != bytes([pad]) * pad:
        return None
    return plain[:-pad]


# ------------------------------------------------------------------------------------------- the walk


def _count(tlv: _Tlv, what: str, limit: int) -> int:
    """An iteration count: positive and at most ``limit``."""
    if tlv.tag != _INTEGER or not tlv.body:
        raise _Malformed(f"the {what} iteration count is not an INTEGER")
    if len(tlv.body) > 8:
        raise _Refused(f"the {what} iteration count (a number of {len(tlv.body)} bytes) exceeds {limit}")
    count = int.from_bytes(tlv.body, "big", signed=True)
    if count < 1:
        raise _Malformed(f"the {what} iteration count {count} is not positive")
    if count > limit:
        raise _Refused(f"the {what} iteration count {count} exceeds {limit}")
    return count


class _Walk:
    """One reading of a PFX with one password: every part that costs CPU to open, checked."""

    def __init__(self, password: str | None) -> None:
        self.secrets = _secrets(password)
        self.total = 0
        self.legacy_total = 0
        self.bags = 0
        #: encrypted parts to open once every visible count is checked: (scheme, ciphertext, what, then)
        self.sealed: list[tuple[_Scheme, bytes, str, Callable[[_Tlv], None]]] = []

    def run(self, data: bytes) -> None:
        self.pfx(_parse(data, "the PFX"))
        while self.sealed:
            scheme, ciphertext, what, then = self.sealed.pop(0)
            for plaintext in self.open(scheme, ciphertext, what):
                then(plaintext)

    def open(self, scheme: _Scheme, ciphertext: bytes, what: str) -> list[_Tlv]:
        """Each distinct plaintext of a part (one per password form it decrypts with) that is a SEQUENCE."""
        forms = dict.fromkeys(secret.bmp if scheme.legacy else secret.utf8 for secret in self.secrets)
        found: dict[bytes, _Tlv] = {}
        for form in forms:
            plaintext = _decrypt(scheme, form, ciphertext)
            if plaintext is None or plaintext in found:
                continue
            try:
                tlv = _parse(plaintext, what)
            except _Malformed:
                continue
            if tlv.tag == _SEQUENCE:
                found[plaintext] = tlv
        if not found:
            raise PfxPasswordError()
        return list(found.values())

    def iterations(self, tlv: _Tlv, what: str, legacy: bool) -> int:
        count = _count(tlv, what, MAX_LEGACY_ITERATIONS if legacy else MAX_ITERATIONS)
        self.total += count
        if self.total > MAX_TOTAL_ITERATIONS:
            raise _Refused(f"the iteration counts of its key derivations add up to more than {MAX_TOTAL_ITERATIONS}")
        if legacy:
            self.legacy_total += count
            if self.legacy_total > MAX_LEGACY_TOTAL_ITERATIONS:
                raise _Refused(
                    "the iteration counts of its pbeWithSHAAnd* encryptions add up to more than "
                    f"{MAX_LEGACY_TOTAL_ITERATIONS}"
                )
        return count

    # the PFX and its MAC

    def pfx(self, tlv: _Tlv) -> None:
        items = _items(tlv, "the PFX", 2, 3)
        if _integer(items[0], "the PFX version") != 3:
            raise _Malformed("its version is not 3")
        kind, body = self.content_info(items[1], "its authSafe")
        if kind != _DATA or body is None:
            raise _Refused(f"its contents are of type {kind}; only data (password integrity) is supported")
        if len(items) == 3:
            self.mac(items[2])
        safe = _parse(_octets(body, "its authSafe"), "its AuthenticatedSafe")
        infos = _items(safe, "its AuthenticatedSafe")
        if len(infos) > MAX_CONTENTS:
            raise _Refused(f"its AuthenticatedSafe holds {len(infos)} ContentInfos, more than {MAX_CONTENTS}")
        for info in infos:
            self.content(info)

    def mac(self, tlv: _Tlv) -> None:
        items = _items(tlv, "its MacData", 2, 3)
        digest_info = _items(items[0], "its MAC", 2, 2)
        kind, parameters = _algorithm(digest_info[0], "its MAC algorithm")
        _octets(digest_info[1], "its MAC")
        _octets(items[1], "its MAC salt")
        if len(items) == 3:
            self.iterations(items[2], "MAC", legacy=False)
        if kind == _PBMAC1:
            if parameters is None:
                raise _Malformed("its PBMAC1 MAC has no parameters")
            kdf, scheme = _items(parameters, "its PBMAC1 parameters", 2, 2)
            key_length = self.pbkdf2(kdf, "PBMAC1")[2]
            if key_length is None:
                raise _Malformed("its PBMAC1 key derivation has no key length")
            if _algorithm(scheme, "its PBMAC1 MAC")[0] not in _HMACS:
                raise _Refused("its PBMAC1 MAC is not HMAC with SHA-1 or SHA-2")
        elif kind not in _MAC_DIGESTS:
            raise _Refused(f"its MAC algorithm {kind} is not supported (SHA-1, SHA-2 or PBMAC1)")

    def pbkdf2(self, tlv: _Tlv, what: str) -> tuple[bytes, int, int | None, Callable[[], hashes.HashAlgorithm]]:
        """PBKDF2's salt, iteration count (checked), key length and PRF."""
        kind, parameters = _algorithm(tlv, f"the {what} key derivation")
        if kind != _PBKDF2 or parameters is None:
            raise _Refused(f"the {what} key derivation {kind} is not supported (only PBKDF2)")
        items = _items(parameters, "PBKDF2 parameters", 2, 4)
        salt = _octets(items[0], "the PBKDF2 salt")
        count = self.iterations(items[1], what, legacy=False)
        rest = list(items[2:])
        key_length = None
        if rest and rest[0].tag == _INTEGER:
            key_length = _integer(rest.pop(0), "the PBKDF2 key length")
            if not 1 <= key_length <= 64:
                raise _Malformed(f"the PBKDF2 key length {key_length} is not between 1 and 64")
        prf: Callable[[], hashes.HashAlgorithm] = hashes.SHA1
        if rest:
            prf_kind, _ = _algorithm(rest.pop(0), "the PBKDF2 PRF")
            if prf_kind not in _HMACS or rest:
                raise _Refused(f"the PBKDF2 PRF {prf_kind} is not HMAC with SHA-1 or SHA-2")
            prf = _HMACS[prf_kind]
        return salt, count, key_length, prf

    # the contents and their bags

    @staticmethod
    def content_info(tlv: _Tlv, what: str) -> tuple[str, _Tlv | None]:
        items = _items(tlv, what, 1, 2)
        return _oid(items[0], f"{what}'s type"), _explicit(items[1], what) if len(items) == 2 else None

    def content(self, tlv: _Tlv) -> None:
        what = "a ContentInfo of its AuthenticatedSafe"
        kind, body = self.content_info(tlv, what)
        if body is None:
            raise _Malformed(f"{what} has no content")
        if kind == _DATA:
            self.safe_contents(_parse(_octets(body, what), "a SafeContents"), 0)
        elif kind == _ENCRYPTED_DATA:
            info = _items(body, "an EncryptedData", 2, 3)[1]
            content_type, algorithm, encrypted = _items(info, "an EncryptedContentInfo", 3, 3)
            if _oid(content_type, "an EncryptedContentInfo's type") != _DATA:
                raise _Malformed("an encrypted content is not of type data")
            scheme = self.scheme(algorithm, "content encryption")
            ciphertext = _octets(encrypted, "an encrypted content", tag=0x80)
            self.sealed.append((scheme, ciphertext, "a SafeContents", lambda plain: self.safe_contents(plain, 0)))
        else:
            raise _Refused(f"it holds a content of type {kind}; only data and encryptedData are supported")

    def safe_contents(self, tlv: _Tlv, depth: int) -> None:
        for bag in _items(tlv, "a SafeContents"):
            self.bag(bag, depth)

    def bag(self, tlv: _Tlv, depth: int) -> None:
        self.bags += 1
        if self.bags > MAX_BAGS:
            raise _Refused(f"it holds more than {MAX_BAGS} SafeBags")
        items = _items(tlv, "a SafeBag", 2, 3)
        kind = _oid(items[0], "a SafeBag's type")
        value = _explicit(items[1], "a SafeBag's value")
        if len(items) == 3:
            _items(items[2], "a SafeBag's attributes", tag=_SET)
        if kind == _KEY_BAG:
            self.private_key(value)
        elif kind == _SHROUDED_KEY_BAG:
            algorithm, encrypted = _items(value, "an EncryptedPrivateKeyInfo", 2, 2)
            scheme = self.scheme(algorithm, "private key encryption")
            ciphertext = _octets(encrypted, "an encrypted private key")
            self.sealed.append((scheme, ciphertext, "a PrivateKeyInfo", self.private_key))
        elif kind == _CERT_BAG:
            _items(value, "a CertBag", 2, 2)
        elif kind == _SAFE_CONTENTS_BAG:
            if depth >= MAX_NESTING:
                raise _Refused(f"its SafeContents are nested more than {MAX_NESTING} deep")
            self.safe_contents(value, depth + 1)
        elif kind not in (_CRL_BAG, _SECRET_BAG):
            raise _Malformed(f"a SafeBag is of unknown type {kind}")

    def scheme(self, tlv: _Tlv, what: str) -> _Scheme:
        """The encryption of one part, its iteration count checked."""
        kind, parameters = _algorithm(tlv, f"the {what} algorithm")
        if kind in _PKCS12_PBE and parameters is not None:
            cipher, size = _PKCS12_PBE[kind]
            salt_value, count = _items(parameters, f"the {what} parameters", 2, 2)
            iterations = self.iterations(count, what, legacy=True)
            return _Scheme(True, cipher, size, _octets(salt_value, f"the {what} salt"), iterations)
        if kind == _PBES2 and parameters is not None:
            kdf, encryption = _items(parameters, "PBES2 parameters", 2, 2)
            salt, iterations, key_length, prf = self.pbkdf2(kdf, what)
            cipher_kind, iv = _items(encryption, "the PBES2 cipher", 2, 2)
            cipher, size = _PBES2_CIPHERS.get(_oid(cipher_kind, "the PBES2 cipher"), ("", 0))
            if not cipher:
                raise _Refused(f"the {what} cipher is not supported (AES-CBC or 3DES-CBC)")
            if key_length not in (None, size):
                raise _Malformed(f"the PBKDF2 key length {key_length} is not the cipher's ({size})")
            iv_bytes = _octets(iv, "the PBES2 IV")
            if len(iv_bytes) != _BLOCK[cipher]:
                raise _Malformed("the PBES2 IV is not one block long")
            return _Scheme(False, cipher, size, salt, iterations, prf, iv_bytes)
        raise _Refused(f"the {what} algorithm {kind} is not supported (PBES2 with PBKDF2, or pbeWithSHAAnd*)")

    # private keys

    def private_key(self, tlv: _Tlv) -> None:
        """A PrivateKeyInfo (OneAsymmetricKey): a kind ``cryptography`` loads, of a size it validates fast."""
        items = _items(tlv, "a PrivateKeyInfo", 3, 5)
        kind, parameters = _algorithm(items[1], "a private key's algorithm")
        key = _octets(items[2], "a private key")
        if kind in _RSA:
            numbers = _items(_parse(key, "an RSA private key"), "an RSA private key", 9, 9)
            if _integer(numbers[0], "an RSA private key's version") != 0:
                raise _Refused("it holds an RSA key of more than two primes")
            bits = [abs(_integer(n, "an RSA private key's number")).bit_length() for n in numbers[1:]]
            if max(bits[:3]) > MAX_KEY_BITS or max(bits[3:]) > MAX_KEY_BITS // 2:
                raise _Refused(
                    f"it holds an RSA key of {bits[0]} bits with primes of {max(bits[3:5])}; at most "
                    f"{MAX_KEY_BITS} bits with primes of {MAX_KEY_BITS // 2} are supported"
                )
        elif kind == _DSA:
            domain = _items(parameters, "DSA parameters", 3, 3) if parameters is not None else ()
            p, q, g = (abs(_integer(n, "a DSA parameter")).bit_length() for n in domain) if domain else (0, 0, 0)
            x = abs(_integer(_parse(key, "a DSA private key"), "a DSA private key")).bit_length()
            if max(p, g) > MAX_KEY_BITS or max(q, x) > 512:
                raise _Refused(f"it holds a DSA key of {p} bits; at most {MAX_KEY_BITS} are supported")
        elif kind == _EC:
            inner = _items(_parse(key, "an EC private key"), "an EC private key", 2, 4)
            named = parameters is not None and parameters.tag == _OID
            for item in inner[2:]:
                if item.tag == 0xA0 and [value.tag for value in item.items] != [_OID]:
                    named = False
            if not named:
                raise _Refused("it holds an EC key whose curve is not named; only named curves are supported")
            if len(_octets(inner[1], "an EC private key")) > 72:
                raise _Malformed("an EC private key is longer than any curve's")
        elif kind not in _EDWARDS:
            raise _Refused(f"it holds a private key of algorithm {kind}; RSA, DSA, EC, Ed25519 or Ed448 are supported")


# ----------------------------------------------------------------------------------------- the rule


@functools.lru_cache(maxsize=64)
def _verdict(data: bytes, password: str | None) -> tuple[type[PfxRefusedError], str] | None:
    if len(data) > MAX_PFX_BYTES:
        return PfxRefusedError, f"is refused: it is {len(data)} bytes, more than {MAX_PFX_BYTES} (64 KiB)"
    try:
        _Walk(password).run(data)
    except _Malformed as exc:
        return PfxRefusedError, f"could not be opened: it is not a well-formed PFX (PKCS #12) file ({exc})"
    except _Refused as exc:
        return PfxRefusedError, f"is refused before it is opened: {exc}"
    except PfxPasswordError:
        return PfxPasswordError, PASSWORD_RULE
    return None


def check_pfx(data: bytes, password: str | None) -> None:
    """Refuse a PFX (DER or BER bytes) that would cost more than the limits allow to open with ``password``
    (None or "": none), before anything opens it; the rules are the module's. Raises
    :class:`PfxPasswordError` when an encrypted part does not decrypt with the password, and
    :class:`PfxRefusedError` naming the rule for anything else. A file that passes may still fail to open
    (a wrong MAC, no certificate), cheaply. Verdicts are cached per file and password."""
    verdict = _verdict(data, password)
    if verdict is not None:
        kind, message = verdict
        raise PfxPasswordError() if kind is PfxPasswordError else PfxRefusedError(message)


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

    Raises :class:`ValidationError` (never quoting either value) when the text is not base64, is refused
    by :func:`check_pfx` (too large, not PKCS #12's structure, an iteration count or a key over the limits:
    the message names the rule), holds no certificate, or does not open with the password.
    """
    try:
        data = base64.b64decode("".join(pfx.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(path, "must be a base64-encoded PFX (PKCS #12) file") from None
    if not data:
        raise ValidationError(path, "must be a base64-encoded PFX (PKCS #12) file, not empty")
    try:
        check_pfx(data, password)
    except PfxRefusedError as exc:
        raise ValidationError(path, str(exc)) from None
    candidates: list[bytes | None] = [password.encode("utf-8")] if password else [None, b""]
    try:
        for candidate in candidates:
            info = _open(data, candidate)
            if info is not None:
                return info
    except ValueError:
        raise ValidationError(path, "must contain a certificate (the PFX holds none)") from None
    raise ValidationError(path, PASSWORD_RULE)
