"""No function in compiler/ is longer than 80 lines: a longer one does several things, and each
deserves a name (issue 11). Measured on the source with `ast`, decorators and docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

COMPILER = Path(__file__).resolve().parents[2] / "compiler"
MAX_LINES = 80


def _long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - first + 1
                if length > MAX_LINES:
                    found.append(f"compiler/{relative}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_compiler_is_longer_than_80_lines():
    assert _long_functions(COMPILER) == []


def test_the_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def too_long():\n{body}\n")
    (tmp_path / "short.py").write_text("def fine():\n    return 1\n")
    assert _long_functions(tmp_path) == [f"compiler/long.py:1 too_long ({MAX_LINES + 1} lines)"]
