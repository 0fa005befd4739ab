"""`python -m compiler.speedups build`: the hot modules compiled with Cython (see the package)."""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import tempfile
from pathlib import Path

from compiler.speedups import COMPILED_DIR, HOT_MODULES, MANIFEST, PACKAGE_ROOT, abi, digest, source_path


def build(modules: tuple[str, ...] = HOT_MODULES, root: Path = PACKAGE_ROOT, out: Path = COMPILED_DIR,
          jobs: int = 2) -> Path:
    """Compile `modules` (of the package at `root`) into `out` with its manifest. The folder is
    replaced only once every module compiled: a failed build leaves the last good one."""
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
        staged = scratch_path / "out"
        staged.mkdir()
        manifest = {"abi": abi(), "modules": {}}
        for module, (source, _) in sources.items():
            built = scratch_path / "lib" / Path(*module.split(".")).with_suffix(suffix)
            binary = module + suffix
            shutil.copyfile(built, staged / binary)
            manifest["modules"][module] = {"source": str(source.relative_to(root)), "sha256": digest(source),
                                           "binary": binary}
        (staged / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(staged, out)
    return out
