"""The engine's layout rule: one concern per module, so no module of compiler/evaluator over 600
lines and no class over 300 (the layers of the engine are classes of their own modules)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300


def oversized(package: Path, base: Path) -> list[str]:
    """The modules and classes of `package` over the limits, as "path (N lines)" and
    "path:Class (N lines)"."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(base).as_posix()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{where} ({lines} lines)")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.ClassDef):
                size = node.end_lineno - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    found.append(f"{where}:{node.name} ({size} lines)")
    return found


def test_engine_modules_and_classes_are_within_limits():
    assert oversized(ROOT / "compiler" / "evaluator", ROOT) == []


def test_an_oversized_module_and_class_are_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "small.py").write_text("class A:\n    x = 1\n")
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CLASS_LINES))
    (package / "big.py").write_text("class Big:\n" + body + "\n" * (MAX_MODULE_LINES - MAX_CLASS_LINES))
    assert oversized(package, tmp_path) == [f"pkg/big.py ({MAX_MODULE_LINES + 1} lines)",
                                            f"pkg/big.py:Big ({MAX_CLASS_LINES + 1} lines)"]
