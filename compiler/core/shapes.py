"""The one shape check for input read from YAML or JSON: "`what` must be a mapping / a list".

Manifests, exports and device data arrive as plain data; a field that should hold a mapping or
a list may hold anything. Each reader raises its own error (a job the engine cannot use, a pod
spec problem, bad device data), so the error's type is the caller's; the check and its words
are here, the same for all."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T", dict, list)

SHAPE_WORDS = {dict: "a mapping", list: "a list"}


def checked(value: object, shape: type[T], what: str, error: Callable[[str], Exception],
            *, wording: str = "must be") -> T:
    """`value` when it is a `shape` (dict or list); otherwise raises `error("<what> must be a
    mapping")` (`wording` "is not" for readers whose messages say "<what> is not a mapping")."""
    if not isinstance(value, shape):
        raise error(f"{what} {wording} {SHAPE_WORDS[shape]}")
    return value


def checked_or_empty(value: object, shape: type[T], what: str, error: Callable[[str], Exception],
                     *, wording: str = "must be") -> T:
    """Like `checked`, with None (an absent field) read as an empty mapping or list."""
    if value is None:
        return shape()
    return checked(value, shape, what, error, wording=wording)
