"""$top and $skip are the OpenAPI document's integers: ASCII digits, nothing Python's int() would also read."""

from __future__ import annotations

import pytest

from scheduler_core.api.paging import Paging, parse_paging
from scheduler_core.errors import ValidationError


@pytest.mark.parametrize("name", ["$top", "$skip"])
@pytest.mark.parametrize("value", ["", " 5", "5 ", "1_0", "\uff15", "\u0663", "0x10", "5.0", "+5", "9" * 40])
def test_paging_parameters_that_are_not_integers_are_a_400_naming_them(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_paging({name: value})
    assert caught.value.status == 400 and caught.value.path == name


def test_paging_integers_within_bounds_are_read() -> None:
    assert parse_paging({"$top": "100", "$skip": "0"}) == Paging(100, 0)
    assert parse_paging({}) == Paging(None, 0)
    for query in ({"$top": "0"}, {"$top": "101"}, {"$skip": "-1"}):
        with pytest.raises(ValidationError):
            parse_paging(query)
