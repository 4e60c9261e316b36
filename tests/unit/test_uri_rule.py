"""The target URI rule (``scheduler_core/uris.py``) attacked with every spelling a parser differential allows,
against each decision that depends on the host: the write (400 naming the rule), the same-origin rule that
keeps stored secrets, the identity audience, and the outbound policy's reading of the host; and the
credentials of a URI's query, write-only like a ``sasToken``.

For every URI the rule accepts, the host it reads is the host ``requests`` connects to (its prepared URL,
read as its adapter reads it): that equality is what makes a decision at write hold at send."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import pytest

from scheduler_core.actions.http import connection_host, prepared_url
from scheduler_core.definitions import JobSpec, Wire, merge_patch, parse_job
from scheduler_core.errors import ValidationError
from scheduler_core.uris import HIDDEN, UriProblem, hide_credentials, origin, parse_target, restore_credentials

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
URI_FIELD = "properties.action.request.uri"

#: Spellings where parsers disagree about the host (or that are outside RFC 3986's authority), each refused.
REFUSED = {
    "backslash before @": "https://attacker.example\\@management.azure.com/x",
    "backslash in the path": "https://victim.example/a\\b",
    "backslash as a slash": "https:\\\\attacker.example/",
    "user info": "https://user:pw@victim.example/",
    "@ in user info": "https://a@b@victim.example/",
    "empty user info": "https://@victim.example/",
    "percent-encoded @": "https://attacker.example%40victim.example/",
    "percent-encoded slash": "https://victim.example%2F.attacker.example/",
    "percent-encoded dot": "https://management%2eazure.com/",
    "tab in the host": "https://victim.example\t.attacker.example/",
    "newline in the host": "https://victim\n.example/",
    "carriage return": "https://victim.example\r/",
    "space": "https://victim.example /",
    "NUL": "https://victim.example\x00.attacker/",
    "C1 control": "https://victim.example\x85/",
    "fullwidth letter (IDNA maps it)": "https://ｍanagement.azure.com/",
    "fullwidth backslash": "https://attacker.example＼@management.azure.com/",
    "non-ASCII name": "https://bücher.example/",
    "IPv6 zone": "https://[fe80::1%25eth0]/",
    "IPvFuture": "https://[v1.fe80::a]/",
    "unclosed bracket": "https://[::1/",
    "empty port": "https://victim.example:/",
    "port 0": "https://victim.example:0/",
    "port too large": "https://victim.example:65536/",
    "port with a sign": "https://victim.example:+443/",
    "no host": "https:///x",
    "one slash": "https:/victim.example/",
    "no slashes": "https:victim.example",
    "other scheme": "ftp://victim.example/",
    "label starting with -": "https://-victim.example/",
    "empty label": "https://victim..example/",
    "semicolon in the host": "https://attacker.example;@victim.example/",
}

#: Spellings the rule accepts, each with the host it reads.
ACCEPTED = {
    "https://management.azure.com/subscriptions?api-version=2020-01-01": "management.azure.com",
    "HTTPS://Management.Azure.COM:443/": "management.azure.com",
    "http://victim.example./a": "victim.example",
    "http://127.0.0.1:8080/a?b=c#d": "127.0.0.1",
    "http://[::1]:8080/": "::1",
    "http://[::ffff:127.0.0.1]/": str(ipaddress.IPv6Address("::ffff:127.0.0.1")),  # Python 3.13 spells it so
    "https://xn--bcher-kva.example/": "xn--bcher-kva.example",
    "https://host_with_underscore.example/": "host_with_underscore.example",
    "https://victim.example/path@with/at?x=@y": "victim.example",
    "https://victim.example?@attacker.example": "victim.example",
    "https://victim.example#@attacker.example": "victim.example",
    "http://2130706433/": "2130706433",
    "https://victim.example/{braces}?q=@{scheduledTime}": "victim.example",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_differential_spelling_is_refused_by_the_rule(name: str) -> None:
    with pytest.raises(UriProblem):
        parse_target(REFUSED[name])
    assert origin(REFUSED[name]) is None


@pytest.mark.parametrize("uri", sorted(ACCEPTED))
def test_an_accepted_uri_names_the_host_requests_connects_to(uri: str) -> None:
    target = parse_target(uri)
    assert target.host == ACCEPTED[uri]
    connected = connection_host(prepared_url(uri))
    # the host requests' adapter connects to, as the rule reads it (an IPv6 literal in its canonical form)
    assert parse_target(f"http://{connected if ':' not in connected else f'[{connected}]'}/").host == target.host
    assert (urlsplit(uri).hostname or "").rstrip(".") in (target.host, connected)


def test_the_rule_names_what_it_refuses() -> None:
    cases = {
        "https://attacker.example\\@management.azure.com/": "backslash",
        "https://user:pw@victim.example/": "user information",
        "https://management%2eazure.com/": "percent-encode",
        "https://ｍanagement.azure.com/": "xn--",
        "https://victim.example:0/": "port",
    }
    for uri, words in cases.items():
        with pytest.raises(UriProblem) as caught:
            parse_target(uri)
        assert words in str(caught.value), (uri, str(caught.value))
        assert "victim" not in str(caught.value) and "attacker" not in str(caught.value)  # never echoes the URI


# ---------------------------------------------------------------------------------------- at write


def parse(data: dict[str, Any], previous: JobSpec | None = None) -> JobSpec:
    return parse_job(data, previous=previous.definition if previous else None, now=NOW)


def http_job(uri: str, authentication: dict[str, Any] | None = None, **request: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"uri": uri, "method": "POST", **request}
    if authentication is not None:
        body["authentication"] = authentication
    return {"properties": {"action": {"type": "Http", "request": body}}}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_job_naming_a_refused_uri_is_a_400_on_the_uri(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse(http_job(REFUSED[name]))
    assert caught.value.path == URI_FIELD, caught.value.message


BASIC = {"type": "Basic", "username": "alice", "password": "VICTIM-PASSWORD"}
NEW_HOSTS = [
    "http://new-host.example\\@old-host.example/x",
    "http://new-host.example%5C@old-host.example/x",
    "http://new-host.example@old-host.example/x",
    "http://old-host.example@new-host.example/x",
    "http://new-host.example\t@old-host.example/x",
    "http://ｏld-host.example/x",
    "http://old-host.example:8080/x",
    "https://old-host.example/x",
]


@pytest.mark.parametrize("uri", NEW_HOSTS)
def test_a_stored_password_never_follows_a_patch_of_the_uri_to_another_spelling(uri: str) -> None:
    """A PATCH of only the URI: the stored password is kept only while scheme, host and port are the same; a
    differential spelling is refused outright, a new origin loses the password (400 naming it)."""
    stored = parse(http_job("http://old-host.example/x", BASIC))
    patched = merge_patch({"properties": stored.properties}, {"properties": {"action": {"request": {"uri": uri}}}})
    with pytest.raises(ValidationError) as caught:
        parse(patched, stored)
    assert caught.value.path in (URI_FIELD, "properties.action.request.authentication.password")


def test_the_password_is_kept_on_the_same_origin() -> None:
    stored = parse(http_job("http://old-host.example/x", BASIC))
    change = {"properties": {"action": {"request": {"uri": "http://OLD-host.example:80/y"}}}}
    kept = parse(merge_patch({"properties": stored.properties}, change), stored)
    assert kept.secrets["action.request.authentication.password"] == "VICTIM-PASSWORD"


@pytest.mark.parametrize(
    "uri", ["https://attacker.example\\@management.azure.com/x", "https://management.azure.com@attacker.example/x"]
)
def test_a_managed_identity_job_with_a_differential_uri_is_refused_at_write(uri: str) -> None:
    body = http_job(uri, {"type": "ManagedServiceIdentity", "audience": "https://management.azure.com/"})
    with pytest.raises(ValidationError) as caught:
        parse_job(body, now=NOW, wire=Wire.PREVIEW)
    assert caught.value.path == URI_FIELD


@pytest.mark.parametrize(
    "header",
    [
        "Transfer-Encoding",
        "content-length",
        "Host",
        "Connection",
        "Keep-Alive",
        "TE",
        "Trailer",
        "Upgrade",
        "Expect",
        "Proxy-Authorization",
        "proxy-connection",
    ],
)
def test_framing_and_hop_by_hop_headers_are_refused_at_write(header: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse(http_job("https://victim.example/", headers={header: "chunked"}))
    assert caught.value.path == f"properties.action.request.headers.{header}"
    assert "sender sets itself" in caught.value.message


# --------------------------------------------------------------------------------- URI credentials


SAS = "https://acct.queue.core.windows.net/q/messages?sv=2022-11-02&sp=a&sig=REAL%2Bsig%3D&se=2030-01-01"
LOGIC_APP = (
    "https://prod.logic.azure.com/workflows/1/triggers/manual/paths/invoke?api-version=1&sp=%2Fr&sv=1.0&sig=LA-SIG"
)
FUNCTION = "https://fn.azurewebsites.net/api/run?code=FUNCTION-KEY&Code=SECOND"


def test_credentials_in_the_query_are_hidden_and_the_rest_kept() -> None:
    shown, names = hide_credentials(SAS)
    assert shown == f"https://acct.queue.core.windows.net/q/messages?sv=2022-11-02&sp=a&sig={HIDDEN}&se=2030-01-01"
    assert names == ["sig"]
    shown, names = hide_credentials(FUNCTION)
    assert shown == f"https://fn.azurewebsites.net/api/run?code={HIDDEN}&Code={HIDDEN}" and names == ["code", "Code"]
    assert hide_credentials("https://x.example/?a=1&b=") == ("https://x.example/?a=1&b=", [])
    assert hide_credentials("https://x.example/#sig=frag") == ("https://x.example/#sig=frag", [])
    assert hide_credentials("https://x.example/?%73ig=encoded-name")[1] == ["%73ig"]


def test_hidden_credentials_are_restored_only_for_the_unchanged_uri() -> None:
    shown, _ = hide_credentials(FUNCTION)
    assert restore_credentials(shown, FUNCTION) == (FUNCTION, [])
    assert restore_credentials(shown, None) == (shown, ["code", "Code"])
    # any change to a URI holding *** asks for every hidden credential again
    assert restore_credentials(shown + "&sig=" + HIDDEN, FUNCTION)[1] == ["code", "Code", "sig"]
    assert restore_credentials(shown.replace("/api/run", "/api/other"), FUNCTION)[1] == ["code", "Code"]


STORED = "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&sig=VICTIM-SIG"


@pytest.mark.parametrize(
    "moved",
    [
        # another workflow on the same host, the victim's sig asked for under a spelling of its name
        "https://prod.logic.azure.com/workflows/attacker/triggers/manual/paths/invoke?sv=1.0&sig=***",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&sig=OWN&sig%20=***",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&SIG=***",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&sig%09=***",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&%73ig=***",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sig=***&sv=1.0",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&sig=***&echo=1",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0;sig=***",
        "https://prod.logic.azure.com/workflows/victim/triggers/manual/paths/invoke?sv=1.0&sig=***#x",
    ],
)
def test_a_stored_credential_never_moves_to_another_path_name_spelling_or_position(moved: str) -> None:
    """A Contributor who cannot read the stored ``sig`` must not be able to have it sent somewhere they can
    read it (another workflow on the shared host that echoes its query, another parameter name)."""
    spec = parse(http_job(STORED))
    change = {"properties": {"action": {"request": {"uri": moved}}}}
    with pytest.raises(ValidationError) as caught:
        parse(merge_patch({"properties": spec.properties}, change), spec)
    assert caught.value.path == URI_FIELD
    assert "VICTIM-SIG" not in caught.value.message


def test_a_semicolon_separated_credential_is_hidden_too() -> None:
    assert hide_credentials("https://x.example/?a=1;sig=S1;b=2&code=C")[0] == (
        f"https://x.example/?a=1;sig={HIDDEN};b=2&code={HIDDEN}"
    )


def test_a_job_answers_its_uri_credentials_hidden_and_keeps_them_on_write_back() -> None:
    spec = parse(http_job(LOGIC_APP))
    assert spec.properties["action"]["request"]["uri"] == LOGIC_APP.replace("LA-SIG", HIDDEN)
    assert spec.secrets["action.request.uri"] == LOGIC_APP
    assert "LA-SIG" not in str(spec.properties)
    back = parse({"properties": spec.properties}, spec)  # GET, then PUT what was read
    assert back.definition.action.main.uri == LOGIC_APP  # type: ignore[union-attr]
    assert back.secrets["action.request.uri"] == LOGIC_APP


def test_hidden_credentials_do_not_follow_the_uri_to_another_host() -> None:
    spec = parse(http_job(LOGIC_APP))
    moved = spec.properties["action"]["request"]["uri"].replace("prod.logic.azure.com", "attacker.example")
    change = {"properties": {"action": {"request": {"uri": moved}}}}
    with pytest.raises(ValidationError) as caught:
        parse(merge_patch({"properties": spec.properties}, change), spec)
    assert caught.value.path == URI_FIELD
    assert "'sig'" in caught.value.message and "write the credential again" in caught.value.message
    assert "LA-SIG" not in caught.value.message


def test_a_new_job_cannot_be_written_with_a_hidden_credential() -> None:
    with pytest.raises(ValidationError) as caught:
        parse(http_job(f"https://prod.logic.azure.com/x?sig={HIDDEN}"))
    assert caught.value.path == URI_FIELD
