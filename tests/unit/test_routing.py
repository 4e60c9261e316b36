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


def test_length_constraints_are_checked() -> None:
    router: Router[str] = Router()
    router.add("codes/{code:length(3)}", "code")
    router.add("names/{name:minlength(2)}/{tag:maxlength(4)?}", "name")
    router.add("pairs/{pair:length(1,2)}", "pair")
    assert router.match("codes/abc") == [("code", {"code": "abc"})]
    assert router.match("codes/ab") == router.match("codes/abcd") == []
    assert router.match("names/al") == [("name", {"name": "al"})]
    assert router.match("names/al/four") == [("name", {"name": "al", "tag": "four"})]
    assert router.match("names/a") == router.match("names/al/fives") == []
    assert [t for t, _ in router.match("pairs/x")] == [t for t, _ in router.match("pairs/xy")] == ["pair"]
    assert router.match("pairs/xyz") == []
    with pytest.raises(ValueError, match="maxlength"):
        compile_route("{x:maxlength(a)}", "x")


def test_an_optional_parameter_of_no_length_owns_the_root_alone() -> None:
    """``{ignored:maxlength(0)?}`` (scheduler_core.home.ROUTE): the empty path matches (an absent optional
    parameter is not checked); no segment can, so every other path stays with its own route or none."""
    router: Router[str] = Router()
    router.add("{ignored:maxlength(0)?}", "home")
    router.add("dashboard/{*path}", "dashboard")
    router.add("health", "health")
    assert router.match("/") == [("home", {})]
    assert router.match("/?next=1") == [("home", {})]
    assert router.match("/health") == [("health", {})]
    assert router.match("/dashboard") == [("dashboard", {})]
    for path in ("/x", "/index.html", "/%20", "/ignored", "/a/b"):
        assert router.match(path) == [], path
