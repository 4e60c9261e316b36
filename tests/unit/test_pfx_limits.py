"""A hostile PFX (PKCS #12) is refused in milliseconds, before anything opens it; real ones still open.

Before the rule, a 4 KB PFX whose MAC (or encryption) iteration count was 20,000,000 cost 1.4-4.4 s of CPU to
refuse, 2^31 - 1 about 150-200 s, and an RSA key of 7168 bits 3.3 s to validate: at write time in the API
(``read_pfx``) and at send time in the executor (``client_certificate_context``). Every file here is real
bytes: made by ``cryptography`` or OpenSSL and rewritten in its DER by ``tests/support/hostile_pfx.py``
(re-encrypted and MAC'ed again where the rewrite is covered), so a loader without the rule does spend the
CPU. "In milliseconds" is checked as process CPU time (``time.process_time``), a correctness bound of a
refusal, not a benchmark.
"""

from __future__ import annotations

import base64
import json
import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import RC2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    PrivateFormat,
    pkcs12,
)

from scheduler_core.actions import ActionContext
from scheduler_core.actions.http import HttpSender
from scheduler_core.actions.http_auth import AuthenticationProblem, client_certificate_context
from scheduler_core.definitions import _certificates as certificates
from scheduler_core.definitions import parse_job
from scheduler_core.definitions._certificates import (
    MAX_BAGS,
    MAX_CONTENTS,
    MAX_ITERATIONS,
    MAX_KEY_BITS,
    MAX_LEGACY_ITERATIONS,
    MAX_LEGACY_TOTAL_ITERATIONS,
    MAX_NESTING,
    MAX_PFX_BYTES,
    MAX_TOTAL_ITERATIONS,
    PfxPasswordError,
    PfxRefusedError,
    check_pfx,
    read_pfx,
)
from scheduler_core.errors import ValidationError
from scheduler_core.model.actions import ClientCertificateAuthentication, HttpAction, Secret
from tests.support import hostile_pfx as forge

PASSWORD = "pfx-pass"
PATH = "properties.action.request.authentication.pfx"
HOSTILE = 20_000_000
#: The CPU a refusal may take. Before the rule the cheapest of these refusals took 1.4 s.
REFUSAL_CPU = 0.1

#: Made by ``openssl pkcs12 -export -legacy`` (OpenSSL 3.0): the certificate under pbeWithSHA1And40BitRC2-CBC,
#: the key under pbeWithSHA1And3-KeyTripleDES-CBC, a SHA-1 MAC, 2048 iterations each (OpenSSL 1.x's default
#: and what older Java and Windows files look like). Its password is ``legacy-pass``; an EC P-256 test key.
OPENSSL_LEGACY_PFX = (
    "MIIDqgIBAzCCA3AGCSqGSIb3DQEHAaCCA2EEggNdMIIDWTCCAk8GCSqGSIb3DQEHBqCCAkAwggI8AgEAMIICNQYJKoZIhvcNAQcB"
    "MBwGCiqGSIb3DQEMAQYwDgQI2x0lQZvHLzwCAggAgIICCB2yHoRmA2oTVn8SP/NrJ0WLQaW6iaKsyELGnDKFScZ0GDB1/FFbdvXK"
    "uE5fHz0DVIr82nOnSwlOgdLE74zHIeBXZHVocoh8mx82AG88eptgLkCactap1jQexfZ/XITlIf+3KdxqlwAtVoL44xIcLNbZ970P"
    "E8YLrwawNWsHUmRqv2CXX1rEljc5yIVEyXdsLn7/RhMk8Cp/lTX4Nw00XYyQWAJ76vArIXMOXbZM6hXf/2Gyz6sFisH2rCPpBAug"
    "clpGsOj9GQvYYsRCNvVUDrqGMuo801WVI4v0vNoa9ppRVGFH0nVwkYE0Df37XG37UUeKfASm28zBFQjMyoS3zzWRQjUkynw1JpwP"
    "D5kdnc1k/pdy2Tc1Bx+xXv2mzu6wbmauucxfm64dRgN0zrENMwla//juTSraVZ0y8uYVpWmB2ph6N42RHc9zawEU9bZy5lSO5dJ5"
    "0eytx9E3D6RnHhGgn1yiOPsa6GcaSe1RexshSI4Co9VAtqPrkCTB3LmDJqdH/U3l0vQFHOnWdmrEyueLYmGo0WunRxJcfkmE6YFt"
    "1wyzgCN7ZkSCsdH9LaC/0bYBqpnMIqiEQ7vYcEDEB1IAHwZtdio5B+HXqTWqorp0kWBp6xes4ZNQYgvYRJmmq7VQWDWfnVclYbZy"
    "AtEzyvyfoaMZ23dWTJ82AC7JC4MuutUjLypX+oAwggECBgkqhkiG9w0BBwGggfQEgfEwge4wgesGCyqGSIb3DQEMCgECoIG0MIGx"
    "MBwGCiqGSIb3DQEMAQMwDgQIzN2a/e8ycI0CAggABIGQIVk1w/r5Gpsg9lfdQZeyT8ITJUJCkbxA0cA1djTY9+BtiQH+oX6Xo2pz"
    "tHIRu+rjmyOk45oxd2It1Z/W3bkqfOAKMJaN9Z07RpsT+pa5l1vMrN3RfHwDc4CG8PA1828m3IGFiYbZiTVPNQeTwMAvM0QDIIiy"
    "iE0XmPesvU1hBrC6l9eVKbLFekpajLWeqkSuMSUwIwYJKoZIhvcNAQkVMRYEFMPWw78glN5VzA4myMSIdcHNg7cNMDEwITAJBgUr"
    "DgMCGgUABBT1eRn9Y9wrUC0lZeX0CerJuHkc1AQIKPcfD+uqrXcCAggA"
)
OPENSSL_LEGACY_THUMBPRINT = "C3D6C3BF2094DE55CC0E26C8C48875C1CD83B70D"


