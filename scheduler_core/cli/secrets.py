"""Where a job's write-only secrets sit in its ``properties``, and stand-ins for stored ones.

The API never returns a secret, so an export cannot hold one: it lists each place a secret may have
been (``secretsToReenter``) and the import puts back the values a person filled in there.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_core.uris import HIDDEN, hidden_credentials, restore_credentials

#: The last name of each secret field, for hints.
SECRET_NAMES = ("password", "secret", "pfx", "sasToken", "sasKey")
#: Value of a stand-in secret (a stored secret the service keeps, as far as validation is concerned).
STAND_IN = "stored-secret"
#: The stand-in of a stored request signing secret: a well-formed Standard Webhooks secret (32 zero bytes).
STAND_IN_SIGNING = "whsec_" + base64.b64encode(bytes(32)).decode()


@dataclass(frozen=True)
class SecretSlot:
    """A place in a job's ``properties`` where a secret goes (``path``: dotted, from ``properties``);
    ``required``: the service refuses the job without it; ``note``: what it is, and what it means when
    absent; ``stand_in``: whether a stand-in may play the stored one (not a certificate's password, which
    would not open the stand-in certificate)."""

    path: str
    required: bool
    note: str
    stand_in: bool = True
    #: Whether the export keeps the field (a target URI, answered with its credentials as ``***``: the
    #: person replaces the whole URI), rather than leaving it out.
    kept: bool = False


def _lower(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in mapping.items()}


def _key(mapping: Mapping[str, Any], name: str) -> str | None:
    """The key of ``mapping`` spelling ``name`` in any casing."""
    return next((k for k in mapping if isinstance(k, str) and k.lower() == name.lower()), None)


def _actions(properties: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(dotted path, object) of the job's action and of its error action."""
    action_key = _key(properties, "action")
    action = properties.get(action_key) if action_key else None
    if not isinstance(action, Mapping):
        return
    yield action_key or "action", action
    error_key = _key(action, "errorAction")
    error = action.get(error_key) if error_key else None
    if isinstance(error, Mapping):
        yield f"{action_key}.{error_key}", error


def _request_slots(base: str, request: Mapping[str, Any]) -> list[SecretSlot]:
    """The secrets of an HTTP action's ``request`` at ``base``: its URI's query credentials, its signing
    secret (preview) and its authentication's secret."""
    slots: list[SecretSlot] = []
    uri_key = _key(request, "uri")
    if uri_key is not None and hidden_credentials(request.get(uri_key)):
        slots.append(
            SecretSlot(
                f"{base}.{uri_key}",
                True,
                "the target URI with the credentials of its query (sig, code, key, ...) where the export shows "
                f"{HIDDEN}",
                kept=True,
            )
        )
    signing_key = _key(request, "signing")
    if signing_key is not None and isinstance(request.get(signing_key), Mapping):
        note = "the request signing secret (Standard Webhooks: whsec_ and base64)"
        slots.append(SecretSlot(f"{base}.{signing_key}.secret", True, note))
    auth_key = _key(request, "authentication")
    auth = request.get(auth_key) if auth_key else None
    if not isinstance(auth, Mapping):
        return slots
    kind = str(_lower(auth).get("type", "")).lower()
    where = f"{base}.{auth_key}"
    if kind == "basic":
        slots.append(SecretSlot(f"{where}.password", True, "Basic authentication password"))
    elif kind == "activedirectoryoauth":
        slots.append(SecretSlot(f"{where}.secret", True, "the client secret of ActiveDirectoryOAuth"))
    elif kind == "clientcertificate":
        slots.append(SecretSlot(f"{where}.pfx", True, "the client certificate, base64 PFX"))
        slots.append(SecretSlot(f"{where}.password", False, "the PFX password, if it has one", False))
    return slots


