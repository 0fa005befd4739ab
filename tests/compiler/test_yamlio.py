"""compiler.yamlio: one scalar schema (YAML 1.2 core) for every reader, duplicate keys caught in
one place, and a writer whose strings read back as strings in every common reader."""

from __future__ import annotations

import pytest
import yaml as pyyaml

from compiler import yamlio
from compiler.errors import InputError
from compiler.evaluator.reader import parse_text


@pytest.mark.parametrize("text,value", [
    ("no", "no"), ("on", "on"), ("yes", "yes"), ("off", "off"), ("y", "y"), ("0123", 123), ("010", 10),
    ("0x1f", 31), ("0o17", 15), ("1e3", 1000.0), ("1.30", 1.3), ("~", None), ("null", None), ("", None),
    ("true", True), ("FALSE", False), ("2024-01-01", "2024-01-01"), ("1_000", "1_000"), ("1:20", "1:20"),
    ("'no'", "no"), ('"0123"', "0123"), ("!!str 1", "1"), ("!!int '7'", 7), (".inf", float("inf"))])
def test_one_scalar_schema(text, value):
    assert yamlio.load(f"k: {text}\n") == {"k": value}


def test_keys_are_strings_as_written_and_merge_keys_merge():
    assert yamlio.load("1: a\ntrue: b\n0x1f: c\nno: d\n") == {"1": "a", "true": "b", "0x1f": "c", "no": "d"}
    assert yamlio.load("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n")["use"] == {"x": 1, "y": 3}


@pytest.mark.parametrize("text,line,column,message", [
    ("a: 1\nb:\n  c: 2\n  c: 3\n", 4, 3, "duplicate key 'c'"),
    ("a: !!binary aGk=\n", 1, 4, "tag:yaml.org,2002:binary"),
    ("a: !custom x\n", 1, 4, "!custom"),
    ("a: !!int x\n", 1, 4, "not an integer"),
    ("a: !!bool yes\n", 1, 4, "not a boolean"),
    ("? [a]\n: 1\n", 1, 3, "mapping key must be a plain value"),
    ("a: [1\n", 2, 1, ""),
    ("a: " + "9" * 5000 + "\n", 1, 4, "not an integer"),
])
def test_what_is_refused_is_refused_with_its_place(text, line, column, message):
    with pytest.raises(yamlio.YamlError) as caught:
        yamlio.load(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert message in caught.value.message


def test_duplicate_keys_in_a_kubectl_export_are_found_in_yaml_and_json_alike():
    with pytest.raises(InputError) as caught:
        parse_text("kind: List\nitems:\n- metadata: {name: a}\n  metadata: {name: b}\n", "x.yaml")
    [d] = caught.value.diagnostics
    assert "duplicate mapping key 'metadata'" in d.message and (d.position.line, d.position.column) == (4, 3)
    # JSON's fast path leaves a repeated key to the YAML reader, which knows its line.
    with pytest.raises(InputError) as caught:
        parse_text('{"kind": "List",\n "items": [{"a": 1,\n  "a": 2}]}', "x.json")
    [d] = caught.value.diagnostics
    assert "duplicate mapping key 'a'" in d.message and d.position.line == 3


def test_kubectl_exports_keep_the_line_of_every_item():
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: A\n  metadata: {name: no}\n- kind: B\n"
    assert [(doc["kind"], where.line) for doc, where in parse_text(text, "x.yaml")] == [("A", 4), ("B", 6)]
    assert parse_text(text, "x.yaml")[0][0]["metadata"]["name"] == "no"
    json_text = '{"kind": "List", "items": [{"kind": "A"}, {"kind": "B"}]}'
    assert [doc["kind"] for doc, _ in parse_text(json_text, "x.json")] == ["A", "B"]


TRICKY = ["no", "yes", "on", "off", "y", "n", "Y", "null", "~", "true", "0123", "1e3", "0x1f", "0o17", "1_000",
          "2024-01-01", "1:20", ".inf", "<<", "=", "-", "", " lead", "a: b", "# c", "multi\nline\n"]


def test_the_writer_quotes_what_any_reader_would_take_for_something_else():
    data = {"names": TRICKY, "labels": {name: name for name in TRICKY}, "n": 1, "f": 1.5, "b": True, "z": None}
    text = yamlio.dump(data)
    assert pyyaml.safe_load(text) == data  # YAML 1.1, as PyYAML and older tools read it
    assert yamlio.load(text) == data      # YAML 1.2
    for plain in ("y", "n", "Y", "1e3", "0o17"):  # Go's yaml.v2 (kubectl, Argo CD) reads these as non-strings
        assert f"- '{plain}'\n" in text
    assert yamlio.dump(data) == text


def test_the_writer_keeps_order_and_never_folds():
    long = "x" * 500
    assert yamlio.dump({"b": 1, "a": [long, {"c": "multi\nline\n"}]}) == (
        f"b: 1\na:\n- {long}\n- c: |\n    multi\n    line\n")


@pytest.mark.parametrize("value", ["no", "0123", "a\x7fb", "a\x85b", "a\u2028b\u2029", "tab\there", "nl\nx", 'q"uote',
                                   "back\\slash", "emoji 😀", "\ufeffbom", "a\x00b", {"no": ["y", 1, None, True]}])
def test_flow_text_reads_back_as_exactly_the_value_everywhere(value):
    text = yamlio.flow(value)
    assert "\n" not in text
    assert yamlio.load(f"k: {text}\n") == {"k": value}
    assert pyyaml.safe_load(f"k: {text}\n") == {"k": value}
