"""Where a `.pxd` declares a C bool, whether Python's value is always a bool there.

A C `bint` keeps only true or false: a field declared `bint` that Python code gives None, 0 or a
list, or a `cpdef bint` function that returns one, would answer True/False compiled and the value
itself as Python. So each `bint` field must be assigned, in its class's methods, only values that
are bools as written (True/False, a comparison, `not`, `bool()`/`any()`/`all()`/`isinstance()`, a
call of a `cpdef bint` function, `and`/`or`/`if-else` of those, a local that only ever holds
those), and each `cpdef bint` function must return only such values. A value passed in by a
caller (a constructor's flag) is not known to be a bool: such a field is an `object`.
(`Py_ssize_t` is declared for list positions and counts only, `double` for a weight Python makes
a float itself: values those C types hold exactly.)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from compiler.speedups.declarations import declared_classes

_BOOL_CALLS = frozenset({"bool", "any", "all", "isinstance", "issubclass", "hasattr", "callable"})
_BINT_FIELD = re.compile(r"^\s+cdef\s+(?:(?:public|readonly)\s+)?bint\s+(\w+(?:\s*,\s*\w+)*)")
_BINT_FUNCTION = re.compile(r"^(\s*)cpdef\s+bint\s+(\w+)\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class NotABool:
    """A value that may not be a bool where a `.pxd` declares a C bool."""
    declarations: Path
    module: str
    where: str         # "Class.field" or "function" / "Class.method"
    line: int          # of the .py
    value: str

    def message(self) -> str:
        return (f"{self.declarations.with_suffix('.py')}:{self.line}: {self.module}.{self.where} is a C bint in "
                f"{self.declarations.name}, but may be given {self.value!r}, which need not be a bool: declare it "
                "`object` (or make the value a bool)")


def _is_bool(value: ast.expr, bint_functions: frozenset[str], bool_names: frozenset[str]) -> bool:
    def check(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, bool)
        if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return True
        if isinstance(node, ast.BoolOp):
            return all(check(operand) for operand in node.values)
        if isinstance(node, ast.IfExp):
            return check(node.body) and check(node.orelse)
        if isinstance(node, ast.Name):
            return node.id in bool_names
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            return name in _BOOL_CALLS or name in bint_functions
        return False
    return check(value)


def _bool_locals(function: ast.FunctionDef, bint_functions: frozenset[str]) -> frozenset[str]:
    """The local names every assignment of which (`=`, `|=`, `&=`) is a bool."""
    assignments: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assignments.setdefault(target.id, []).append(node.value)
                else:  # (unpacked or subscripted: unknown)
                    for part in ast.walk(target):
                        if isinstance(part, ast.Name):
                            assignments.setdefault(part.id, []).append(target)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            known = isinstance(node.op, (ast.BitOr, ast.BitAnd))
            assignments.setdefault(node.target.id, []).append(node.value if known else node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AnnAssign, ast.NamedExpr)):
            targets = [node.target] if hasattr(node, "target") else [i.optional_vars for i in node.items]
            for target in filter(None, targets):
                for part in ast.walk(target):
                    if isinstance(part, ast.Name):
                        assignments.setdefault(part.id, []).append(target)
    names: frozenset[str] = frozenset()
    while True:  # (a local may be a bool because another is)
        grown = frozenset(name for name, values in assignments.items()
                          if all(_is_bool(value, bint_functions, names) for value in values))
        if grown == names:
            return names
        names = grown


def check(declarations: Path, module: str, bint_functions: frozenset[str]) -> list[NotABool]:
    """The C bools of one `.pxd` that Python's code may give a value other than a bool."""
    text = declarations.read_text()
    tree = ast.parse(declarations.with_suffix(".py").read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    found: list[NotABool] = []
    for cls in declared_classes(text).values():
        body = classes.get(cls.name)
        fields = _bint_fields(text, cls.name)
        if body is None or not fields:
            continue
        for method in (node for node in body.body if isinstance(node, ast.FunctionDef) and node.args.args):
            this = method.args.args[0].arg
            names = _bool_locals(method, bint_functions)
            for target, value in _attribute_assignments(method):
                if (isinstance(target.value, ast.Name) and target.value.id == this and target.attr in fields
                        and not _is_bool(value, bint_functions, names)):
                    found.append(NotABool(declarations, module, f"{cls.name}.{target.attr}", value.lineno,
                                          ast.unparse(value)))
    for owner, name in _bint_function_names(text):
        function = functions.get(name) if owner is None else next(
            (n for n in getattr(classes.get(owner), "body", []) if isinstance(n, ast.FunctionDef) and n.name == name),
            None)
        if function is None:
            continue
        names = _bool_locals(function, bint_functions)
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and not (node.value is not None
                                                     and _is_bool(node.value, bint_functions, names)):
                shown = ast.unparse(node.value) if node.value is not None else "None"
                found.append(NotABool(declarations, module, name if owner is None else f"{owner}.{name}",
                                      node.lineno, shown))
    return found


def _attribute_assignments(function: ast.FunctionDef):
    """(target, value) of each `x.attr = value` (a tuple assigned to a tuple, pair by pair)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute):
                    yield target, node.value
                elif isinstance(target, ast.Tuple):
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value] * len(target.elts)
                    yield from ((t, v) for t, v in zip(target.elts, values) if isinstance(t, ast.Attribute))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Attribute):
            if node.value is not None:
                yield node.target, node if isinstance(node, ast.AugAssign) else node.value


def _bint_fields(text: str, class_name: str) -> set[str]:
    fields: set[str] = set()
    inside = False
    for line in text.splitlines():
        if line.startswith("cdef class "):
            inside = re.match(rf"cdef class {class_name}\b", line) is not None
        elif line.strip() and not line[0].isspace():
            inside = False
        elif inside and (match := _BINT_FIELD.match(line.split("#", 1)[0])):
            fields.update(name.strip() for name in match.group(1).split(","))
    return fields


def _bint_function_names(text: str) -> list[tuple[str | None, str]]:
    """(class or None, name) of each `cpdef bint` function of a `.pxd`."""
    owner, names = None, []
    for line in text.splitlines():
        if line.startswith("cdef class "):
            owner = line.split()[2].split("(")[0].rstrip(":")
        elif line.strip() and not line[0].isspace() and not line.startswith(("@", "#")):
            owner = None
        match = _BINT_FUNCTION.match(line)
        if match:
            names.append((owner if match.group(1) else None, match.group(2)))
    return names


def check_package(root: Path) -> list[NotABool]:
    """Every `.pxd` under the package at `root`."""
    paths = sorted(path for path in root.rglob("*.pxd") if path.with_suffix(".py").exists())
    bint_functions = frozenset(name for path in paths for _, name in _bint_function_names(path.read_text()))
    found = []
    for declarations in paths:
        module = ".".join((root.name, *declarations.relative_to(root).with_suffix("").parts))
        found.extend(check(declarations, module, bint_functions))
    return found