@pytest.fixture(autouse=True)
def no_cached_verdicts() -> None:
    """Every test measures a first reading (verdicts and opened files are cached per file and password)."""
    certificates._verdict.cache_clear()
    certificates._open.cache_clear()


@pytest.fixture(scope="module")
def real() -> bytes:
    return forge.real_pfx(PASSWORD)


@pytest.fixture(scope="module")
def legacy() -> bytes:
    return forge.legacy_pfx(PASSWORD)


def cpu(call: Callable[[], object]) -> tuple[float, BaseException | None]:
    """The process CPU time ``call`` takes, and what it raised."""
    start = time.process_time()
    try:
        call()
    except Exception as exc:
        return time.process_time() - start, exc
    return time.process_time() - start, None


def refused_at_write(data: bytes, password: str | None = PASSWORD) -> tuple[float, ValidationError]:
    spent, error = cpu(lambda: read_pfx(forge.b64(data), password, PATH))
    assert isinstance(error, ValidationError), error
    assert error.path == PATH and error.status == 400
    return spent, error


# ------------------------------------------------------------------------------------ real files open


def rsa_pfx() -> bytes:
    key = rsa.generate_private_key(65537, 2048)
    cert = forge.certificate(key)
    return pkcs12.serialize_key_and_certificates(b"rsa", key, cert, None, BestAvailableEncryption(PASSWORD.encode()))


def pbes2_pfx(algorithm: pkcs12.PBES, rounds: int, mac: hashes.HashAlgorithm) -> Callable[[], bytes]:
    encryption = (
        PrivateFormat.PKCS12.encryption_builder()
        .kdf_rounds(rounds)
        .key_cert_algorithm(algorithm)
        .hmac_hash(mac)
        .build(PASSWORD.encode())
    )
    return lambda: forge.real_pfx(PASSWORD, encryption)


