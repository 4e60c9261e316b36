"""API keys: hashed in the settings, scoped to subscriptions, presented as Bearer or x-functions-key."""

from __future__ import annotations

import pytest

from scheduler_core import auth
from scheduler_core.errors import AuthenticationError, ConfigurationError, ForbiddenError


def test_generated_keys_are_long_random_and_distinct() -> None:
    keys = {auth.generate_key() for _ in range(50)}
    assert len(keys) == 50
    assert all(k.startswith(auth.KEY_PREFIX) and len(k) >= 40 for k in keys)


def test_bearer_and_function_key_headers_authenticate() -> None:
    key = auth.generate_key()
    keys = auth.parse_keys(auth.hash_entry(key))
    assert auth.authenticate(keys, {"Authorization": f"Bearer {key}"}, "sub").subscriptions is None
    assert auth.authenticate(keys, {"x-functions-key": key}, "sub") is keys[0]


def test_function_key_header_wins_over_an_entra_bearer_token() -> None:
    key = auth.generate_key()
    keys = auth.parse_keys(auth.hash_entry(key))
    headers = {"Authorization": "Bearer eyJ0eXAiOiJKV1QiLCJhbGciOi.entra.token", "x-functions-key": key}
    assert auth.authenticate(keys, headers, "sub") is keys[0]


def test_missing_or_wrong_key_is_401() -> None:
    keys = auth.parse_keys(auth.hash_entry(auth.generate_key()))
    with pytest.raises(AuthenticationError, match="authentication required"):
        auth.authenticate(keys, {}, "sub")
    with pytest.raises(AuthenticationError, match="not valid"):
        auth.authenticate(keys, {"Authorization": "Bearer sks_wrong"}, "sub")
    with pytest.raises(AuthenticationError):
        auth.authenticate((), {"Authorization": "Bearer anything"}, "sub")


def test_scoped_key_is_refused_on_other_subscriptions() -> None:
    key = auth.generate_key()
    keys = auth.parse_keys(auth.hash_entry(key, ["Sub-A", "sub-b"]))
    assert auth.authenticate(keys, {"x-functions-key": key}, "sub-a") is keys[0]
    assert auth.authenticate(keys, {"x-functions-key": key}, "SUB-B") is keys[0]
    with pytest.raises(ForbiddenError, match="sub-c"):
        auth.authenticate(keys, {"x-functions-key": key}, "sub-c")


def test_several_keys_and_wildcards() -> None:
    first, second = auth.generate_key(), auth.generate_key()
    keys = auth.parse_keys(f"{auth.hash_entry(first, ['a'])} ; {auth.hash_entry(second)}@*;")
    assert len(keys) == 2
    assert auth.authenticate(keys, {"x-functions-key": second}, "anything").subscriptions is None


@pytest.mark.parametrize("entry", ["md5:abcd", "sha256:xyz", "sha256:" + "0" * 63, "plaintext-key"])
def test_malformed_entries_are_configuration_errors(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="SCHEDULER_API_KEYS"):
        auth.parse_keys(entry)
