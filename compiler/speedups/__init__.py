"""Compiled copies of the admission engine's hot modules: never stale, never a different answer.

`simulate` replays a cluster's history through the engine, hundreds of thousands of scheduling
cycles in pure Python, and much of that time is the interpreter's own work (dispatching
bytecode, calling small methods). Cython compiles the unchanged source of the modules below to
C extension modules. Annotations are not read as C types (`annotation_typing` is off): the types
come from the Cython declarations (`.pxd`) beside most of the modules, which make classes
extension types and calls C calls without changing any value: a C type is declared only where
Python's value is one it holds exactly (`bint` where only True or False arrives, `Py_ssize_t`
for list positions and counts, `double` for a weight Python itself makes a float), anything a
caller passes in stays an `object`. The answers are the same, byte for byte (tests run
`evaluate`, circles and simulations both ways), in about a third less time.

The Python source stays the reference and the only code anyone edits:

- `python -m compiler.speedups build` (run by `make setup`) compiles the modules into
  `compiler/_compiled/`, with a manifest holding the SHA-256 of each module's source and of its
  declarations (`.pxd`, or that it had none): both are what the binary was compiled from.
- `install()` (run when the `compiler` package is imported) puts `CompiledFinder` first on
  `sys.meta_path`. It loads the compiled copies only when the manifest's digests are those of
  the sources and declarations as they are now: a module whose `.py` or `.pxd` was edited (or
  whose `.pxd` was added or removed) since the build runs as Python, never as stale code, and so
  do the others, since compiled modules share their classes' C layouts (see the `.pxd` files)
  and a compiled module cannot run beside another's Python class.
- `KUEUE_POLICY_PURE_PYTHON=1` runs everything as Python.
- `python -m compiler.speedups status [--format json]` says which modules run compiled, and why
  not; `python -m compiler.speedups check` whether every `.pxd` class declares exactly its
  Python class's fields (compiled, a class has only the fields its `.pxd` declares).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent   # .../compiler
COMPILED_DIR = PACKAGE_ROOT / "_compiled"
MANIFEST = "manifest.json"
PURE_PYTHON_ENV = "KUEUE_POLICY_PURE_PYTHON"

# The engine's inner loop and the simulation's event loop: what a long `simulate` or a large
# `evaluate` spends its time in. The rest of the tool is I/O, compiling policies and
# rendering, where compiling would save nothing worth a build step.
HOT_MODULES = (
    "compiler.evaluator.tree",
    "compiler.evaluator.info",
    "compiler.evaluator.assigner",
    "compiler.evaluator.preemption_common",
    "compiler.evaluator.classical",
    "compiler.evaluator.drs",
    "compiler.evaluator.fair_tournament",
    "compiler.evaluator.fair_ordering",
    "compiler.evaluator.fair_search_reads",
    "compiler.evaluator.fair_preemption",
    "compiler.evaluator.preemption",
    "compiler.evaluator.circles",
    "compiler.evaluator.queue_manager",
    "compiler.evaluator.cluster_cache",
    "compiler.evaluator.nominator",
    "compiler.evaluator.answer_bounds",
    "compiler.evaluator.nomination_cache",
    "compiler.evaluator.processing",
    "compiler.evaluator.bounds_watch",
    "compiler.evaluator.quiet_set",
    "compiler.evaluator.quiet_queues",
    "compiler.evaluator.scheduler",
    "compiler.evaluator.engine",
    "compiler.simulate.driver",
)


def source_path(module: str, root: Path = PACKAGE_ROOT) -> Path:
    """The .py file of `module`, a module of the package at `root`."""
    return root.joinpath(*module.split(".")[1:]).with_suffix(".py")


def declarations_path(module: str, root: Path = PACKAGE_ROOT) -> Path:
    """The Cython declarations of `module` (they need not exist)."""
    return source_path(module, root).with_suffix(".pxd")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def declarations_digest(path: Path) -> str | None:
    """The digest of a module's declarations, None when it has none: a `.pxd` added since the
    build changes the compiled code as much as one edited or removed."""
    try:
        return digest(path)
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class ModuleStatus:
    module: str
    compiled: bool
    why: str          # "compiled", or why the module runs as Python


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds the compiled copy of a module listed in a build's manifest, while the module's
    source still has the digest it was compiled from; any other import goes to the next
    finder (the source)."""

    def __init__(self, directory: Path, root: Path) -> None:
        self.directory = directory
        self.root = root
        self.entries: dict[str, dict] = {}
        self.problem = ""
        self._stale: list[str] | None = None
        manifest = directory / MANIFEST
        try:
            data = json.loads(manifest.read_text())
        except FileNotFoundError:
            self.problem = f"not built ({manifest} missing: run `python -m compiler.speedups build`)"
            return
        except (OSError, ValueError) as error:
            self.problem = f"unreadable manifest {manifest}: {error}"
            return
        if data.get("abi") != abi():
            self.problem = (f"built for {data.get('abi')}, this interpreter is {abi()}: run "
                            "`python -m compiler.speedups build` again")
            return
        self.entries = data.get("modules", {})

    def status(self, module: str) -> ModuleStatus:
        if os.environ.get(PURE_PYTHON_ENV):
            return ModuleStatus(module, False, f"{PURE_PYTHON_ENV} is set")
        if self.problem:
            return ModuleStatus(module, False, self.problem)
        entry = self.entries.get(module)
        if entry is None:
            return ModuleStatus(module, False, "not in the build's manifest")
        if not (self.directory / entry["binary"]).is_file():
            return ModuleStatus(module, False, f"{entry['binary']} missing")
        try:
            current = digest(source_path(module, self.root))
        except OSError as error:
            return ModuleStatus(module, False, f"source unreadable: {error}")
        if current != entry["sha256"]:
            return ModuleStatus(module, False, "source changed since the build: running it as Python")
        change = self._declarations_change(module, entry)
        if change:
            return ModuleStatus(module, False, f"{change}: running it as Python")
        stale = self._stale_modules()
        if stale:
            return ModuleStatus(module, False, f"{stale[0]} changed since the build: the compiled modules share "
                                               "C types, so every one runs as Python")
        return ModuleStatus(module, True, "compiled")

    def _stale_modules(self) -> list[str]:
        """The modules of the build whose source changed since (or whose binary is gone),
        decided once per process: every module of one process loads from the same decision."""
        if self._stale is None:
            self._stale = []
            for module, entry in sorted(self.entries.items()):
                try:
                    current = digest(source_path(module, self.root))
                except OSError:
                    current = None
                if (current != entry["sha256"] or self._declarations_change(module, entry)
                        or not (self.directory / entry["binary"]).is_file()):
                    self._stale.append(module)
        return self._stale

    def _declarations_change(self, module: str, entry: dict) -> str:
        """How the module's `.pxd` differs from the one compiled in ("" when it does not)."""
        if "declarations" not in entry:  # (a manifest written before builds recorded them)
            return "the build did not record its declarations (.pxd)"
        built, current = entry["declarations"], declarations_digest(declarations_path(module, self.root))
        if built == current:
            return ""
        if built is None:
            return "declarations (.pxd) added since the build"
        if current is None:
            return "declarations (.pxd) removed since the build"
        return "declarations (.pxd) changed since the build"

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.entries or not self.status(fullname).compiled:
            return None
        binary = str(self.directory / self.entries[fullname]["binary"])
        loader = importlib.machinery.ExtensionFileLoader(fullname, binary)
        return importlib.util.spec_from_file_location(fullname, binary, loader=loader)