REAL_FILES: dict[str, tuple[Callable[[], bytes], str | None]] = {
    "openssl-3-defaults": (lambda: forge.real_pfx(PASSWORD), PASSWORD),
    "no-password": (lambda: forge.real_pfx(None), None),
    "no-password-given-as-empty": (lambda: forge.real_pfx(None), ""),
    "legacy-3des-sha1-mac": (lambda: forge.legacy_pfx(PASSWORD), PASSWORD),
    "openssl-legacy-rc2-40": (lambda: base64.b64decode(OPENSSL_LEGACY_PFX), "legacy-pass"),
    "rsa-2048": (rsa_pfx, PASSWORD),
    "ber-indefinite-lengths": (lambda: forge.as_ber(forge.real_pfx(PASSWORD), PASSWORD), PASSWORD),
    "ber-legacy": (lambda: forge.as_ber(forge.legacy_pfx(PASSWORD), PASSWORD), PASSWORD),
    "pbes2-at-the-limit": (
        pbes2_pfx(pkcs12.PBES.PBESv2SHA256AndAES256CBC, MAX_ITERATIONS, hashes.SHA256()),
        PASSWORD,
    ),
    "legacy-at-the-limit": (
        pbes2_pfx(pkcs12.PBES.PBESv1SHA1And3KeyTripleDESCBC, MAX_LEGACY_ITERATIONS, hashes.SHA1()),
        PASSWORD,
    ),
    "unicode-password": (
        lambda: forge.real_pfx("pässwörd-🔑", BestAvailableEncryption("pässwörd-🔑".encode())),
        "pässwörd-🔑",
    ),
}


@pytest.mark.filterwarnings("ignore:PKCS#12 bundle could not be parsed as DER")
@pytest.mark.parametrize("name", REAL_FILES)
def test_real_pfx_files_still_open(name: str) -> None:
    make, password = REAL_FILES[name]
    data = make()
    _key, cert, _ = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    assert cert is not None
    info = read_pfx(forge.b64(data), password, PATH)
    assert info.thumbprint == cert.fingerprint(hashes.SHA1()).hex().upper()
    context = client_certificate_context(forge.b64(data), password)
    assert context.minimum_version.name == "TLSv1_2"


def test_a_file_from_openssl_legacy_mode_opens_with_its_facts() -> None:
    info = read_pfx(OPENSSL_LEGACY_PFX, "legacy-pass", PATH)
    assert info.thumbprint == OPENSSL_LEGACY_THUMBPRINT
    assert info.subject == "O=Contoso, CN=legacy-openssl"
    with pytest.raises(ValidationError, match="could not be opened with the given password"):
        read_pfx(OPENSSL_LEGACY_PFX, "not-the-password", PATH)


def test_the_rc2_of_pkcs12_matches_rfc_2268_and_cryptography() -> None:
    # RFC 2268 section 5 (effective key bits = 8 x key length, as PKCS #12 uses RC2); one block, zero IV
    vectors = [
        ("ffffffffffffffff", "ffffffffffffffff", "278b27e42e2f0d49"),
        ("3000000000000000", "1000000000000001", "30649edf9be7d2c2"),
        ("88bca90e90875a7f0f79c384627bafb2", "0000000000000000", "2269552ab0f85ca6"),
    ]
    for key, plain, cipher in vectors:
        assert certificates._rc2_cbc_decrypt(bytes.fromhex(key), bytes(8), bytes.fromhex(cipher)).hex() == plain
    key, iv, data = random.randbytes(16), random.randbytes(8), random.randbytes(80)
    encryptor = Cipher(RC2(key), modes.CBC(iv)).encryptor()
    assert certificates._rc2_cbc_decrypt(key, iv, encryptor.update(data) + encryptor.finalize()) == data


# -------------------------------------------------------------------------------- hostile iteration counts

HOSTILE_FILES: dict[str, tuple[Callable[[bytes, bytes, int], bytes], str, int]] = {
    # name: (rewrite of (real, legacy, count), what the refusal names, the limit it names)
    "mac": (lambda real, legacy, n: forge.with_mac_iterations(real, n), "MAC", MAX_ITERATIONS),
    "certificates-pbes2": (
        lambda real, legacy, n: forge.with_certificate_iterations(real, PASSWORD, n),
        "content encryption",
        MAX_ITERATIONS,
    ),
    "key-pbes2": (
        lambda real, legacy, n: forge.with_key_iterations(real, PASSWORD, n),
        "private key encryption",
        MAX_ITERATIONS,
    ),
    "key-hidden-in-encrypted-certificates": (
        lambda real, legacy, n: forge.with_key_hidden(real, PASSWORD, n),
        "private key encryption",
        MAX_ITERATIONS,
    ),
    "certificates-pkcs12-pbe": (
        lambda real, legacy, n: forge.with_certificate_iterations(legacy, PASSWORD, n),
        "content encryption",
        MAX_LEGACY_ITERATIONS,
    ),
    "key-pkcs12-pbe": (
        lambda real, legacy, n: forge.with_key_iterations(legacy, PASSWORD, n),
        "private key encryption",
        MAX_LEGACY_ITERATIONS,
    ),
    "key-hidden-pkcs12-pbe": (
        lambda real, legacy, n: forge.with_key_hidden(legacy, PASSWORD, n),
        "private key encryption",
        MAX_LEGACY_ITERATIONS,
    ),
    "pbmac1": (lambda real, legacy, n: forge.with_pbmac1(real, n), "PBMAC1", MAX_ITERATIONS),
}


