"""compiler.core.yamlio: one scalar schema (YAML 1.2 core) for every reader, duplicate keys caught in
one place, and a writer whose strings read back as strings in every common reader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml as pyyaml
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.core import yamlio
from compiler.core.errors import InputError
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


# --- the block writer writes exactly the library's bytes ----------------------------------------

LOOKALIKES = [*TRICKY, "1.5", "-1", "+1", "0", "1e-3", "500m", "128Gi", ".5", "---", "...", "- a", "? a", "a:", "a #b",
              "a#b", "[x]", "{x}", "a, b", "x y", "x  y", "x ", "=", "_", "/a/b", "app.kubernetes.io/name", "'q'",
              '"q"', "%x", "@x", "`x", "!x", "&x", "*x", "|x", ">x", "tab\tx", "é", "日本", "😀", "a" * 130,
              "multi\nline", "trailing\n", "\nlead", "two\n\n", " sp\nx", "x\r\ny", "a\x85b", "\ufeffbom", "a\x00b"]
scalars = st.one_of(st.sampled_from(LOOKALIKES), st.text(max_size=12), st.integers().map(str),
                    st.floats(allow_nan=False).map(str), st.integers(), st.booleans(), st.none(),
                    st.floats(), st.just({}), st.just([]))
keys = st.one_of(st.sampled_from(LOOKALIKES), st.text(max_size=12), st.from_regex(r"[a-z][a-z0-9.\-/]{0,20}", fullmatch=True))
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(keys, inner, max_size=4)), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(documents)
def test_the_block_writer_writes_the_library_bytes(data):
    assert yamlio.dump(data) == yamlio._library_dump(data)


def test_manifests_take_the_block_writer_and_keep_their_bytes(tmp_path):
    """Every object of the example policy is written without the library, byte for byte as the
    library writes it (the property test above covers the rest of what the writer accepts)."""
    from compiler.stages.emit import canonical
    from compiler.stages.pipeline import PolicySource, compile_policy
    result = compile_policy(PolicySource.from_directory(Path(__file__).resolve().parents[2] / "policies"))
    objects = [canonical(o.obj) for artifacts in result.clusters.values() for o in artifacts.objects]
    fast = 0
    for obj in objects:
        try:
            text = yamlio._BlockWriter().document(obj)
        except yamlio._Unsupported:
            continue  # a ConfigMap with an embedded file: the library writes it
        assert text == yamlio._library_dump(obj)
        fast += 1
    assert fast >= len(objects) - 3


def test_a_container_that_appears_twice_is_left_to_the_library():
    shared = {"a": 1}
    data = {"x": shared, "y": shared, "z": []}
    assert yamlio.dump(data) == yamlio._library_dump(data)
    assert "&id001" in yamlio.dump(data)