def secret_slots(properties: Mapping[str, Any]) -> list[SecretSlot]:
    """Every place a secret of this job may go, as its (secret-less) definition shows."""
    slots: list[SecretSlot] = []
    for where, action in _actions(properties):
        for field, value in action.items():
            if not isinstance(value, Mapping):
                continue
            name = str(field).lower()
            if name == "request":
                slots.extend(_request_slots(f"{where}.{field}", value))
            elif name == "queuemessage":
                slots.append(
                    SecretSlot(
                        f"{where}.{field}.sasToken",
                        False,
                        "the queue's SAS token, if the job had one (without it the function app's identity is used)",
                    )
                )
            elif name in ("servicebusqueuemessage", "servicebustopicmessage"):
                auth_key = _key(value, "authentication")
                auth = value.get(auth_key) if auth_key else None
                if isinstance(auth, Mapping) and str(_lower(auth).get("type", "")).lower() == "sharedaccesskey":
                    slots.append(
                        SecretSlot(
                            f"{where}.{field}.{auth_key}.sasKey",
                            False,
                            "the Service Bus shared access key, if the job had one "
                            "(without it the function app's identity is used)",
                        )
                    )
    return slots


def _parent(properties: dict[str, Any], path: str) -> tuple[dict[str, Any] | None, str]:
    """The object holding the last segment of ``path`` (case-insensitive), and that segment."""
    *parents, leaf = path.split(".")
    node: Any = properties
    for part in parents:
        key = _key(node, part) if isinstance(node, dict) else None
        node = node.get(key) if key is not None and isinstance(node, dict) else None
        if not isinstance(node, dict):
            return None, leaf
    return node, leaf


def put_secret(properties: dict[str, Any], path: str, value: str) -> bool:
    """Set the secret at ``path`` (from ``properties``) unless its place is gone; whether it was set."""
    parent, leaf = _parent(properties, path)
    if parent is None:
        return False
    existing = _key(parent, leaf)
    parent[existing or leaf] = value
    return True


def strip_secrets(properties: dict[str, Any]) -> int:
    """Remove every secret value from a job's ``properties`` (the API returns none; this makes sure of it).
    Returns how many were removed."""
    removed = 0
    for slot in secret_slots(properties):
        if slot.kept:
            continue
        parent, leaf = _parent(properties, slot.path)
        key = _key(parent, leaf) if parent is not None else None
        if parent is not None and key is not None:
            del parent[key]
            removed += 1
    return removed


def stand_ins(properties: Mapping[str, Any]) -> dict[str, str]:
    """Stand-in secrets of a stored job (what the service keeps when a replace omits them), by dotted path
    inside ``properties`` (as :func:`scheduler_core.definitions.read_job_definition` takes them).

    An optional secret stands in too: a replace keeps it only while the account and queue (namespace and
    key name) stay the same, and then the stored job's own identity check was passed when it was written,
    so a stored secret and none decide alike."""
    found: dict[str, str] = {}
    for slot in secret_slots(properties):
        if not slot.stand_in:
            continue
        if slot.kept:
            parent, leaf = _parent(dict(properties), slot.path)
            shown = str(parent.get(_key(parent, leaf) or leaf, "")) if parent is not None else ""
            found[slot.path] = restore_credentials(shown, shown.replace(f"={HIDDEN}", f"={STAND_IN}"))[0]
        else:
            found[slot.path] = _stand_in_value(slot.path)
    return found


def _stand_in_value(path: str) -> str:
    """A stand-in that passes the rules of the secret at ``path`` (a certificate, a signing secret, other)."""
    if path.endswith(".pfx"):
        return stand_in_pfx()
    if path.lower().endswith("signing.secret"):
        return STAND_IN_SIGNING
    return STAND_IN


@functools.lru_cache(maxsize=1)
def stand_in_pfx() -> str:
    """A throwaway self-signed certificate as base64 PFX without a password: the stand-in of a stored
    certificate, which the service opens again when a replace keeps it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import NoEncryption, pkcs12
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stand-in")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    data = pkcs12.serialize_key_and_certificates(b"stand-in", key, cert, None, NoEncryption())
    return base64.b64encode(data).decode()