@pytest.mark.parametrize("count", [HOSTILE, 2**31 - 1])
@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_a_hostile_iteration_count_is_refused_at_write_in_milliseconds(
    real: bytes, legacy: bytes, name: str, count: int
) -> None:
    rewrite, what, limit = HOSTILE_FILES[name]
    spent, error = refused_at_write(rewrite(real, legacy, count))
    assert f"the {what} iteration count {count} exceeds {limit}" in error.rule
    assert error.rule.startswith("is refused before it is opened: ")
    assert spent < REFUSAL_CPU, f"{spent:.3f} s of CPU to refuse"


@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_a_stored_hostile_pfx_fails_the_attempt_at_once(real: bytes, legacy: bytes, name: str) -> None:
    rewrite, what, limit = HOSTILE_FILES[name]
    text = forge.b64(rewrite(real, legacy, HOSTILE))
    spent, error = cpu(lambda: client_certificate_context(text, PASSWORD))
    assert isinstance(error, AuthenticationProblem), error
    assert str(error) == f"the client certificate (PFX) is refused before it is opened: the {what} iteration count " + (
        f"{HOSTILE} exceeds {limit}"
    )
    assert spent < REFUSAL_CPU, f"{spent:.3f} s of CPU to refuse"


def test_the_sender_reports_the_refusal_without_a_connection(real: bytes) -> None:
    text = forge.b64(forge.with_mac_iterations(real, HOSTILE))
    authentication = ClientCertificateAuthentication(
        Secret(text), Secret(PASSWORD), "", "", datetime(2030, 1, 1, tzinfo=UTC)
    )
    action = HttpAction("https://127.0.0.1:9/hook", "POST", https=True, body="hi", authentication=authentication)
    context = ActionContext("job", "collection", datetime(2030, 1, 1, tzinfo=UTC), execution_id="e", retry_count=0)
    start = time.process_time()
    result = HttpSender().send(action, context)
    spent = time.process_time() - start
    assert not result.succeeded
    assert result.message == (
        "Request not sent: the client certificate (PFX) is refused before it is opened: the MAC iteration count "
        f"{HOSTILE} exceeds {MAX_ITERATIONS} | Http Action - Request to host '127.0.0.1'"
    )
    assert text not in result.message and PASSWORD not in result.message
    assert spent < 0.5


def test_counts_at_the_limits_pass_the_check_and_one_more_is_refused(real: bytes, legacy: bytes) -> None:
    check_pfx(forge.with_mac_iterations(real, MAX_ITERATIONS), PASSWORD)
    with pytest.raises(PfxRefusedError, match=f"MAC iteration count {MAX_ITERATIONS + 1} exceeds"):
        check_pfx(forge.with_mac_iterations(real, MAX_ITERATIONS + 1), PASSWORD)
    with pytest.raises(PfxRefusedError, match=f"iteration count {MAX_LEGACY_ITERATIONS + 1} exceeds"):
        check_pfx(forge.with_key_iterations(legacy, PASSWORD, MAX_LEGACY_ITERATIONS + 1), PASSWORD)
    with pytest.raises(PfxRefusedError, match="MAC iteration count 0 is not positive"):
        check_pfx(forge.with_mac_iterations(real, 0), PASSWORD)


