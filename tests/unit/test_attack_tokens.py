"""Attacks on the Entra ID token check and the roles (issue 17), each kept as a test.

The tokens are forged by hand (header and payload written as raw JSON, then signed), so a token can break
exactly one rule while its signature stays valid: what is refused is refused for that rule, not for a bad
signature. The tenant is a real OpenID provider on loopback over TLS (``tests/support/oidc.py``), and so is
a second tenant and an attacker's web server, which record every request: a refusal must not make the API
call anything the token names (``jku``, ``x5u``, group overage sources).

Every refusal is a 401 (:class:`AuthenticationError`) or a 403 (:class:`ForbiddenError`), never anything else;
its message names the rule and carries no control character, and neither a token nor a key is logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from scheduler_core import auth
from scheduler_core.auth.entra import MAX_TOKEN_LENGTH
from scheduler_core.auth.roles import COLLECTION_READ, JOB_WRITE, Role
from scheduler_core.errors import AuthenticationError, ConfigurationError, ForbiddenError
from tests.support.oidc import Client, OidcProvider, SigningKey, oidc_provider
from tests.support.tls import HttpsPeer, TestCa, https_peer

SUB, OTHER_SUB = "sub1", "sub2"
SCOPE = f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/j"


# ------------------------------------------------------------------------------------------ forging


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def raw(value: Any) -> bytes:
    """JSON text of ``value`` (text given as ``str`` is taken as written: duplicate keys, ``1e400``)."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def forge(header: Any, payload: Any, key: SigningKey | ec.EllipticCurvePrivateKey | bytes | None, alg: str) -> str:
    """A compact JWS of ``header`` and ``payload`` (dicts, or raw JSON text) signed with ``key`` as ``alg``
    says: RS*/PS* with an RSA key, ES256 with an EC key, HS256 with bytes, nothing for ``None``."""
    signing_input = f"{b64(raw(header))}.{b64(raw(payload))}".encode()
    if key is None:
        signature = b""
    elif isinstance(key, bytes):
        signature = hmac.new(key, signing_input, hashlib.sha256).digest()
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    elif alg.startswith("PS"):
        signature = key.private.sign(
            signing_input, padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.DIGEST_LENGTH), hashes.SHA256()
        )
    else:
        digest = {"RS256": hashes.SHA256(), "RS384": hashes.SHA384(), "RS512": hashes.SHA512()}.get(
            alg.strip().upper(), hashes.SHA256()
        )
        signature = key.private.sign(signing_input, padding.PKCS1v15(), digest)
    return f"{signing_input.decode()}.{b64(signature)}"


@dataclass
class World:
    """The home tenant (whose tokens the gate accepts), another tenant, an attacker's https server, and the
    gate of a deployment with a Reader and a Contributor API key."""

    home: OidcProvider
    other: OidcProvider
    attacker: HttpsPeer
    gate: auth.Gate
    reader_key: str
    contributor_key: str

    def claims(self, client: Client, **changes: Any) -> dict[str, Any]:
        return {**self.home.claims_for(client, self.home.app_id_uri), **changes}

    def header(self, **changes: Any) -> dict[str, Any]:
        return {"alg": "RS256", "typ": "JWT", "kid": self.home.current.kid, **changes}

    def token(self, client: Client, **changes: Any) -> str:
        return forge(self.header(), self.claims(client, **changes), self.home.current, "RS256")

    def principal(self, token: str, **headers: str) -> auth.Principal:
        return self.gate.authenticate({"Authorization": f"Bearer {token}", **headers})

    def refusal(self, token: str) -> AuthenticationError:
        with pytest.raises(AuthenticationError) as caught:
            self.principal(token)
        return caught.value

    def role(self, principal: auth.Principal, subscription: str = SUB) -> Role | None:
        return principal.role_in(subscription)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    ca = TestCa()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_pem(tmp_path)))
    with (
        oidc_provider(ca) as home,
        oidc_provider(ca) as other,
        https_peer(
            ca, lambda seen: (200, "application/json", json.dumps({"keys": []}).encode()), require_client_cert=False
        ) as attacker,
    ):
        reader_key, contributor_key = auth.generate_key(), auth.generate_key()
        gate = auth.build_gate(
            f"{auth.hash_entry(reader_key, role=Role.READER)};{auth.hash_entry(contributor_key)}",
            authority=home.base_url,
            tenant=home.tenant,
            audiences=f"{home.app_id_uri};{home.api_client_id}",
            role_assignments=f"reader:group:{GROUP}@{SUB}",
        )
        yield World(home, other, attacker, gate, reader_key, contributor_key)


