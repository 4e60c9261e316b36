"""Route templates of the local host behave like the Functions host's routing."""

from __future__ import annotations

import pytest

from local_host.routing import Router, compile_route


def test_literal_segments_match_case_insensitively() -> None:
    router: Router[str] = Router()
    router.add("subscriptions/{sub}/resourceGroups/{rg}", "rg")
    assert router.match("/SUBSCRIPTIONS/s1/resourcegroups/My%20RG") == [("rg", {"sub": "s1", "rg": "My RG"})]
    assert router.match("/subscriptions/s1/other/x") == []


def test_specific_routes_win_over_catch_all_regardless_of_order() -> None:
    router: Router[str] = Router()
    router.add("{*path}", "catch-all")
    router.add("items/{id}", "item")
    router.add("items/{id}/{*rest}", "item-rest")
    assert [t for t, _ in router.match("items/7")] == ["item", "item-rest", "catch-all"]
    assert router.match("a/b:c~d/%7Efoo")[0] == ("catch-all", {"path": "a/b:c~d/~foo"})


def test_optional_and_constrained_parameters() -> None:
    router: Router[str] = Router()
    router.add("orders/{id:int}/{part?}", "order")
    assert router.match("orders/12") == [("order", {"id": "12"})]
    assert router.match("orders/12/lines") == [("order", {"id": "12", "part": "lines"})]
    assert router.match("orders/twelve") == []


def test_query_string_is_not_part_of_the_path() -> None:
    router: Router[str] = Router()
    router.add("x/{name}", "x")
    assert router.match("x/abc?api-version=1") == [("x", {"name": "abc"})]


def test_unsupported_template_is_rejected() -> None:
    with pytest.raises(ValueError, match="unsupported segment"):
        compile_route("a/b{c}d", "x")


def test_route_values_are_decoded_exactly_once() -> None:
    router: Router[str] = Router()
    router.add("x/{name}", "x")
    assert router.match("x/a%2541") == [("x", {"name": "a%41"})]
    assert router.match("x/payroll%3Fcopy?api-version=1") == [("x", {"name": "payroll?copy"})]