def test_the_counts_of_one_file_have_a_total(real: bytes, legacy: bytes) -> None:
    # each count under its limit; together over: refused before a single key derivation
    each = MAX_TOTAL_ITERATIONS // 3 + 1
    data = forge.with_key_iterations(real, PASSWORD, each)
    data = forge.with_certificate_iterations(data, PASSWORD, each)
    spent, error = refused_at_write(forge.with_mac_iterations(data, each))
    assert f"add up to more than {MAX_TOTAL_ITERATIONS}" in error.rule
    assert spent < REFUSAL_CPU
    # three private keys under pbeWithSHAAnd*, each at the limit
    pfx = forge.Pfx.parse(forge.with_key_iterations(legacy, PASSWORD, MAX_LEGACY_ITERATIONS))
    key_safe = pfx.shrouded_key(PASSWORD)[0]
    pfx.safes += [key_safe, key_safe]
    spent, error = refused_at_write(pfx.to_bytes(PASSWORD))
    assert f"pbeWithSHAAnd* encryptions add up to more than {MAX_LEGACY_TOTAL_ITERATIONS}" in error.rule
    assert spent < REFUSAL_CPU


# ----------------------------------------------------------------------------------------- private keys


def _ffdhe_prime(bits: int, x: int) -> int:
    """An RFC 7919 ffdhe prime: 2^b - 2^(b-64) + (floor(2^(b-130) e) + x) 2^64 - 1."""
    scaled, term, k = 0, 1 << (bits - 130 + 64), 0
    while term:
        scaled, k = scaled + term, k + 1
        term //= k
    return 2**bits - 2 ** (bits - 64) + ((scaled >> 64) + x) * 2**64 - 1


def test_an_rsa_key_over_the_limit_is_refused_before_its_primes_are_tested() -> None:
    # A valid 7168-bit key from two known primes (ffdhe4096, ffdhe3072): validating it took 3.3 s of CPU.
    p, q, e = _ffdhe_prime(4096, 5736041), _ffdhe_prime(3072, 2625351), 65537
    d = pow(e, -1, (p - 1) * (q - 1) // math.gcd(p - 1, q - 1))
    public = rsa.RSAPublicNumbers(e, p * q)
    numbers = rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), public)
    key = numbers.private_key(unsafe_skip_rsa_key_validation=True)
    encryption = BestAvailableEncryption(PASSWORD.encode())
    data = pkcs12.serialize_key_and_certificates(b"big", key, forge.certificate(key), None, encryption)
    spent, error = refused_at_write(data)
    assert "an RSA key of 7168 bits with primes of 4096" in error.rule
    assert f"at most {MAX_KEY_BITS} bits" in error.rule
    assert spent < REFUSAL_CPU


def _with_key_algorithm(parameters: forge.Node | None, algorithm: str = forge.EC_PUBLIC_KEY) -> bytes:
    """An unencrypted PFX whose key bag's PrivateKeyInfo names ``algorithm`` with ``parameters``."""
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    for safe in pfx.safes:
        bags = pfx.bags(safe, None)
        for bag in bags:
            if forge.oid_of(bag.items[0]) == forge.KEY_BAG:
                identifier = bag.items[1].items[0].items[1]
                identifier.items = [forge.oid(algorithm), *([parameters] if parameters is not None else [])]
        pfx.set_bags(safe, bags, None)
    return pfx.to_bytes(None)


def test_only_keys_that_load_cheaply_are_accepted() -> None:
    explicit_curve = forge.sequence(forge.integer(1), forge.sequence(forge.oid("1.2.840.10045.1.1")))
    _, error = refused_at_write(_with_key_algorithm(explicit_curve), None)
    assert "EC key whose curve is not named" in error.rule
    _, error = refused_at_write(_with_key_algorithm(forge.oid("1.2.840.10045.3.1.7"), "1.3.101.110"), None)
    assert "a private key of algorithm 1.3.101.110" in error.rule


# -------------------------------------------------------------------------------------------- structure


def _nested_bags(depth: int) -> bytes:
    """An unencrypted PFX whose certificate bag sits ``depth`` safeContentsBags deep."""
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    for safe in pfx.safes:
        bags = pfx.bags(safe, None)
        for _ in range(depth):
            bags = [forge.sequence(forge.oid(forge.SAFE_CONTENTS_BAG), forge.explicit(0, forge.sequence(*bags)))]
        pfx.set_bags(safe, bags, None)
    return pfx.to_bytes(None)


