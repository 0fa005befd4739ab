"""Whether each `.pxd` extension type declares exactly the fields of its Python class.

A compiled class has the fields its `cdef class` declares and no others: a field the Python code
assigns but the `.pxd` does not declare raises AttributeError only when compiled, and only on
the path that assigns it; one declared but never assigned is a slot nobody fills. Python never
reads the `.pxd`, so nothing else keeps the two in step. Here a class's fields are the names in
its `__slots__` and the attributes its methods assign on `self` (its own and those of the classes
it extends in the same module), less what the class body defines itself (a property, a method).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

_CLASS = re.compile(r"^cdef class (\w+)\s*(?:\(\s*([\w.]+)\s*\))?\s*:")
# `cdef [public|readonly] TYPE name[, name...]` inside a class (a C type may be two words)
_FIELD = re.compile(r"^\s+cdef\s+(?:(?:public|readonly)\s+)?(?:[\w.]+\s+)+?(\w+(?:\s*,\s*\w+)*)\s*$")


@dataclass(frozen=True)
class DeclaredClass:
    """A `cdef class` of a `.pxd`: its line, the class it extends, and the fields it declares."""
    name: str
    line: int
    base: str | None
    fields: frozenset[str]


@dataclass(frozen=True)
class FieldMismatch:
    """A `.pxd` class whose fields are not its Python class's."""
    declarations: Path
    line: int
    module: str
    name: str
    missing: tuple[str, ...]     # assigned by the Python class, not declared
    extra: tuple[str, ...]       # declared, never assigned by the Python class
    no_python_class: bool = False

    def message(self) -> str:
        where = f"{self.declarations}:{self.line}: {self.module}.{self.name}"
        if self.no_python_class:
            return f"{where}: declared as a cdef class, but {self.module} has no class {self.name}"
        parts = []
        if self.missing:
            parts.append(f"missing field(s) {', '.join(self.missing)} (assigned in the .py, not declared)")
        if self.extra:
            parts.append(f"extra field(s) {', '.join(self.extra)} (declared, never assigned in the .py)")
        return f"{where}: " + "; ".join(parts)


def declared_classes(text: str) -> dict[str, DeclaredClass]:
    """The `cdef class` blocks of a `.pxd`'s text, by name, with their `cdef` fields (methods,
    `cpdef` declarations and decorators are not fields)."""
    classes: dict[str, DeclaredClass] = {}
    current: tuple[str, int, str | None] | None = None
    fields: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _CLASS.match(line)
        if header or (line.strip() and not line[0].isspace() and not line.startswith("#")):
            if current is not None:
                classes[current[0]] = DeclaredClass(current[0], current[1], current[2], frozenset(fields))
            current, fields = None, set()
            if header:
                current = (header.group(1), number, header.group(2))
            continue
        field = _FIELD.match(line.split("#", 1)[0])
        if current is not None and field:
            fields.update(name.strip() for name in field.group(1).split(","))
    if current is not None:
        classes[current[0]] = DeclaredClass(current[0], current[1], current[2], frozenset(fields))
    return classes


def python_fields(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Each top-level class of a module: its `__slots__` and the attributes its methods assign on
    `self`, with those of the classes it extends in the same module."""
    own: dict[str, set[str]] = {}
    bases: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            own[node.name] = _own_fields(node)
            bases[node.name] = [base.id for base in node.bases if isinstance(base, ast.Name)]

    def with_bases(name: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        fields = set(own[name])
        for base in bases[name]:
            if base in own and base not in seen:
                fields |= with_bases(base, seen | {name})
        return frozenset(fields)

    return {name: with_bases(name) for name in own}


def _own_fields(node: ast.ClassDef) -> set[str]:
    fields: set[str] = set()
    defined: set[str] = set()   # methods, properties, class attributes: not instance fields
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(statement.name)
            fields |= _assigned_on_self(statement)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name) and target.id == "__slots__":
                    fields |= _slot_names(statement.value)
                elif isinstance(target, ast.Name):
                    defined.add(target.id)
    return fields - defined


def _slot_names(value: ast.expr) -> set[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return {item.value for item in value.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)}
    return set()


def _assigned_on_self(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = function.args.posonlyargs + function.args.args
    if not arguments or any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list):
        return set()
    this = arguments[0].arg
    names: set[str] = set()
    for node in ast.walk(function):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        for target in targets:
            for part in ast.walk(target):
                if (isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)
                        and part.value.id == this and isinstance(part.ctx, ast.Store)):
                    names.add(part.attr)
    return names


def check(declarations: Path, module: str) -> list[FieldMismatch]:
    """The classes of one `.pxd` whose fields are not those of the Python module beside it."""
    declared = declared_classes(declarations.read_text())
    in_python = python_fields(ast.parse(declarations.with_suffix(".py").read_text()))
    mismatches = []
    for cls in declared.values():
        if cls.name not in in_python:
            mismatches.append(FieldMismatch(declarations, cls.line, module, cls.name, (), (), no_python_class=True))
            continue
        fields = _declared_with_bases(cls, declared)
        missing = tuple(sorted(in_python[cls.name] - fields))
        extra = tuple(sorted(fields - in_python[cls.name]))
        if missing or extra:
            mismatches.append(FieldMismatch(declarations, cls.line, module, cls.name, missing, extra))
    return mismatches


def _declared_with_bases(cls: DeclaredClass, declared: dict[str, DeclaredClass]) -> frozenset[str]:
    fields, base, seen = set(cls.fields), cls.base, {cls.name}
    while base in declared and base not in seen:
        seen.add(base)
        fields |= declared[base].fields
        base = declared[base].base
    return frozenset(fields)


def check_package(root: Path) -> list[FieldMismatch]:
    """Every `.pxd` under the package at `root` (whichever modules have one), in path order."""
    mismatches = []
    for declarations in sorted(root.rglob("*.pxd")):
        if declarations.with_suffix(".py").exists():
            relative = declarations.relative_to(root).with_suffix("")
            module = ".".join((root.name, *relative.parts))
            mismatches.extend(check(declarations, module))
    return mismatches