GROUP = "5c3d10c8-5517-430c-b0e7-6ef72ced7dbf"


def keys_fetched(world: World) -> int:
    return len(world.home.requests_to("/discovery/v2.0/keys"))


def readable(text: str) -> bool:
    """No control character (a log line or a header cannot be forged through it)."""
    return all(ch >= " " and ch != "\x7f" for ch in text)


# --------------------------------------------------------------------------------- keys and issuers


def test_a_good_forged_token_is_accepted_so_each_refusal_below_is_for_its_own_rule(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    principal = world.principal(world.token(admin))
    assert principal.object_id == admin.object_id and world.role(principal) == Role.CONTRIBUTOR


def test_a_key_of_another_tenant_is_not_a_key_of_this_one(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    claims = world.claims(admin)
    world.principal(world.token(admin))  # the home keys are fetched once
    stranger = world.other.current
    # the other tenant's own key id, and its key presented under the home key's id
    foreign = forge({"alg": "RS256", "kid": stranger.kid}, claims, stranger, "RS256")
    assert "is not one of the signing keys" in world.refusal(foreign).message
    masked = forge(world.header(), claims, stranger, "RS256")
    assert world.refusal(masked).message == "The access token has an invalid signature."
    # the other tenant's whole token (its issuer, signed by it, for the same app id uri)
    theirs = world.other.mint({**world.other.claims_for(admin, world.other.app_id_uri), "aud": world.home.app_id_uri})
    assert world.refusal(theirs).code == "InvalidAuthenticationToken"
    assert world.other.peer.seen == []  # the other tenant is never asked anything
    assert keys_fetched(world) == 1


@pytest.mark.parametrize(
    "spelling",
    [
        "v2 with a trailing slash",
        "v1 without its trailing slash",
        "upper-case tenant",
        "upper-case scheme",
        "http instead of https",
        "trailing space",
        "a query",
        "a lookalike dash",
        "a list holding the issuer",
    ],
)
def test_only_the_tenants_exact_issuers_are_accepted(world: World, spelling: str) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    v2, v1 = world.home.issuer_v2, world.home.issuer_v1
    issuer: Any = {
        "v2 with a trailing slash": v2 + "/",
        "v1 without its trailing slash": v1.rstrip("/"),
        "upper-case tenant": v2.replace(world.home.tenant, world.home.tenant.upper()),
        "upper-case scheme": "HTTPS://" + v2.removeprefix("https://"),
        "http instead of https": v2.replace("https://", "http://"),
        "trailing space": v2 + " ",
        "a query": v2 + "?x=1",
        "a lookalike dash": v2.replace("-", "\u2010", 1),
        "a list holding the issuer": [v2],
    }[spelling]
    refused = world.refusal(world.token(admin, iss=issuer))
    assert refused.code == "InvalidAuthenticationToken", spelling
    assert "issuer" in refused.message.lower() and readable(refused.message)
    for good in (v2, v1):  # both of the tenant's own issuers pass
        assert world.role(world.principal(world.token(admin, iss=good))) == Role.CONTRIBUTOR


# ------------------------------------------------------------------------------------------ audience


@pytest.mark.parametrize(
    "audience",
    [
        ["GOOD", "api://someone-else"],
        ["api://someone-else", "GOOD"],
        ["GOOD"],
        "API://SCHEDULER-TEST",
        "GOOD ",
        "GOOD/",
        "",
        None,
        7,
    ],
    ids=[
        "good and bad",
        "bad and good",
        "list of the good one",
        "other case",
        "space",
        "slash",
        "empty",
        "null",
        "number",
    ],
)
def test_the_audience_must_be_one_string_equal_to_an_allowed_audience(world: World, audience: Any) -> None:
    """A token for several audiences can be replayed by each of them: Entra ID issues one audience per access
    token, and only that is accepted."""
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    good = world.home.app_id_uri
    if isinstance(audience, list):
        audience = [good if item == "GOOD" else item for item in audience]
    elif isinstance(audience, str):
        audience = audience.replace("GOOD", good)
    refused = world.refusal(world.token(admin, aud=audience))
    assert refused.code in ("InvalidAuthenticationTokenAudience", "InvalidAuthenticationToken")
    assert readable(refused.message)
    assert world.role(world.principal(world.token(admin, aud=world.home.api_client_id))) == Role.CONTRIBUTOR


# ------------------------------------------------------------------------------------------ lifetime


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("exp", '"9999999999"'),
        ("nbf", '"0"'),
        ("exp", "true"),
        ("nbf", "false"),
        ("exp", "1e400"),
        ("exp", "NaN"),
        ("exp", "Infinity"),
        ("nbf", "-Infinity"),
        ("exp", "[9999999999]"),
        ("exp", "{}"),
        ("exp", "-1e400"),
        ("iat", '"now"'),
    ],
)
def test_lifetime_claims_must_be_finite_json_numbers(world: World, claim: str, value: str) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    claims = world.claims(admin)
    claims[claim] = "@@"
    payload = json.dumps(claims).replace('"@@"', value)
    refused = world.refusal(forge(world.header(), payload, world.home.current, "RS256"))
    assert refused.code in ("InvalidAuthenticationToken", "ExpiredAuthenticationToken"), (claim, value)
    assert readable(refused.message)


