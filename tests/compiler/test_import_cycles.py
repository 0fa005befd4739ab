"""No import cycle between the modules of compiler/ (issue 11): each stage imports only what
comes before it, so a module can be read, tested and imported on its own. Measured with `ast`
on the imports a module runs when it is imported (module level, not inside functions, not under
`if TYPE_CHECKING:`)."""

from __future__ import annotations

import ast
from pathlib import Path

COMPILER = Path(__file__).resolve().parents[2] / "compiler"


def _modules(root: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found, pending = [], list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return found


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    base = node.module or ""
    if node.level:  # relative: from the module's package, up `level - 1` packages
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    targets = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules}
    if base in modules and len(targets) < len(node.names):
        targets.add(base)  # names that are not submodules come from the module itself
    return targets


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    modules = _modules(root, package)
    return {name: {target for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8")))
                   for target in _imported(name, path, node, modules)} - {name}
            for name, path in modules.items()}


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


def test_compiler_has_no_import_cycle():
    assert cycles(import_graph(COMPILER, "compiler")) == []


def test_the_check_sees_a_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("import json\nfrom pkg.sub.c import thing\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "c.py").write_text("from .. import a\nthing = 1\n")
    (package / "d.py").write_text("def late():\n    from pkg import a\n")  # inside a function: not a cycle
    (package / "e.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n")
    assert cycles(import_graph(package, "pkg")) == [["pkg.a", "pkg.b", "pkg.sub.c"]]
    (package / "sub" / "c.py").write_text("thing = 1\n")
    assert cycles(import_graph(package, "pkg")) == []
