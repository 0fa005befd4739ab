"""The policy loader: one YAML 1.2 reader for the data, ruamel's round-trip nodes for positions."""

from __future__ import annotations

import pytest
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from compiler import yamlio
from compiler.errors import DiagnosticSink
from compiler.load import PolicySourceFile, discover_files, load_file
from kp_testing import REPO_ROOT

EDGE_CASES = """\
a: on
b: no
c: 010
d: 0x1F
e: 0o17
f: 1.30
g: ~
h: null
i: TRUE
j: 2024-01-01
k: "8"
l: [1, two, 3.5]
m: {n: {o: p}}
q: .inf
r: +12
s: 1_000
"""


def _ruamel_data(node):
    if isinstance(node, CommentedMap):
        return {str(k): _ruamel_data(v) for k, v in node.items()}
    if isinstance(node, CommentedSeq):
        return [_ruamel_data(v) for v in node]
    for plain in (bool, int, float, str):
        if isinstance(node, plain):
            return plain(node)
    return node


def _load(text: str) -> list:
    sink = DiagnosticSink()
    documents = load_file(PolicySourceFile("x.yaml", text.encode()), sink)
    assert not sink.items
    return [d.data for d in documents]


def test_scalars_are_read_as_yaml_1_2_core():
    [data] = _load(EDGE_CASES)
    assert data == {"a": "on", "b": "no", "c": 10, "d": 31, "e": 15, "f": 1.3, "g": None, "h": None, "i": True,
                    # YAML 1.1-isms are strings in the core schema (ruamel would read a date and 1000).
                    "j": "2024-01-01", "k": "8", "l": [1, "two", 3.5], "m": {"n": {"o": "p"}}, "q": float("inf"),
                    "r": 12, "s": "1_000"}
    # Where the two readers share a schema, they agree: positions from one fit the data of the other.
    common = "\n".join(line for line in EDGE_CASES.splitlines() if not line.startswith(("j:", "s:"))) + "\n"
    assert _load(common) == [_ruamel_data(n) for n in yamlio.round_trip_nodes(common, duplicates_are_errors=True)]


@pytest.mark.parametrize("path", sorted(p.display_path for p in discover_files(REPO_ROOT / "policies")))
def test_the_example_policy_reads_the_same_in_both_readers(path):
    source = next(p for p in discover_files(REPO_ROOT / "policies") if p.display_path == path)
    text = source.content.decode()
    assert _load(text) == [_ruamel_data(n) for n in yamlio.round_trip_nodes(text, duplicates_are_errors=True)
                           if n is not None]


def test_positions_are_read_on_demand_and_match_the_file():
    text = "apiVersion: v\nkind: Team\nspec:\n  namespaces:\n    - a\n    - b\n"
    sink = DiagnosticSink()
    [doc] = load_file(PolicySourceFile("t.yaml", text.encode()), sink)
    assert doc._positions is None  # nothing asked yet: no round-trip parse happened
    position = doc.position(("spec", "namespaces", 1))
    assert (position.path, position.line, position.column) == ("t.yaml", 6, 7)
    assert doc.position(("spec",), key=True).line == 3


def test_duplicate_keys_are_still_refused_on_the_fast_path():
    text = "a: 1\na: 2\n"
    sink = DiagnosticSink()
    assert load_file(PolicySourceFile("d.yaml", text.encode()), sink) == []
    assert [d.code for d in sink.items] == ["KP103"]
    assert sink.items[0].position.line == 2


def test_templates_ship_inside_the_package():
    # compiler/templates links to the top-level templates/ so that a wheel carries them as
    # package data (an installed kueue-policy has no repository around it).
    import tomllib

    from compiler.templating import TEMPLATES_DIR
    assert TEMPLATES_DIR.resolve() == (REPO_ROOT / "templates").resolve()
    package_data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "templates/**/*" in package_data["compiler"]