@pytest.mark.parametrize("exp", ["NOW+3600.75", "1e20", str(10**30)])
def test_a_fractional_or_far_expiry_is_a_number_and_is_judged_without_error(world: World, exp: str) -> None:
    """NumericDate may have a fraction; a far expiry is the tenant's choice (the signature is checked)."""
    admin = world.home.register("admin", roles=["Scheduler.Reader"])
    claims = world.claims(admin)
    claims["exp"] = "@@"
    value = str(time.time() + 3600.75) if exp.startswith("NOW") else exp
    payload = json.dumps(claims).replace('"@@"', value)
    assert world.role(world.principal(forge(world.header(), payload, world.home.current, "RS256"))) == Role.READER


def test_an_expired_token_with_a_fractional_expiry_is_expired(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Reader"])
    token = world.token(admin, exp=time.time() - 3600.5, nbf=time.time() - 7200)
    assert world.refusal(token).code == "ExpiredAuthenticationToken"


# -------------------------------------------------------------------------------------- algorithms


@pytest.mark.parametrize(
    "alg",
    ["RS256 ", " RS256", "rs256", "Rs256", "none", "None", "NONE", "", "HS256", "ES256", "PS256", "RS512", "RS384"],
)
def test_only_rs256_is_accepted_whatever_the_signature(world: World, alg: str) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    claims = world.claims(admin)
    key: SigningKey | ec.EllipticCurvePrivateKey | bytes | None
    if alg.strip().upper() == "HS256":
        key = world.home.current.public_pem()  # the classic confusion: HMAC keyed with the public key
    elif alg == "ES256":
        key = ec.generate_private_key(ec.SECP256R1())
    elif alg.strip().lower() in ("none", ""):
        key = None
    else:
        key = world.home.current  # PS256, RS384, RS512 and odd spellings of RS256: the tenant's real key
    token = forge(world.header(alg=alg), claims, key, alg)
    refused = world.refusal(token)
    assert refused.code == "InvalidAuthenticationToken" and "algorithm" in refused.message, alg
    assert readable(refused.message)


@pytest.mark.parametrize("alg", [["RS256"], {"name": "RS256"}, None, 256])
def test_an_algorithm_that_is_not_a_string_is_refused(world: World, alg: Any) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    token = forge(world.header(alg=alg), world.claims(admin), world.home.current, "RS256")
    assert world.refusal(token).code == "InvalidAuthenticationToken"


def test_a_key_id_that_is_not_a_string_or_is_hostile_is_refused_without_a_fetch(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    world.principal(world.token(admin))
    for kid in ({"x": 1}, ["k"], 5, "x" * 5000, "k\r\nX-Injected: yes", "../../../etc/passwd"):
        refused = world.refusal(forge(world.header(kid=kid), world.claims(admin), world.home.current, "RS256"))
        assert refused.code == "InvalidAuthenticationToken"
        assert readable(refused.message) and len(refused.message) < 600
    assert keys_fetched(world) == 1


# ---------------------------------------------------------------------------- keys named by the token


def test_keys_embedded_in_or_named_by_the_token_are_never_used_or_fetched(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    claims = world.claims(admin)
    world.principal(world.token(admin))
    mine = SigningKey.new("attacker-key")
    mine_jwk = mine.jwk()
    url = f"{world.attacker.base_url}/keys"
    for header, signer in [
        ({"alg": "RS256", "kid": mine.kid, "jku": url}, mine),
        ({"alg": "RS256", "kid": world.home.current.kid, "jku": url}, mine),
        ({"alg": "RS256", "kid": mine.kid, "x5u": url}, mine),
        ({"alg": "RS256", "kid": mine.kid, "jwk": mine_jwk}, mine),
        ({"alg": "RS256", "kid": world.home.current.kid, "jwk": mine_jwk}, mine),
        ({"alg": "RS256", "jwk": mine_jwk}, mine),
        ({"alg": "RS256", "kid": world.home.current.kid, "x5c": ["MIIB"], "x5t": "abc"}, mine),
    ]:
        refused = world.refusal(forge(header, claims, signer, "RS256"))
        assert refused.code == "InvalidAuthenticationToken", header
    assert world.attacker.seen == []
    assert keys_fetched(world) == 1


def test_a_jwk_header_holding_the_tenants_own_public_key_does_not_replace_the_signature_check(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    home_jwk = world.home.current.jwk()
    mine = SigningKey.new()
    token = forge(world.header(jwk=home_jwk), world.claims(admin), mine, "RS256")
    assert world.refusal(token).message == "The access token has an invalid signature."


@pytest.mark.parametrize(
    "extra",
    [
        {"crit": ["exp"]},
        {"crit": ["b64"], "b64": False},
        {"crit": ["b64"]},
        {"crit": []},
        {"crit": "b64"},
        {"crit": ["http://example.com/x"], "http://example.com/x": True},
    ],
    ids=["exp", "b64 false", "b64", "empty", "string", "private"],
)
def test_critical_header_extensions_are_refused(world: World, extra: dict[str, Any]) -> None:
    """Entra ID uses no JWS extension; a token that says the reader must understand one is refused."""
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    token = forge(world.header(**extra), world.claims(admin), world.home.current, "RS256")
    refused = world.refusal(token)
    assert refused.code == "InvalidAuthenticationToken"


# ------------------------------------------------------------------------------------ serializations


def test_other_jws_serializations_are_not_tokens(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    good = world.token(admin)
    head, payload, signature = good.split(".")
    rogue = forge(world.header(), world.claims(admin, roles=["Scheduler.Contributor"]), SigningKey.new(), "RS256")
    general = json.dumps(
        {
            "payload": payload,
            "signatures": [
                {"protected": head, "signature": signature},
                {"protected": rogue.split(".")[0], "signature": rogue.split(".")[2]},
            ],
        }
    )
    flattened = json.dumps({"payload": payload, "protected": head, "signature": signature})
    for value in [
        general,
        flattened,
        base64.urlsafe_b64encode(general.encode()).decode(),
        f"{good}.{signature}",  # a fourth part
        f"{head}.{payload}.{signature}.x.y",  # the shape of a JWE
        f"{head}..{signature}",  # a detached payload
        f"{head}.{payload}",
        f"{head}.{payload}.",  # signature stripped
        f"{head} .{payload}.{signature}",
        good.replace(".", ".\n", 1),
    ]:
        with pytest.raises(AuthenticationError):
            world.principal(value)


def test_duplicate_members_in_a_header_or_payload_are_refused(world: World) -> None:
    """Entra ID never repeats a member; JSON parsers disagree on which copy counts (the first, the last, or
    an error), so a token that repeats one could mean one thing to a front (Easy Auth) and another here."""
    admin = world.home.register("admin", roles=["Scheduler.Reader"])
    claims = world.claims(admin)
    head = json.dumps(world.header())
    for header, payload in [
        ('{"alg": "none", ' + head[1:], json.dumps(claims)),
        (head, json.dumps(claims)[:-1] + ', "roles": ["Scheduler.Contributor"]}'),
        (head, json.dumps(claims)[:-1] + f', "aud": "{world.home.app_id_uri}"}}'),
        (head, json.dumps(claims)[:-1] + f', "oid": "{uuid.uuid4()}"}}'),
    ]:
        refused = world.refusal(forge(header, payload, world.home.current, "RS256"))
        assert refused.code == "InvalidAuthenticationToken"
        assert "more than once" in refused.message


def test_a_header_or_payload_that_is_not_a_json_object_is_refused(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Reader"])
    claims = json.dumps(world.claims(admin))
    head = json.dumps(world.header())
    cases = [("[]", claims), (head, "[]"), (head, "null"), (head, '"text"'), (head, "{"), ("\ufeff" + head, claims)]
    for header, payload in cases:
        # a header that does not start '{"' is not shaped like a token at all: it is judged as an API key
        refused = world.refusal(forge(header, payload, world.home.current, "RS256"))
        assert refused.code in ("InvalidAuthenticationToken", "AuthenticationFailed")


def test_an_enormous_token_is_refused_before_any_work(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    padding_claim = "p" * MAX_TOKEN_LENGTH
    for token in [world.token(admin, pad=padding_claim), "eyJ" + "A" * (1 << 20) + ".e.e"]:
        refused = world.refusal(token)
        assert refused.code == "InvalidAuthenticationToken" and "longer than" in refused.message
    assert keys_fetched(world) == 0  # refused before the keys were even needed


# ------------------------------------------------------------------------------------------ claims


@pytest.mark.parametrize(
    "roles",
    [
        "Scheduler.Contributor",
        ["scheduler.contributor"],
        ["SCHEDULER.CONTRIBUTOR"],
        ["Scheduler.Contributor "],
        ["Scheduler.Contributor\u200b"],
        [["Scheduler.Contributor"]],
        {"Scheduler.Contributor": True},
        None,
    ],
    ids=["a string", "lower case", "upper case", "trailing space", "zero-width space", "nested list", "object", "null"],
)
def test_app_roles_count_only_as_exact_values_in_a_list(world: World, roles: Any) -> None:
    someone = world.home.register("someone")
    principal = world.principal(world.token(someone, roles=roles))
    assert world.role(principal) is None
    with pytest.raises(ForbiddenError):
        world.gate.authorize(principal, COLLECTION_READ, SUB, f"/subscriptions/{SUB}")


def test_a_list_of_roles_with_junk_items_keeps_its_exact_values(world: World) -> None:
    someone = world.home.register("someone")
    principal = world.principal(world.token(someone, roles=[{"x": 1}, 5, None, "Scheduler.Reader"]))
    assert world.role(principal) == Role.READER


def test_group_overage_is_not_resolved_and_its_source_is_never_called(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """A user in too many groups gets ``_claim_names`` pointing at a source instead of ``groups``: the API
    never calls it (it is named by the token), grants nothing through groups, and says why in the log."""
    caplog.set_level(logging.DEBUG, logger="scheduler_core")
    member = world.home.register("member")
    token = world.token(
        member,
        _claim_names={"groups": "src1"},
        _claim_sources={"src1": {"endpoint": f"{world.attacker.base_url}/users/x/getMemberObjects"}},
    )
    principal = world.principal(token)
    assert world.role(principal) is None
    with pytest.raises(ForbiddenError):
        world.gate.authorize(principal, COLLECTION_READ, SUB, f"/subscriptions/{SUB}")
    assert world.attacker.seen == []
    assert "group overage" in caplog.text
    # the same member with its group in the token is a Reader there (the assignment is right)
    assert world.role(world.principal(world.token(member, groups=[GROUP]))) == Role.READER


@pytest.mark.parametrize("oid", ["", " ", "not-a-guid", 42, True, ["x"], {"id": GROUP}, GROUP + "\n"])
def test_the_object_id_must_be_a_guid(world: World, oid: Any) -> None:
    someone = world.home.register("someone", roles=["Scheduler.Reader"])
    refused = world.refusal(world.token(someone, oid=oid))
    assert refused.code == "InvalidAuthenticationToken" and "oid" in refused.message
    assert readable(refused.message)


def test_an_upper_case_object_id_matches_its_assignment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = TestCa()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.write_pem(tmp_path)))
    with oidc_provider(ca) as home:
        ops = home.register("ops")
        gate = auth.build_gate(
            "",
            authority=home.base_url,
            tenant=home.tenant,
            audiences=f"{home.app_id_uri};{home.api_client_id}",
            role_assignments=f"contributor:oid:{ops.object_id}@{SUB}",
        )
        token = home.mint({**home.claims_for(ops, home.app_id_uri), "oid": ops.object_id.upper()})
        principal = gate.authenticate({"Authorization": f"Bearer {token}"})
        assert principal.role_in(SUB) == Role.CONTRIBUTOR and principal.role_in(OTHER_SUB) is None


# ------------------------------------------------------------------------------------- assignments


@pytest.mark.parametrize(
    "entry",
    [
        "contributor:approle:Scheduler.Contributor@sub1",
        "reader:approle:Scheduler.Reader@sub1",
        "reader:approle:Scheduler.Contributor@sub1",
        "reader:approle:scheduler.contributor@sub1",
    ],
)
def test_an_assignment_cannot_seem_to_narrow_a_built_in_app_role(entry: str) -> None:
    """``Scheduler.Contributor`` grants Contributor on every subscription by itself; an entry that names it
    with a subscription looks like a narrowing and is not one, so the setting is refused, saying so."""
    with pytest.raises(ConfigurationError, match="every subscription"):
        auth.parse_assignments(entry)


def test_a_contributor_of_one_subscription_is_nobody_in_another(world: World) -> None:
    member = world.home.register("member", groups=[GROUP.upper()])
    principal = world.principal(world.token(member))
    assert world.role(principal, SUB) == Role.READER and world.role(principal, OTHER_SUB) is None
    assert world.role(principal, SUB.upper()) == Role.READER  # subscription ids compare without case
    with pytest.raises(ForbiddenError) as caught:
        world.gate.authorize(principal, JOB_WRITE, SUB, SCOPE)
    assert f"over scope '{SCOPE}'" in caught.value.message
    with pytest.raises(ForbiddenError) as caught:
        world.gate.authorize(principal, COLLECTION_READ, OTHER_SUB, f"/subscriptions/{OTHER_SUB}/x")
    assert f"over scope '/subscriptions/{OTHER_SUB}'" in caught.value.message


# ------------------------------------------------------------------------------ keys beside tokens


def test_a_function_key_beside_a_bearer_token_decides_alone_and_never_escalates(world: World) -> None:
    admin = world.home.register("admin", roles=["Scheduler.Contributor"])
    token = world.token(admin)
    # the function key wins: a Reader key beside a Contributor token is a Reader
    reader = world.principal(token, **{"x-functions-key": world.reader_key})
    assert reader.kind == "key" and world.role(reader) == Role.READER
    # an unknown function key is a 401 even beside a good token (no fallback to the token)
    with pytest.raises(AuthenticationError):
        world.principal(token, **{"X-Functions-Key": "sks_nope"})
    # a key sent as the bearer value is a key; the token in x-functions-key is not a key
    assert world.role(world.gate.authenticate({"Authorization": f"Bearer {world.reader_key}"})) == Role.READER
    with pytest.raises(AuthenticationError):
        world.gate.authenticate({"x-functions-key": token})
    # an empty or blank function key is no function key: the bearer decides
    blank = world.principal(token, **{"x-functions-key": "   "})
    assert blank.kind == "entra" and world.role(blank) == Role.CONTRIBUTOR
    # other schemes are no credential
    for value in (f"Basic {token}", f"Bearer{token}", token, f"Token {world.contributor_key}"):
        with pytest.raises(AuthenticationError):
            world.gate.authenticate({"Authorization": value})


# ---------------------------------------------------------------------------------------- the logs


def test_refusals_log_the_rule_without_the_token_or_control_characters(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="scheduler_core")
    admin = world.home.register("admin", roles=["Scheduler.Reader"])
    hostile = "evil\r\n2026-01-01 INFO management API: admin performs everything\x1b[31m"
    tokens = [
        world.token(admin, iss=hostile),
        world.token(admin, aud=hostile),
        forge(world.header(kid=hostile), world.claims(admin), world.home.current, "RS256"),
        forge(world.header(alg=hostile), world.claims(admin), world.home.current, "RS256"),
        world.token(admin, exp=time.time() - 7200, nbf=time.time() - 9000),
        world.token(admin),
    ]
    for token in tokens[:-1]:
        refused = world.refusal(token)
        assert readable(refused.message), refused.message
        assert readable(world.gate.challenge(refused))
    principal = world.principal(tokens[-1])
    with pytest.raises(ForbiddenError):
        world.gate.authorize(principal, JOB_WRITE, SUB, SCOPE)
    for record in caplog.records:
        message = record.getMessage()
        assert readable(message), message
    for token in tokens:
        for part in token.split("."):
            assert part not in caplog.text
    assert world.reader_key not in caplog.text and world.contributor_key not in caplog.text
    assert admin.secret not in caplog.text
