"""Templates are parsed once per layout (issue 11): an object rendered through a parsed layout
with its slots filled is exactly the object rendered and parsed whole, for every template, for
names YAML would read as something else, and for the values a layout cannot carry (they are
parsed whole)."""

from __future__ import annotations

import pytest

from compiler.core import templating, yamlio
from compiler.core.templating import render_object, render_text
from test_names_that_look_like_values import TRICKY, YAML_TEMPLATES, _context

AWKWARD = ["multi\nline\n", "tab\there", "a\x85b", "\ufeffbom", "a\u2028b", "emoji 😀", "q\"uote", "back\\slash",
           "\ue000" + "0" + "\ue000", "x: y", "- z", ""]


def _whole(template: str, context: dict) -> object:
    return yamlio.load(render_text(template, **context))


@pytest.mark.parametrize("template", YAML_TEMPLATES)
def test_a_filled_layout_is_the_object_parsed_whole(template):
    for name in TRICKY + AWKWARD:
        context = _context(name)
        assert render_object(template, **context) == _whole(template, context), (template, name)


def test_objects_of_one_layout_share_its_parse_and_nothing_else():
    templating._parsed_layout.cache_clear()
    first = render_object("kueue/localqueue.yaml.j2", **_context("alpha"))
    second = render_object("kueue/localqueue.yaml.j2", **_context("beta"))
    assert templating._parsed_layout.cache_info().misses == 1  # one layout, parsed once
    assert first["metadata"]["name"] == "alpha" and second["metadata"]["name"] == "beta"
    first["metadata"]["labels"]["alpha"] = "changed"
    third = render_object("kueue/localqueue.yaml.j2", **_context("alpha"))
    assert third["metadata"]["labels"] == {"alpha": "alpha"}


@pytest.mark.parametrize("labels", [{1: "a", "1": "b"}, {"x": float("nan")}, {"x": 1.5, "y": [1, None, True]}])
def test_values_a_layout_cannot_carry_are_parsed_whole(labels):
    context = {**_context("alpha"), "labels": labels}
    try:
        expected = _whole("kueue/localqueue.yaml.j2", context)
    except yamlio.YamlError as error:  # the reader refuses it: so does render_object
        with pytest.raises(yamlio.YamlError, match=str(error.message)):
            render_object("kueue/localqueue.yaml.j2", **context)
        return
    assert render_object("kueue/localqueue.yaml.j2", **context) == expected


def test_a_slot_key_equal_to_another_key_is_refused_as_the_reader_refuses_it():
    clash = {**_context("alpha"), "cohort_field": "queueingStrategy"}
    with pytest.raises(yamlio.YamlError) as whole:
        _whole("kueue/clusterqueue.yaml.j2", clash)
    with pytest.raises(yamlio.YamlError) as layout:
        render_object("kueue/clusterqueue.yaml.j2", **clash)
    assert (layout.value.message, layout.value.line) == (whole.value.message, whole.value.line)
