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


_CIMPORT = re.compile(r"^from\s+([\w.]+)\s+cimport\s+(.+)$")


def _cimported(text: str) -> dict[str, str]:
    """The classes a `.pxd` cimports from other modules: name -> module."""
    names: dict[str, str] = {}
    for line in text.splitlines():
        found = _CIMPORT.match(line.split("#", 1)[0].strip())
        if found:
            for name in found.group(2).split(","):
                bare = name.split(" as ")[-1].strip()
                if bare:
                    names[bare] = found.group(1)
    return names


def _python_bases(tree: ast.Module, module: str) -> dict[str, list[tuple[str, str]]]:
    """Each top-level class's bases as (module, class): in the same module, or imported by name."""
    imported = {alias.asname or alias.name: node.module for node in tree.body
                if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
    bases: dict[str, list[tuple[str, str]]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases[node.name] = [(imported.get(base.id, module), base.id) for base in node.bases
                                if isinstance(base, ast.Name)]
    return bases


@dataclass
class _Package:
    """Every `.pxd` of a package and the Python module beside it, read once: classes are keyed
    (module, name), so a class extending one of another module's (a layer of the engine over
    the cache that declares its fields) is checked with what it inherits."""
    declared: dict[tuple[str, str], DeclaredClass]
    declared_bases: dict[tuple[str, str], tuple[str, str] | None]
    own_python: dict[tuple[str, str], frozenset[str]]
    python_bases: dict[tuple[str, str], list[tuple[str, str]]]
    paths: dict[str, Path]

    @classmethod
    def read(cls, modules: dict[str, Path]) -> "_Package":
        package = cls({}, {}, {}, {}, {})
        for module, declarations in modules.items():
            package.paths[module] = declarations
            text = declarations.read_text()
            cimported = _cimported(text)
            for name, declared in declared_classes(text).items():
                package.declared[(module, name)] = declared
                base = declared.base
                package.declared_bases[(module, name)] = None if base is None else (
                    (cimported.get(base, module), base) if "." not in base else tuple(base.rsplit(".", 1)))
            tree = ast.parse(declarations.with_suffix(".py").read_text())
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    package.own_python[(module, node.name)] = frozenset(_own_fields(node))
            for name, bases in _python_bases(tree, module).items():
                package.python_bases[(module, name)] = bases
        return package

    def declared_fields(self, key: tuple[str, str]) -> frozenset[str]:
        fields: set[str] = set()
        seen: set[tuple[str, str]] = set()
        while key in self.declared and key not in seen:
            seen.add(key)
            fields |= self.declared[key].fields
            key = self.declared_bases[key]
        return frozenset(fields)

    def python_fields(self, key: tuple[str, str], seen: frozenset = frozenset()) -> frozenset[str]:
        fields = set(self.own_python.get(key, ()))
        for base in self.python_bases.get(key, ()):
            if base not in seen:
                fields |= self.python_fields(base, seen | {key})
        return frozenset(fields)

    def filled_below(self, key: tuple[str, str]) -> frozenset[str]:
        """What the class and every class extending it (anywhere in the package) assign."""
        fields = set(self.python_fields(key))
        for other in self.own_python:
            if other != key and key in self._ancestors(other):
                fields |= self.python_fields(other)
        return frozenset(fields)

    def _ancestors(self, key: tuple[str, str], seen: frozenset = frozenset()) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for base in self.python_bases.get(key, ()):
            if base not in seen:
                found |= {base} | self._ancestors(base, seen | {key})
        return found

    def mismatches(self) -> list[FieldMismatch]:
        out = []
        for (module, name), cls in self.declared.items():
            declarations = self.paths[module]
            if (module, name) not in self.own_python:
                out.append(FieldMismatch(declarations, cls.line, module, name, (), (), no_python_class=True))
                continue
            declared = self.declared_fields((module, name))
            missing = tuple(sorted(self.python_fields((module, name)) - declared))
            extra = tuple(sorted(declared - self.filled_below((module, name))))
            if missing or extra:
                out.append(FieldMismatch(declarations, cls.line, module, name, missing, extra))
        return out


def _module_name(root: Path, declarations: Path) -> str:
    relative = declarations.relative_to(root).with_suffix("")
    return ".".join((root.name, *relative.parts))


def check(declarations: Path, module: str) -> list[FieldMismatch]:
    """The classes of one `.pxd` whose fields are not those of the Python module beside it
    (bases in other modules are not followed: `check_package` follows them)."""
    return _Package.read({module: declarations}).mismatches()


def check_package(root: Path) -> list[FieldMismatch]:
    """Every `.pxd` under the package at `root` (whichever modules have one), in path order,
    with bases followed across its modules."""
    modules = {_module_name(root, path): path for path in sorted(root.rglob("*.pxd"))
               if path.with_suffix(".py").exists()}
    return sorted(_Package.read(modules).mismatches(), key=lambda m: (str(m.declarations), m.line))