_finder: CompiledFinder | None = None


def install(directory: Path | None = None) -> CompiledFinder:
    """Put the finder of a build first on `sys.meta_path` (once): `compiler/_compiled/`'s, or
    that of the build in `directory`, which replaces it while no hot module is imported yet
    (bench/bench_speedups.py times builds of some of the modules that way)."""
    global _finder
    if _finder is not None and directory is not None and _finder.directory != directory:
        loaded = sorted(module for module in HOT_MODULES if module in sys.modules)
        if loaded:
            raise RuntimeError(f"{loaded[0]} is imported already: another build can no longer be used")
        sys.meta_path.remove(_finder)
        _finder = None
    if _finder is None:
        _finder = CompiledFinder(directory or COMPILED_DIR, PACKAGE_ROOT)
        sys.meta_path.insert(0, _finder)
    return _finder


def status() -> list[ModuleStatus]:
    """Each hot module: whether it runs compiled in this process (it is, when imported)."""
    finder = install()
    answers = []
    for module in HOT_MODULES:
        answer = finder.status(module)
        loaded = sys.modules.get(module)
        if loaded is not None and answer.compiled != _is_extension(loaded):
            compiled = _is_extension(loaded)
            answer = ModuleStatus(module, compiled, "compiled" if compiled else
                                  f"imported as Python in this process ({answer.why} now)")
        answers.append(answer)
    return answers


def summary() -> str:
    """One line for benchmarks and bug reports."""
    answers = status()
    done = sum(1 for answer in answers if answer.compiled)
    if done == len(answers):
        return f"engine: compiled ({done} modules, Cython)"
    if done == 0:
        return f"engine: pure Python ({answers[0].why})"
    return f"engine: {done} of {len(answers)} modules compiled"


def _is_extension(module) -> bool:
    return isinstance(getattr(module, "__loader__", None), importlib.machinery.ExtensionFileLoader)


def abi() -> str:
    return f"{sys.implementation.cache_tag}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


def build_is_current(modules: tuple[str, ...] = HOT_MODULES, directory: Path = COMPILED_DIR,
                     root: Path = PACKAGE_ROOT) -> bool:
    """Whether the build in `directory` holds exactly `modules`, each compiled from its `.py`
    and `.pxd` as they are now (whatever KUEUE_POLICY_PURE_PYTHON says: this is about the
    files, not about this process)."""
    finder = CompiledFinder(directory, root)
    return not finder.problem and set(finder.entries) == set(modules) and not finder._stale_modules()