def _many_bags(count: int) -> bytes:
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    safe = pfx.safes[0]
    bags = pfx.bags(safe, None)
    pfx.set_bags(safe, (bags * count)[:count], None)
    return pfx.to_bytes(None)


def _many_contents(count: int) -> bytes:
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    pfx.safes = (pfx.safes * count)[:count]
    return pfx.to_bytes(None)


def _with_content_type(type_oid: str, where: str) -> bytes:
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    if where == "authSafe":
        pfx.root.items[1].items[0] = forge.oid(type_oid)
        return forge.encode(pfx.root)
    pfx.safes[0].items[0] = forge.oid(type_oid)
    return pfx.to_bytes(None)


def _deep(depth: int) -> bytes:
    value = forge.octets(b"x")
    for _ in range(depth):
        value = forge.sequence(value)
    return forge.encode(value)


def _unknown_bag() -> bytes:
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    bags = pfx.bags(pfx.safes[0], None)
    bags[0].items[0] = forge.oid("1.2.840.113549.1.12.10.1.99")
    pfx.set_bags(pfx.safes[0], bags, None)
    return pfx.to_bytes(None)


def _version(number: int) -> bytes:
    pfx = forge.Pfx.parse(forge.real_pfx(None))
    pfx.root.items[0] = forge.integer(number)
    return forge.encode(pfx.root)


STRUCTURES: dict[str, tuple[Callable[[], bytes], str]] = {
    "garbage": (lambda: b"garbage", "could not be opened: it is not a well-formed PFX (PKCS #12) file"),
    "truncated": (lambda: forge.real_pfx(PASSWORD)[:-7], "it is truncated"),
    "cut-in-the-middle": (lambda: forge.real_pfx(PASSWORD)[:300], "it is truncated"),
    "trailing-bytes": (lambda: forge.real_pfx(PASSWORD) + b"\x00\x00", "2 bytes follow the PFX"),
    "empty-sequence": (lambda: b"\x30\x00", "the PFX has 0 values"),
    "a-certificate-not-a-pfx": (lambda: forge.encode(forge.sequence(forge.sequence(), forge.sequence())), "INTEGER"),
    "version-2": (lambda: _version(2), "its version is not 3"),
    "public-key-integrity": (
        lambda: _with_content_type("1.2.840.113549.1.7.2", "authSafe"),
        "of type 1.2.840.113549.1.7.2; only data (password integrity) is supported",
    ),
    "enveloped-content": (
        lambda: _with_content_type("1.2.840.113549.1.7.3", "content"),
        "a content of type 1.2.840.113549.1.7.3; only data and encryptedData are supported",
    ),
    "unknown-bag": (_unknown_bag, "a SafeBag is of unknown type 1.2.840.113549.1.12.10.1.99"),
    "bags-nested-too-deep": (lambda: _nested_bags(MAX_NESTING + 1), f"nested more than {MAX_NESTING} deep"),
    "too-many-bags": (lambda: _many_bags(MAX_BAGS + 1), f"more than {MAX_BAGS} SafeBags"),
    "too-many-contents": (lambda: _many_contents(MAX_CONTENTS + 1), f"more than {MAX_CONTENTS}"),
    "ber-nested-too-deep": (lambda: _deep(40), "values nested more than 32 deep"),
    "indefinite-primitive": (lambda: b"\x04\x80\x00\x00", "an indefinite length on a primitive value"),
    "high-tag-number": (lambda: b"\x3f\x81\x00\x00", "an unexpected tag 0x3f"),
    "huge-length": (lambda: b"\x30\x84\xff\xff\xff\xff", "it is truncated"),
    "too-large": (
        lambda: forge.encode(forge.sequence(forge.octets(bytes(MAX_PFX_BYTES)))),
        f"more than {MAX_PFX_BYTES} (64 KiB)",
    ),
}


@pytest.mark.parametrize("name", STRUCTURES)
def test_what_is_not_pkcs12_is_a_clear_400(name: str) -> None:
    make, words = STRUCTURES[name]
    spent, error = refused_at_write(make(), None)
    assert words in error.rule
    assert spent < REFUSAL_CPU


