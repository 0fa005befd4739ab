"""The Jinja2 templates in `templates/`: every emitted object kind and the cluster report.

Objects are rendered to YAML text and parsed back into dicts, so each template is the single
readable description of what its kind looks like, while the verify and emit stages work on data.

Parsing is done once per layout, not once per object. Every value a YAML template writes goes
through the `tojson` filter (a test lints the templates); rendered with a filter that writes a
numbered placeholder instead, a template gives the object's layout: its own text, shaped by its
conditions and loops, with a slot wherever a value goes. Thousands of queues share a few layouts;
each is parsed once and the object is the parsed layout with its slots filled by the values, as
the YAML reader would read them back. Anything this cannot fill exactly (a placeholder inside a
longer string, two keys that turn out equal, a value whose JSON text is not plain) is rendered
and parsed as a whole.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import jinja2

from compiler.core import yamlio

# `compiler/templates` links to the repository's top-level templates/, so a checkout and an
# installed wheel (where the link's files are packaged as package data) find the same files.
TEMPLATES_DIR = Path(__file__).parent.parent / "templates"

# A private-use character: no template's own text holds it, and YAML reads it as itself.
_MARK = "\ue000"
_SLOT = re.compile(f"{_MARK}([0-9]+){_MARK}")
_SLOTS_VARIABLE = "kueue_policy_layout_slots"


def _environment(quote) -> jinja2.Environment:  # noqa: ANN001 - a Jinja filter
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    env.filters["tojson"] = quote
    return env


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    # JSON is YAML: every value a template writes goes through this filter, so a name such as
    # `no` or `0123` is a quoted string, whatever it looks like (a test lints the templates).
    return _environment(yamlio.flow)


@jinja2.pass_context
def _slot(context: jinja2.runtime.Context, value: Any) -> str:
    slots = context[_SLOTS_VARIABLE]
    slots.append(value)
    return f'"{_MARK}{len(slots) - 1}{_MARK}"'


@functools.lru_cache(maxsize=1)
def _layout_environment() -> jinja2.Environment:
    return _environment(_slot)


def render_text(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def render_object(template: str, **context: Any) -> dict[str, Any]:
    # Read back with the one YAML 1.2 reader, so a name such as `no` stays the string it was.
    slots: list[Any] = []
    layout = _layout_environment().get_template(template).render(**context, **{_SLOTS_VARIABLE: slots})
    parsed = _parsed_layout(layout)
    if parsed is not _NOT_A_LAYOUT:
        try:
            return _filled(parsed, slots)
        except _NotALayout:
            pass
    return yamlio.load(render_text(template, **context))


class _NotALayout(Exception):
    """The layout cannot give this object exactly: render and parse it whole."""


_NOT_A_LAYOUT = object()


@functools.lru_cache(maxsize=512)
def _parsed_layout(layout: str) -> Any:
    """The layout's data (never handed out itself: `_filled` copies it), or _NOT_A_LAYOUT."""
    try:
        return yamlio.load(layout)
    except yamlio.YamlError:
        return _NOT_A_LAYOUT


def _filled(node: Any, slots: list[Any]) -> Any:
    """A fresh copy of a parsed layout with every slot replaced by its value as read back."""
    kind = type(node)
    if kind is str:
        return _read_back(_slot_value(node, slots)) if _MARK in node else node
    if kind is dict:
        filled = {}
        for key, value in node.items():
            if _MARK in key:
                key = _slot_value(key, slots)
                if type(key) is not str or not _plain_string(key):
                    raise _NotALayout  # a key the reader would read differently, or refuse
            filled[key] = _filled(value, slots)
        if len(filled) != len(node):
            raise _NotALayout  # two keys that are one: the reader reports it
        return filled
    if kind is list:
        return [_filled(item, slots) for item in node]
    return node  # a number, boolean or null the template writes itself


def _slot_value(text: str, slots: list[Any]) -> Any:
    match = _SLOT.fullmatch(text)
    if match is None:
        raise _NotALayout  # a placeholder inside a longer string
    return slots[int(match.group(1))]


def _plain_string(text: str) -> bool:
    # Printable text (and the line breaks and tabs JSON escapes) reads back as itself from its
    # JSON form; other characters (controls, lone surrogates, private use such as the slot mark,
    # non-characters) are the YAML reader's to judge.
    return text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()


def _read_back(value: Any) -> Any:
    """`value` as the YAML reader reads `flow(value)` back, without parsing YAML."""
    kind = type(value)
    if kind is int or kind is bool or value is None:
        return value
    if kind is str:
        if not _plain_string(value):
            raise _NotALayout
        return value
    text = yamlio.flow(value)
    if not _plain_string(text) or "NaN" in text or "Infinity" in text:
        raise _NotALayout  # JSON's words for non-finite floats are strings to YAML
    loaded = yamlio.load_json(text)
    if loaded is None:
        raise _NotALayout  # keys that JSON writes alike (1 and "1"): the reader reports them
    return loaded
