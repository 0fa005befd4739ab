"""The policy loader: one YAML 1.2 reader for the data, ruamel's round-trip nodes for positions."""

from __future__ import annotations

import pytest

from compiler.core import yamlio
from compiler.core.errors import DiagnosticSink
from compiler.language.load import PolicySourceFile, discover_files, load_file
from kp_testing import REPO_ROOT, node_paths

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


@pytest.mark.parametrize("path", sorted(p.display_path for p in discover_files(REPO_ROOT / "policies")) + ["edge"])
def test_every_node_the_reader_reads_has_the_position_ruamel_sees(path):
    if path == "edge":
        text = EDGE_CASES + "1: x\ntrue: y\n"
    else:
        text = next(p for p in discover_files(REPO_ROOT / "policies") if p.display_path == path).content.decode()
    [data] = _load(text)
    nodes, keys = yamlio.positions(text, 0)
    lines = text.splitlines()
    for node_path in node_paths(data):
        assert node_path in nodes, node_path
        if node_path and isinstance(node_path[-1], str):
            line, column = keys[node_path]
            assert lines[line - 1][column - 1:].startswith(node_path[-1]), node_path


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

    from compiler.core.templating import TEMPLATES_DIR
    assert TEMPLATES_DIR.resolve() == (REPO_ROOT / "templates").resolve()
    package_data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "templates/**/*" in package_data["compiler"]
