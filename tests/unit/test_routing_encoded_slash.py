"""Route values as the Functions host gives them: ASP.NET Core decodes the path once before routing, except
``%2F``, which stays encoded (so it never splits a segment), and escapes that are not valid UTF-8, which stay
as sent (``UrlDecoder.DecodeInPlace``)."""

from __future__ import annotations

import pytest

from local_host.routing import Router, decode_path


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("a%2Fb", "a%2Fb"),
        ("a%2fb", "a%2fb"),
        ("a%252F", "a%2F"),  # %25 is decoded, once
        ("My%20RG", "My RG"),
        ("%C3%A9t%C3%A9", "été"),
        ("%F0%9F%98%80", "\U0001f600"),
        ("a+b", "a+b"),
        ("%FF", "%FF"),  # not UTF-8: kept
        ("%E6%97", "%E6%97"),  # a sequence cut short
        ("%C0%AF", "%C0%AF"),  # an overlong '/'
        ("%ED%A0%80", "%ED%A0%80"),  # a surrogate
        ("%F4%90%80%80", "%F4%90%80%80"),  # beyond U+10FFFF
        ("%C3%41", "%C3A"),  # a bad continuation is read anew
        ("100%", "100%"),
        ("%zz%4", "%zz%4"),
    ],
)
def test_the_path_is_decoded_as_kestrel_decodes_it(raw: str, decoded: str) -> None:
    assert decode_path(raw) == decoded


def test_an_encoded_slash_stays_encoded_in_the_route_value_and_splits_no_segment() -> None:
    router: Router[str] = Router()
    router.add("x/{name}", "one")
    router.add("x/{name}/run", "run")
    router.add("all/{*rest}", "rest")
    assert router.match("x/payroll%2Frun") == [("one", {"name": "payroll%2Frun"})]
    assert router.match("x/payroll%2frun/run") == [("run", {"name": "payroll%2frun"})]
    assert router.match("all/a%2Fb/c%20d") == [("rest", {"rest": "a%2Fb/c d"})]


def test_escapes_that_are_not_utf8_stay_as_sent_in_the_route_value() -> None:
    router: Router[str] = Router()
    router.add("x/{name}", "x")
    assert router.match("x/a%FFb") == [("x", {"name": "a%FFb"})]


def test_literal_segments_match_once_decoded() -> None:
    router: Router[str] = Router()
    router.add("items/{id}", "item")
    assert router.match("%69tems/7") == [("item", {"id": "7"})]


def test_a_decoded_line_break_stays_in_the_route_value() -> None:
    # The path is matched once decoded: a %0A must neither end a catch-all early nor be dropped before the
    # end of the path ("jc%0A" is not "jc").
    router: Router[str] = Router()
    router.add("subscriptions/{*resource}", "api")
    router.add("x/{name}", "x")
    assert router.match("subscriptions/s/jc%0A") == [("api", {"resource": "s/jc\n"})]
    assert router.match("x/a%0A") == [("x", {"name": "a\n"})]
    assert router.match("x/a%0D%0Ab") == [("x", {"name": "a\r\nb"})]
