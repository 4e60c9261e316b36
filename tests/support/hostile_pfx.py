"""Real and hostile PFX (PKCS #12) files for tests (test helpers, never product code).

A real file is made by ``cryptography`` (:func:`real_pfx`); a hostile one is that file with one part
rewritten in its DER: an iteration count raised, the private key moved into the encrypted certificates, a
PBMAC1 MAC put in. Whatever the rewrite covers is encrypted and MAC'ed again with the password (the MAC with
its own count), so the file is exactly what an attacker who knows the password can send: ``cryptography``
checks its MAC, decrypts it and only then reaches the rewritten count. The helpers have their own small DER
codec and PKCS #12 key derivation (RFC 7292 appendix B), independent of the product's reader;
:func:`real_pfx`'s round trip through them is checked by the tests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    KeySerializationEncryption,
    NoEncryption,
    PrivateFormat,
    pkcs12,
)
from cryptography.x509.oid import NameOID

DATA = "1.2.840.113549.1.7.1"
ENCRYPTED_DATA = "1.2.840.113549.1.7.6"
PBES2 = "1.2.840.113549.1.5.13"
PBKDF2 = "1.2.840.113549.1.5.12"
PBMAC1 = "1.2.840.113549.1.5.14"
HMAC_SHA256 = "1.2.840.113549.2.9"
KEY_BAG = "1.2.840.113549.1.12.10.1.1"
SHROUDED_KEY_BAG = "1.2.840.113549.1.12.10.1.2"
SAFE_CONTENTS_BAG = "1.2.840.113549.1.12.10.1.6"
PKCS12_3DES = "1.2.840.113549.1.12.1.3"
EC_PUBLIC_KEY = "1.2.840.10045.2.1"
AES_OIDS = {"2.16.840.1.101.3.4.1.2": 16, "2.16.840.1.101.3.4.1.22": 24, "2.16.840.1.101.3.4.1.42": 32}
HASHES = {
    "1.3.14.3.2.26": "sha1",
    "2.16.840.1.101.3.4.2.1": "sha256",
    "2.16.840.1.101.3.4.2.2": "sha384",
    "2.16.840.1.101.3.4.2.3": "sha512",
}
PRFS = {"1.2.840.113549.2.7": "sha1", HMAC_SHA256: "sha256", "1.2.840.113549.2.11": "sha512"}

# ------------------------------------------------------------------------------------------------- DER


@dataclass
class Node:
    """One DER value: ``tag`` (the identifier octet), ``value`` (a primitive's content) or ``items``."""

    tag: int
    value: bytes = b""
    items: list[Node] = field(default_factory=list)

    @property
    def constructed(self) -> bool:
        return bool(self.tag & 0x20)


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def encode(node: Node) -> bytes:
    body = b"".join(encode(item) for item in node.items) if node.constructed else node.value
    return bytes([node.tag]) + _length(len(body)) + body


def ber(node: Node) -> bytes:
    """``node`` in BER as Windows and Java write PFX files: every constructed value of indefinite length,
    every OCTET STRING longer than one byte constructed of two segments."""
    if node.constructed:
        return bytes([node.tag, 0x80]) + b"".join(ber(item) for item in node.items) + b"\x00\x00"
    if node.tag in (0x04, 0x80) and len(node.value) > 1:
        half = len(node.value) // 2
        segments = encode(octets(node.value[:half])) + encode(octets(node.value[half:]))
        return bytes([node.tag | 0x20, 0x80]) + segments + b"\x00\x00"
    return encode(node)


def _decode_at(data: bytes, pos: int) -> tuple[Node, int]:
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first & 0x80:
        count = first & 0x7F
        length = int.from_bytes(data[pos : pos + count], "big")
        pos += count
    else:
        length = first
    end = pos + length
    if not tag & 0x20:
        return Node(tag, data[pos:end]), end
    items = []
    while pos < end:
        item, pos = _decode_at(data, pos)
        items.append(item)
    return Node(tag, items=items), end


def decode(data: bytes) -> Node:
    node, end = _decode_at(data, 0)
    assert end == len(data), "trailing bytes"
    return node


def integer(n: int) -> Node:
    return Node(0x02, n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True))


