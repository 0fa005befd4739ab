"""Kubernetes name and label rules, worded as k8s.io/apimachinery words them.

Each function returns a list of messages (empty = valid), like apimachinery's `Is...` helpers,
so callers can attach them to a field path.
"""

from __future__ import annotations

import re
from functools import lru_cache

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

# Anchored patterns, also used by the schemas (CRD `pattern`s are written the same way).
DNS1123_LABEL_PATTERN = "^" + DNS1123_LABEL_FMT + "$"
DNS1123_SUBDOMAIN_PATTERN = "^" + DNS1123_SUBDOMAIN_FMT + "$"

# fullmatch, not match: Python's `$` also matches before a trailing newline, Go's does not.
_DNS1123_LABEL = re.compile(DNS1123_LABEL_PATTERN)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_PATTERN)
_QUALIFIED_NAME = re.compile("^" + QUALIFIED_NAME_FMT + "$")
_LABEL_VALUE = re.compile("^" + LABEL_VALUE_FMT + "$")
_C_IDENTIFIER = re.compile("^" + C_IDENTIFIER_FMT + "$")

_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                      "or '-', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric character")
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                       "end with an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character")
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by "
                     "a string of alphanumeric characters or '_'")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


@lru_cache(maxsize=4096)
def dns1123_label(value: str) -> tuple[str, ...]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _DNS1123_LABEL.fullmatch(value):
        errs.append(_regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return tuple(errs)


@lru_cache(maxsize=4096)
def dns1123_subdomain(value: str) -> tuple[str, ...]:
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return tuple(errs)


@lru_cache(maxsize=4096)
def qualified_name(value: str) -> tuple[str, ...]:
    """apimachinery IsQualifiedName; label keys, annotation keys and resource names use it."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain(prefix))
    else:
        return (
            "a qualified name " + _regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if name and not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + _regex_error(_QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return tuple(errs)


label_key = qualified_name


@lru_cache(maxsize=4096)
def label_value(value: str) -> tuple[str, ...]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


def c_identifier(value: str) -> tuple[str, ...]:
    if _C_IDENTIFIER.fullmatch(value):
        return ()
    return (_regex_error(_C_IDENTIFIER_MSG, C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName"),)
