"""The structure of compiler/, stated once and checked with `ast` on the source:

* which package may import which (ALLOWED below): the packages form layers, from the core
  utilities up to the command line, so a package can be read, tested and imported without the
  ones above it;
* no import cycle between modules;
* no function longer than 80 lines (a longer one does several things, each deserving a name);
* what `import X` loads, for the modules other programs import on their own (the trace model,
  the engine, the policy model): never the command line (click, rich) nor the templates (jinja2).

Imports inside functions count like any other (hiding one there does not remove the
dependency); imports under `if TYPE_CHECKING:` do not (they never run). Each check has a test
that builds a small package breaking it and sees the check fail."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPILER = ROOT / "compiler"
MAX_LINES = 80

# package -> the packages it may import (besides itself and the root package's `__version__`).
# `compiler` is the root package (its __init__ and __main__).
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "language": {"core"},
    "runtime": {"core"},
    "cli": {"core"},
    "cel": {"core"},
    "mig": {"core", "cli"},
    "dra": {"core", "cel", "mig", "language", "cli"},
    "evaluator": {"core", "runtime", "cli"},
    "verify": {"core", "cel"},
    "stages": {"core", "language", "mig", "dra", "verify", "evaluator", "runtime", "cli"},
    "simulate": {"core", "language", "mig", "evaluator", "runtime", "stages", "cli"},
    "deliver": {"core", "language", "stages", "simulate", "cli"},
    "sandbox": {"core", "evaluator", "stages", "cli"},
    "drift": {"core", "evaluator", "stages", "cli"},
    "speedups": set(),
    "compiler": {"speedups", "cli"},
}

# Modules imported on their own by other programs, and what importing them must not load.
LIGHT_MODULES = ["compiler.simulate.trace", "compiler.evaluator", "compiler.language.policy"]
HEAVY = ["click", "rich", "jinja2"]


@dataclass(frozen=True)
class Module:
    name: str          # dotted, `pkg.sub.mod` (a package under its own name)
    path: Path
    is_package: bool


def _modules(package: Path) -> dict[str, Module]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement at any depth, except the bodies of `if TYPE_CHECKING:`."""
    found, pending = [], [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            pending += node.orelse
        else:
            pending += ast.iter_child_nodes(node)
    return found


def _targets(module: Module, node: ast.Import | ast.ImportFrom, modules: dict[str, Module]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    base = node.module or ""
    if node.level:  # relative: from the module's package, up `level - 1` packages
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    targets = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules}
    if base in modules and len(targets) < len(node.names):
        targets.add(base)  # names that are not submodules come from the module itself
    return targets


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports."""
    modules = _modules(package)
    return {name: {target for node in _import_nodes(ast.parse(module.path.read_text(encoding="utf-8")))
                   for target in _targets(module, node, modules)} - {name}
            for name, module in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package_of(module: str) -> str:
    """`compiler.stages.build` -> `stages`; the root package's own modules -> `compiler`."""
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and parts[1] == "__main__"):
        return parts[0]
    return parts[1]


def forbidden_imports(graph: dict[str, set[str]], allowed: dict[str, set[str]]) -> list[str]:
    """`module -> module` for each import the table does not allow, sorted. A package missing
    from the table may import nothing of the others."""
    found = []
    for source, targets in sorted(graph.items()):
        home = _package_of(source)
        for target in sorted(targets):
            there = _package_of(target)
            root_itself = "." not in target  # `from compiler import __version__`
            if there != home and not root_itself and there not in allowed.get(home, set()):
                found.append(f"{source} -> {target} ({home} may not import {there})")
    return found


def long_functions(package: Path, limit: int = MAX_LINES) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - first + 1
                if length > limit:
                    found.append(f"{relative}:{node.lineno} {node.name} ({length} lines)")
    return found


def loaded_by(module: str, heavy: list[str], path: Path = ROOT) -> list[str]:
    """The `heavy` top-level packages that `import module` loads, in a fresh interpreter."""
    probe = (f"import json, sys\nimport {module}\n"
             f"print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=path, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_every_package_imports_only_what_the_table_allows():
    assert set(ALLOWED) >= {_package_of(name) for name in import_graph(COMPILER)}
    assert forbidden_imports(import_graph(COMPILER), ALLOWED) == []


def test_compiler_has_no_import_cycle():
    assert cycles(import_graph(COMPILER)) == []


def test_no_function_in_compiler_is_longer_than_80_lines():
    assert long_functions(COMPILER) == []


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_importing_a_model_or_the_engine_loads_no_command_line_nor_templates(module):
    assert loaded_by(module, HEAVY) == []


# Positive controls: each check, on a small package that breaks it, fails.

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


@pytest.mark.parametrize("c_text", [
    "from pkg import a\nthing = 1\n",
    "from .. import a\nthing = 1\n",
    "def late():\n    from pkg import a\n    return a\nthing = 1\n",   # hidden inside a function
])
def test_the_cycle_check_sees_a_cycle_however_it_is_written(tmp_path, c_text):
    package = _package(tmp_path, {
        "__init__.py": "", "a.py": "from pkg import b\n", "b.py": "import json\nfrom pkg.sub.c import thing\n",
        "sub/__init__.py": "", "sub/c.py": c_text,
        "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import f\n",
        "f.py": "from pkg import e\n"})   # e -> f only for the type checker: not a cycle
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    (package / "sub" / "c.py").write_text("thing = 1\n")
    assert cycles(import_graph(package)) == []


def test_the_table_check_sees_an_import_it_does_not_allow(tmp_path):
    package = _package(tmp_path, {
        "__init__.py": "__version__ = '1'\n", "low/__init__.py": "", "high/__init__.py": "",
        "low/base.py": "from pkg import __version__\n",
        "high/user.py": "from pkg.low.base import __version__\n",
        "low/sneaky.py": "def late():\n    from pkg.high import user\n    return user\n"})
    allowed = {"low": set(), "high": {"low"}}
    assert forbidden_imports(import_graph(package), allowed) == [
        "pkg.low.sneaky -> pkg.high.user (low may not import high)"]
    (package / "low" / "sneaky.py").write_text("")
    assert forbidden_imports(import_graph(package), allowed) == []


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    package = _package(tmp_path, {"long.py": f"@staticmethod\ndef too_long():\n{body}\n",
                                  "short.py": "def fine():\n    return 1\n"})
    assert long_functions(package) == [f"pkg/long.py:2 too_long ({MAX_LINES + 2} lines)"]


def test_the_load_check_sees_a_module_that_loads_the_command_line(tmp_path):
    _package(tmp_path, {"__init__.py": "", "light.py": "import json\n", "heavy.py": "import click\n"})
    assert loaded_by("pkg.light", HEAVY, tmp_path) == []
    assert loaded_by("pkg.heavy", HEAVY, tmp_path) == ["click"]
