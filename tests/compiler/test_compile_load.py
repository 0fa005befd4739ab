"""The loader's two readers agree: the libyaml fast path and ruamel's round-trip loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.errors import DiagnosticSink
from compiler.load import LoadedDocument, PolicySourceFile, _fast_load, _plain, _yaml, discover_files, load_file
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


def _ruamel_data(text: str) -> list:
    documents = []
    for node in _yaml().load_all(text):
        if node is None:
            continue
        doc = LoadedDocument("x.yaml", 0, None, _positions={}, _key_positions={})
        documents.append(_plain(node, (), doc, "x.yaml"))
    return documents


def test_fast_path_reads_scalars_as_yaml_1_2_like_ruamel():
    fast = _fast_load(PolicySourceFile("x.yaml", EDGE_CASES.encode()), EDGE_CASES)
    # 1_000 and the date are YAML 1.1-isms libyaml cannot read faithfully: the file goes to ruamel.
    assert fast is None
    text = "\n".join(line for line in EDGE_CASES.splitlines() if not line.startswith(("j:", "s:"))) + "\n"
    fast = _fast_load(PolicySourceFile("x.yaml", text.encode()), text)
    assert [d.data for d in fast] == _ruamel_data(text)
    data = fast[0].data
    assert data["a"] == "on" and data["b"] == "no" and data["c"] == 10 and data["k"] == "8"


@pytest.mark.parametrize("path", sorted(p.display_path for p in discover_files(REPO_ROOT / "policies")))
def test_fast_path_matches_ruamel_on_the_example_policy(path):
    source = next(p for p in discover_files(REPO_ROOT / "policies") if p.display_path == path)
    text = source.content.decode()
    fast = _fast_load(source, text)
    assert fast is not None
    assert [d.data for d in fast] == _ruamel_data(text)


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
