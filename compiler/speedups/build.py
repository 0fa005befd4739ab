"""`python -m compiler.speedups build`: the hot modules compiled with Cython (see the package)."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import shutil
import tempfile
from pathlib import Path

from compiler.speedups import (COMPILED_DIR, HOT_MODULES, MANIFEST, PACKAGE_ROOT, abi, declarations_digest,
                               declarations_path, digest, source_path)


def build(modules: tuple[str, ...] = HOT_MODULES, root: Path = PACKAGE_ROOT, out: Path = COMPILED_DIR,
          jobs: int = 2) -> Path:
    """Compile `modules` (of the package at `root`) into `out` with its manifest. Nothing in
    `out` changes until every module compiled (a failed build leaves the last good one), and
    then nothing a running process reads is ever rewritten in place: each binary is named after
    its source's digest and moved in whole, then the manifest, in one rename, switches to them."""
    from Cython.Build import cythonize  # build-time only (the `speedups` extra)
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    with tempfile.TemporaryDirectory(prefix="kueue-policy-speedups-") as scratch:
        scratch_path = Path(scratch)
        # Cython names a module after the packages around its file: copy the package's
        # sources as they are (same relative paths), so the names are the real ones.
        sources = {}
        for module in modules:
            source = source_path(module, root)
            copy = scratch_path / "src" / Path(root.name, *module.split(".")[1:]).with_suffix(".py")
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            # (its Cython declarations, when it has some: the types a module's classes and
            # hot functions get compiled with)
            declarations = declarations_path(module, root)
            if declarations.exists():
                shutil.copyfile(declarations, copy.with_suffix(".pxd"))
            sources[module] = (source, copy)
        for init in (scratch_path / "src").rglob("*"):
            if init.is_dir() and not (init / "__init__.py").exists():
                (init / "__init__.py").write_text("")
        extensions = cythonize([str(copy) for _, copy in sources.values()], language_level=3,
                               nthreads=jobs, quiet=True, compiler_directives={"annotation_typing": False})
        distribution = Distribution({"ext_modules": extensions})
        command = build_ext(distribution)
        command.build_lib = str(scratch_path / "lib")
        command.build_temp = str(scratch_path / "tmp")
        command.parallel = jobs
        command.ensure_finalized()
        command.run()
        manifest = {"abi": abi(), "modules": {}}
        out.mkdir(parents=True, exist_ok=True)
        for module, (source, copy) in sources.items():
            built = scratch_path / "lib" / Path(*module.split(".")).with_suffix(suffix)
            # (the digests of the bytes compiled, not of the files now: they may have been
            # edited during the build)
            sha = digest(copy)
            declared = declarations_digest(copy.with_suffix(".pxd"))
            # (named after both: a .pxd edited alone gives another binary, never one rewritten)
            name = hashlib.sha256(f"{sha} {declared}".encode()).hexdigest()
            binary = f"{module}.{name[:16]}{suffix}"
            _install(built, out / binary)
            manifest["modules"][module] = {"source": str(source.relative_to(root)), "sha256": sha,
                                           "declarations": declared, "binary": binary}
        staged = scratch_path / MANIFEST
        staged.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        _install(staged, out / MANIFEST)
        kept = {entry["binary"] for entry in manifest["modules"].values()} | {MANIFEST}
        for old in out.iterdir():
            if old.name not in kept:
                old.unlink()
    return out


def _install(built: Path, target: Path) -> None:
    """`built` at `target` in one rename: a process importing meanwhile sees the old file or the
    new one, and one that loaded the old keeps it (a loaded library overwritten in place can
    crash the process that mapped it)."""
    partial = target.with_name(target.name + ".partial")
    shutil.copyfile(built, partial)
    os.replace(partial, target)