def test_structures_within_the_limits_still_open() -> None:
    for data in (_nested_bags(MAX_NESTING), _many_contents(MAX_CONTENTS)):
        check_pfx(data, None)
        assert read_pfx(forge.b64(data), None, PATH).subject == "CN=pfx-limits"


def test_mangled_files_are_refused_or_opened_never_a_crash(real: bytes) -> None:
    """Bytes flipped, cut and inserted at random in real files: every answer is a verdict or a 400."""
    rng = random.Random(7292)
    sources = [real, forge.legacy_pfx(PASSWORD), base64.b64decode(OPENSSL_LEGACY_PFX), forge.real_pfx(None)]
    for round_ in range(400):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            match rng.randrange(3):
                case 0:
                    data[at] = rng.randrange(256)
                case 1:
                    del data[at : at + rng.randint(1, 16)]
                case _:
                    data[at:at] = rng.randbytes(rng.randint(1, 8))
        password = rng.choice([PASSWORD, "legacy-pass", None])
        refusal: ValidationError | None = None
        try:
            read_pfx(forge.b64(bytes(data)), password, PATH)
        except ValidationError as error:
            refusal = error
        assert refusal is None or refusal.path == PATH, round_


def test_a_wrong_password_is_found_before_anything_is_opened(real: bytes, legacy: bytes) -> None:
    for data in (real, legacy):
        with pytest.raises(PfxPasswordError):
            check_pfx(data, "wrong")
    with pytest.raises(AuthenticationProblem, match="could not be opened with its password"):
        client_certificate_context(forge.b64(real), "wrong")
    with pytest.raises(PfxPasswordError):
        check_pfx(real, "\ud800")  # a lone surrogate: no file opens with it
    check_pfx(forge.real_pfx(None), "anything")  # nothing encrypted: the MAC decides, when the file is opened


def test_the_refusal_never_quotes_the_file_or_the_password(real: bytes) -> None:
    text = forge.b64(forge.with_key_hidden(real, PASSWORD, HOSTILE))
    with pytest.raises(ValidationError) as caught:
        read_pfx(text, PASSWORD, PATH)
    assert PASSWORD not in caught.value.message and text[:40] not in caught.value.message


# ------------------------------------------------------------------------------------------------ paths


def _job(pfx: str) -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    request = {
        "uri": "https://example.org/hook",
        "method": "POST",
        "authentication": {"type": "ClientCertificate", "pfx": pfx, "password": PASSWORD},
    }
    return {
        "startTime": start,
        "action": {"type": "Https", "request": request},
        "recurrence": {"frequency": "Hour", "interval": 1},
    }


def test_a_job_definition_with_a_hostile_pfx_is_refused_in_milliseconds(real: bytes) -> None:
    hostile = forge.b64(forge.with_key_hidden(real, PASSWORD, 2**31 - 1))
    spent, error = cpu(lambda: parse_job({"properties": _job(hostile)}))
    assert isinstance(error, ValidationError), error
    assert error.status == 400 and error.path == PATH
    assert f"iteration count {2**31 - 1} exceeds {MAX_ITERATIONS}" in error.message
    assert spent < REFUSAL_CPU


def test_the_cli_import_dry_run_refuses_it_quickly(
    real: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from scheduler_core.cli import main

    monkeypatch.setenv("SCHEDULER_ENDPOINT", "http://127.0.0.1:9")
    collection = "/subscriptions/sub1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
    listing = [
        {
            "id": f"{collection}/jobs/{name}",
            "type": "Microsoft.Scheduler/jobCollections/jobs",
            "name": f"jc/{name}",
            "properties": _job(pfx),
        }
        for name, pfx in (("good", forge.b64(real)), ("bad", forge.b64(forge.with_mac_iterations(real, HOSTILE))))
    ]
    path = tmp_path / "listing.json"
    path.write_text(json.dumps(listing), encoding="utf-8")
    start = time.process_time()
    code = main(["import", str(path), "--dry-run", "--offline", "-o", "json"])
    spent = time.process_time() - start
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    good, bad = report["results"]
    assert good["outcome"] == "create", good
    assert bad["outcome"] == "fail" and bad["status"] == 400
    assert bad["message"] == f"{PATH}: is refused before it is opened: the MAC iteration count {HOSTILE} exceeds 600000"
    assert spent < 0.5
