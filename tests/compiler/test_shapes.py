"""The one shape check (compiler/core/shapes.py): the value back when it has the shape, the
caller's error with the same words for every reader when it does not."""

from __future__ import annotations

import pytest

from compiler.core.shapes import checked, checked_or_empty


class ReaderError(Exception):
    pass


def test_a_value_of_the_shape_comes_back_itself():
    value = {"a": 1}
    assert checked(value, dict, "spec", ReaderError) is value
    assert checked_or_empty([1], list, "items", ReaderError) == [1]


@pytest.mark.parametrize("value, shape, message", [
    ([], dict, "spec.template must be a mapping"),
    ({}, list, "spec.template must be a list"),
    ("x", dict, "spec.template must be a mapping"),
    (None, list, "spec.template must be a list"),
])
def test_another_shape_raises_the_callers_error_with_the_one_wording(value, shape, message):
    with pytest.raises(ReaderError, match=f"^{message}$"):
        checked(value, shape, "spec.template", ReaderError)


def test_absent_is_empty_only_where_asked_and_the_wording_can_say_is_not():
    assert checked_or_empty(None, dict, "spec", ReaderError) == {}
    assert checked_or_empty(None, list, "items", ReaderError) == []
    with pytest.raises(ReaderError, match="^spec is not a mapping$"):
        checked_or_empty(3, dict, "spec", ReaderError, wording="is not")