def octets(value: bytes) -> Node:
    return Node(0x04, value)


def sequence(*items: Node) -> Node:
    return Node(0x30, items=list(items))


def explicit(number: int, inner: Node) -> Node:
    return Node(0xA0 | number, items=[inner])


def oid(dotted: str) -> Node:
    parts = [int(p) for p in dotted.split(".")]
    out = bytearray([parts[0] * 40 + parts[1]])
    for part in parts[2:]:
        chunk, rest = [part & 0x7F], part >> 7
        while rest:
            chunk.append(0x80 | (rest & 0x7F))
            rest >>= 7
        out.extend(reversed(chunk))
    return Node(0x06, bytes(out))


def oid_of(node: Node) -> str:
    assert node.tag == 0x06
    first, rest = node.value[0], node.value[1:]
    parts, value = [str(first // 40), str(first % 40)], 0
    for byte in rest:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(str(value))
            value = 0
    return ".".join(parts)


def int_of(node: Node) -> int:
    assert node.tag == 0x02
    return int.from_bytes(node.value, "big", signed=True)


# ---------------------------------------------------------------------------------------- key derivation


def bmp_password(password: str | None) -> bytes:
    """The PKCS #12 KDF's password: UTF-16BE and two zero bytes; no password at all is no bytes."""
    return b"" if password is None else password.encode("utf-16-be") + b"\x00\x00"


def pkcs12_kdf(digest: str, password: bytes, salt: bytes, iterations: int, purpose: int, size: int) -> bytes:
    """RFC 7292 appendix B.2 (purpose 1: key, 2: IV, 3: MAC key)."""
    h = hashlib.new(digest)
    u, v = h.digest_size, h.block_size

    def fill(raw: bytes) -> bytes:
        size = v * -(-len(raw) // v)
        return (raw * (size // len(raw) + 1))[:size] if raw else b""

    block = fill(salt) + fill(password)
    out = b""
    while len(out) < size:
        a = hashlib.new(digest, bytes([purpose]) * v + block).digest()
        for _ in range(iterations - 1):
            a = hashlib.new(digest, a).digest()
        out += a
        b = int.from_bytes((a * (v // u + 1))[:v], "big")
        block = b"".join(
            ((int.from_bytes(block[j : j + v], "big") + b + 1) % (1 << (8 * v))).to_bytes(v, "big")
            for j in range(0, len(block), v)
        )
    return out[:size]


# ------------------------------------------------------------------------------------------ encryption


def _cipher(algorithm: Node, password: str | None) -> Cipher[modes.CBC]:
    """The cipher of a PBES2 (PBKDF2, AES-CBC) or pbeWithSHAAnd3-KeyTripleDES-CBC algorithm identifier."""
    scheme = oid_of(algorithm.items[0])
    if scheme == PBES2:
        kdf, encryption = algorithm.items[1].items
        salt, count, *rest = kdf.items[1].items
        prf = next((PRFS[oid_of(r.items[0])] for r in rest if r.tag == 0x30), "sha1")
        size = AES_OIDS[oid_of(encryption.items[0])]
        key = hashlib.pbkdf2_hmac(prf, (password or "").encode(), salt.value, int_of(count), size)
        return Cipher(algorithms.AES(key), modes.CBC(encryption.items[1].value))
    assert scheme == PKCS12_3DES, scheme
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES

    salt, count = algorithm.items[1].items
    secret = bmp_password(password)
    key = pkcs12_kdf("sha1", secret, salt.value, int_of(count), 1, 24)
    iv = pkcs12_kdf("sha1", secret, salt.value, int_of(count), 2, 8)
    return Cipher(TripleDES(key), modes.CBC(iv))


def decrypt(algorithm: Node, password: str | None, data: bytes) -> bytes:
    decryptor = _cipher(algorithm, password).decryptor()
    plain = decryptor.update(data) + decryptor.finalize()
    return plain[: -plain[-1]]


def encrypt(algorithm: Node, password: str | None, data: bytes) -> bytes:
    pad = 16 - len(data) % 16 if oid_of(algorithm.items[0]) == PBES2 else 8 - len(data) % 8
    encryptor = _cipher(algorithm, password).encryptor()
    return encryptor.update(data + bytes([pad]) * pad) + encryptor.finalize()


def set_iterations(algorithm: Node, count: int) -> None:
    """Rewrite the iteration count of a PBES2/PBKDF2 or PKCS #12 PBE algorithm identifier."""
    if oid_of(algorithm.items[0]) == PBES2:
        algorithm.items[1].items[0].items[1].items[1] = integer(count)
    else:
        algorithm.items[1].items[1] = integer(count)


# ----------------------------------------------------------------------------------------------- a PFX


@dataclass
class Pfx:
    """A PFX taken apart: ``safes`` are the ContentInfos of its AuthenticatedSafe, ``mac`` its MacData."""

    root: Node
    safes: list[Node]

    @classmethod
    def parse(cls, data: bytes) -> Pfx:
        root = decode(data)
        content = root.items[1].items[1].items[0].value
        return cls(root, decode(content).items)

    @property
    def mac(self) -> Node:
        return self.root.items[2]

    def content(self) -> bytes:
        return encode(sequence(*self.safes))

    def bags(self, safe: Node, password: str | None) -> list[Node]:
        """The SafeBags of one ContentInfo (an encrypted one decrypted with ``password``)."""
        if oid_of(safe.items[0]) == DATA:
            return decode(safe.items[1].items[0].value).items
        info = safe.items[1].items[0].items[1]
        return decode(decrypt(info.items[1], password, info.items[2].value)).items

    def set_bags(self, safe: Node, bags: list[Node], password: str | None) -> None:
        if oid_of(safe.items[0]) == DATA:
            safe.items[1].items[0] = octets(encode(sequence(*bags)))
            return
        info = safe.items[1].items[0].items[1]
        info.items[2] = Node(0x80, encrypt(info.items[1], password, encode(sequence(*bags))))

    def encrypted(self) -> Node:
        return next(safe for safe in self.safes if oid_of(safe.items[0]) == ENCRYPTED_DATA)

    def shrouded_key(self, password: str | None) -> tuple[Node, list[Node], int]:
        """The ContentInfo holding the (first) shrouded key bag, its bags and the key bag's index."""
        for safe in self.safes:
            bags = self.bags(safe, password)
            for index, bag in enumerate(bags):
                if oid_of(bag.items[0]) == SHROUDED_KEY_BAG:
                    return safe, bags, index
        raise AssertionError("no shrouded key bag")

    def to_bytes(self, password: str | None, mac: bool = True) -> bytes:
        """The file, its MAC computed again over the contents (unless ``mac`` is False: left as it is)."""
        content = self.content()
        self.root.items[1].items[1].items[0] = octets(content)
        if mac and len(self.root.items) > 2 and oid_of(self.mac.items[0].items[0].items[0]) != PBMAC1:
            digest_info, salt, count = self.mac.items
            digest = HASHES[oid_of(digest_info.items[0].items[0])]
            size = hashlib.new(digest).digest_size
            key = pkcs12_kdf(digest, bmp_password(password), salt.value, int_of(count), 3, size)
            digest_info.items[1] = octets(hmac.new(key, content, digest).digest())
        return encode(self.root)


# -------------------------------------------------------------------------------------- what tests use


def certificate(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, name: str = "pfx-limits") -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = datetime(2029, 1, 1, tzinfo=UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + timedelta(days=365))
        .sign(key, hashes.SHA256())
    )


def real_pfx(password: str | None, encryption: KeySerializationEncryption | None = None) -> bytes:
    """A PFX as ``cryptography`` writes it (OpenSSL 3's defaults: PBES2 AES-256-CBC, PBKDF2-SHA256, a
    SHA-256 MAC), with an EC key and its self-signed certificate; ``encryption`` overrides the choice."""
    key = ec.generate_private_key(ec.SECP256R1())
    if encryption is None:
        encryption = BestAvailableEncryption(password.encode()) if password else NoEncryption()
    return pkcs12.serialize_key_and_certificates(b"pfx-limits", key, certificate(key), None, encryption)


def legacy_pfx(password: str) -> bytes:
    """A PFX as older Windows and OpenSSL 1.x write it: pbeWithSHAAnd3-KeyTripleDES-CBC, a SHA-1 MAC."""
    encryption = (
        PrivateFormat.PKCS12.encryption_builder()
        .kdf_rounds(2000)
        .key_cert_algorithm(pkcs12.PBES.PBESv1SHA1And3KeyTripleDESCBC)
        .hmac_hash(hashes.SHA1())
        .build(password.encode())
    )
    return real_pfx(password, encryption)


def as_ber(data: bytes, password: str | None) -> bytes:
    """The same file in BER (:func:`ber`) all through, the plain SafeContents too; MAC'ed again."""
    pfx = Pfx.parse(data)
    for safe in pfx.safes:
        if oid_of(safe.items[0]) == DATA:
            safe.items[1].items[0] = Node(0x04, ber(decode(safe.items[1].items[0].value)))
    content = ber(sequence(*pfx.safes))
    pfx.root.items[1].items[1].items[0] = octets(content)
    digest_info, salt, count = pfx.mac.items
    digest = HASHES[oid_of(digest_info.items[0].items[0])]
    key = pkcs12_kdf(digest, bmp_password(password), salt.value, int_of(count), 3, hashlib.new(digest).digest_size)
    digest_info.items[1] = octets(hmac.new(key, content, digest).digest())
    return ber(pfx.root)


def with_mac_iterations(data: bytes, count: int) -> bytes:
    """The file with its MAC's iteration count set to ``count`` (the MAC itself left: what a loader spends
    is the key derivation, before it can compare)."""
    pfx = Pfx.parse(data)
    pfx.mac.items[2] = integer(count)
    return pfx.to_bytes(None, mac=False)


def with_certificate_iterations(data: bytes, password: str | None, count: int) -> bytes:
    """The file with the iteration count of its encrypted certificates set to ``count``; MAC'ed again."""
    pfx = Pfx.parse(data)
    set_iterations(pfx.encrypted().items[1].items[0].items[1].items[1], count)
    return pfx.to_bytes(password)


def with_key_iterations(data: bytes, password: str | None, count: int) -> bytes:
    """The file with the iteration count of its shrouded key set to ``count``; MAC'ed again."""
    pfx = Pfx.parse(data)
    safe, bags, index = pfx.shrouded_key(password)
    set_iterations(bags[index].items[1].items[0].items[0], count)
    pfx.set_bags(safe, bags, password)
    return pfx.to_bytes(password)


def with_key_hidden(data: bytes, password: str | None, count: int) -> bytes:
    """The shrouded key (its iteration count set to ``count``) moved into the encrypted certificates, so
    that its count can be read only after decrypting them; encrypted and MAC'ed again."""
    pfx = Pfx.parse(data)
    holder, bags, index = pfx.shrouded_key(password)
    bag = bags[index]
    set_iterations(bag.items[1].items[0].items[0], count)
    target = pfx.encrypted()
    pfx.set_bags(target, [*pfx.bags(target, password), bag], password)
    pfx.safes = [safe for safe in pfx.safes if safe is not holder]
    return pfx.to_bytes(password)


def with_pbmac1(data: bytes, count: int, key_length: int = 32) -> bytes:
    """The file with a PBMAC1 MAC (RFC 9579: PBKDF2-HMAC-SHA256, HMAC-SHA256) of ``count`` iterations."""
    pfx = Pfx.parse(data)
    kdf = sequence(
        oid(PBKDF2), sequence(octets(b"s" * 16), integer(count), integer(key_length), sequence(oid(HMAC_SHA256)))
    )
    algorithm = sequence(oid(PBMAC1), sequence(kdf, sequence(oid(HMAC_SHA256))))
    pfx.root.items[2] = sequence(sequence(algorithm, octets(b"\x00" * 32)), octets(b"salt"), integer(1))
    return pfx.to_bytes(None, mac=False)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
