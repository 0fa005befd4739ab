"""The compiled copies of the engine's hot modules (compiler/speedups): loaded only while their
source is the one they were compiled from, and giving the same answers as the Python source."""

from __future__ import annotations

import importlib.util
from importlib.machinery import EXTENSION_SUFFIXES
import json
import subprocess
import sys
from pathlib import Path

import pytest
from kp_testing import REPO_ROOT, run_cli
from kp_testing.compiled_runs import CLI, run_both

from compiler import speedups
from compiler.speedups.build import build

# A process that installs the finder of one build (of the package `toypkg` under `root`) and
# imports its module: where it was loaded from, and what it answers.
PROBE = """\
import sys
from pathlib import Path
from compiler.speedups import CompiledFinder
root = Path(sys.argv[1])
sys.path.insert(0, str(root.parent))
finder = CompiledFinder(root / "_compiled", root)
sys.meta_path.insert(0, finder)
import toypkg.hot as hot
print(hot.__file__)
print(hot.answer())
print(finder.status("toypkg.hot").why)
"""


def _probe(root: Path, env: dict | None = None) -> list[str]:
    import os

    result = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True,
                            env={**os.environ, **(env or {})}, check=True)
    return result.stdout.splitlines()


def test_a_compiled_module_runs_only_while_its_source_is_the_one_it_was_built_from(tmp_path):
    root = tmp_path / "toypkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    source = root / "hot.py"
    source.write_text("def answer():\n    return sum(range(10))\n")
    build(("toypkg.hot",), root=root, out=root / "_compiled", jobs=1)
    first = _binaries(root)
    assert len(first) == 1 and first[0].startswith("toypkg.hot.")

    where, answer, why = _probe(root)
    assert where.endswith(EXTENSION_SUFFIXES[0]) and "_compiled" in where
    assert (answer, why) == ("45", "compiled")

    # Set aside for pure Python: the source runs, the build is kept.
    where, answer, why = _probe(root, {speedups.PURE_PYTHON_ENV: "1"})
    assert where == str(source) and answer == "45" and "KUEUE_POLICY_PURE_PYTHON" in why

    # Edited after the build: the stale copy is never loaded, the edited source is.
    source.write_text("def answer():\n    return 'edited'\n")
    where, answer, why = _probe(root)
    assert where == str(source)
    assert answer == "edited" and why == "source changed since the build: running it as Python"

    # Built again: the edited source's binary replaces the old one (another name: a process
    # that loaded the old one keeps its file).
    build(("toypkg.hot",), root=root, out=root / "_compiled", jobs=1)
    where, answer, why = _probe(root)
    assert where.endswith(EXTENSION_SUFFIXES[0]) and (answer, why) == ("edited", "compiled")
    assert len(_binaries(root)) == 1 and _binaries(root) != first


def _binaries(root: Path) -> list[str]:
    names = sorted(path.name for path in (root / "_compiled").iterdir())
    assert "manifest.json" in names
    return [name for name in names if name != "manifest.json"]


# A class whose declarations make it an extension type: compiled, it has its declared fields
# only (an attribute it does not declare cannot be set), as Python, any.
TYPED_PROBE = """\
import sys
from pathlib import Path
from compiler.speedups import CompiledFinder
root = Path(sys.argv[1])
sys.path.insert(0, str(root.parent))
sys.meta_path.insert(0, CompiledFinder(root / "_compiled", root))
import toypkg.hot as hot
counter = hot.Counter()
counter.add(2)
try:
    counter.other = 1
    extra = "accepted"
except AttributeError:
    extra = "refused"
print(counter.total, hot.twice(21), extra)
"""


def test_a_modules_declarations_are_compiled_in(tmp_path):
    import os

    root = tmp_path / "toypkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "hot.py").write_text(
        "class Counter:\n"
        "    def __init__(self):\n"
        "        self.total = 0\n"
        "    def add(self, value):\n"
        "        self.total += value\n\n\n"
        "def twice(value):\n"
        "    return 2 * value\n")
    (root / "hot.pxd").write_text(
        "cdef class Counter:\n"
        "    cdef public long long total\n"
        "    cpdef add(self, long long value)\n\n"
        "cpdef long long twice(long long value)\n")
    build(("toypkg.hot",), root=root, out=root / "_compiled", jobs=1)

    def probe(env: dict) -> str:
        result = subprocess.run([sys.executable, "-c", TYPED_PROBE, str(root)], capture_output=True, text=True,
                                env={**os.environ, **env}, check=True)
        return result.stdout.strip()

    assert probe({}) == "2 42 refused"
    assert probe({speedups.PURE_PYTHON_ENV: "1"}) == "2 42 accepted"


# Two modules of one build, the second typed by the first's class (a cimport): the process
# imports the second and says where each came from and why.
SHARED_PROBE = """\
import sys
from pathlib import Path
from compiler.speedups import CompiledFinder
root = Path(sys.argv[1])
sys.path.insert(0, str(root.parent))
finder = CompiledFinder(root / "_compiled", root)
sys.meta_path.insert(0, finder)
import toypkg.user as user
import toypkg.base as base
print(user.total_of(3), base.__file__.endswith(".py"), user.__file__.endswith(".py"))
print(finder.status("toypkg.user").why)
"""


def test_a_module_edited_since_the_build_makes_every_module_run_as_python(tmp_path):
    """Compiled modules share their classes' C layouts: one whose class another compiled
    module is typed by cannot run as Python beside it (the import would fail), so an edit to
    any module of the build sets all of them aside until the next build."""
    root = tmp_path / "toypkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    base = root / "base.py"
    base.write_text("class Counter:\n    def __init__(self, total):\n        self.total = total\n")
    (root / "base.pxd").write_text("cdef class Counter:\n    cdef public long long total\n")
    (root / "user.py").write_text("from toypkg.base import Counter\n\n\n"
                                  "def total_of(value):\n    counter = Counter(value)\n    return counter.total\n")
    (root / "user.pxd").write_text("cimport cython\nfrom toypkg.base cimport Counter\n\n"
                                   "@cython.locals(counter=Counter)\ncpdef total_of(value)\n")
    build(("toypkg.base", "toypkg.user"), root=root, out=root / "_compiled", jobs=1)

    def probe() -> list[str]:
        result = subprocess.run([sys.executable, "-c", SHARED_PROBE, str(root)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    assert probe() == ["3 False False", "compiled"]
    base.write_text(base.read_text() + "\n# edited\n")
    assert probe() == ["3 True True", "toypkg.base changed since the build: the compiled modules share C types, "
                                      "so every one runs as Python"]


def test_a_build_for_another_interpreter_is_not_loaded(tmp_path):
    root = tmp_path / "toypkg"
    (root / "_compiled").mkdir(parents=True)
    (root / "_compiled" / "manifest.json").write_text('{"abi": "cpython-27.so", "modules": {}}')
    finder = speedups.CompiledFinder(root / "_compiled", root)
    assert finder.find_spec("toypkg.hot") is None
    assert "built for cpython-27.so" in finder.status("toypkg.hot").why


def test_make_setup_compiled_every_hot_module_from_its_current_source():
    # (make setup builds them; a module edited since then says so here: run `make speedups`)
    answers = speedups.status()
    assert [a.why for a in answers if not a.compiled] == []
    assert {a.module for a in answers} == set(speedups.HOT_MODULES)
    for module in speedups.HOT_MODULES:
        assert importlib.util.find_spec(module).origin.endswith(".so")


# Arrivals above what the guaranteed quotas sustain (24 teams x 8 GPUs over a mean job of 28/3
# GPUs for an hour: 21 jobs/h): queues back up, teams borrow and reclaim, jobs are preempted.
@pytest.mark.parametrize("fair_sharing, jobs, rate", [(False, 1500, "31"), (True, 500, "26")])
def test_the_compiled_engine_simulates_what_the_python_engine_does(tmp_path, fair_sharing, jobs, rate):
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    from generate_policy import generate

    policy = generate(tmp_path / "policy", 24, 10, 6)
    cluster = policy / "cluster.yaml"
    if not fair_sharing:
        cluster.write_text(cluster.read_text().replace("fairSharing: {enabled: true}", "fairSharing: {enabled: false}"))
    trace = tmp_path / "trace.csv"
    assert run_cli("trace", "synth", str(policy), "--jobs", str(jobs), "--seed", "7", "--rate", rate,
                   "--out", str(trace)).returncode == 0
    # (each run seen to load the engine and the event loop the way it claims)
    both = run_both(CLI, ["simulate", str(policy), "--trace", str(trace), "--format", "json"],
                    ("compiler.evaluator.scheduler", "compiler.simulate.driver"))
    compiled, python = both.compiled, both.python
    assert compiled.returncode == python.returncode == 0, compiled.stderr + python.stderr
    assert compiled.stdout == python.stdout
    summary = json.loads(compiled.stdout)
    assert sum(team["preemptionsSuffered"] for team in summary["teams"]) > 0  # (the run preempts)
    assert sum(team["borrowedGpuHours"] for team in summary["teams"]) > 0


def test_status_names_each_module_and_the_engine():
    out = subprocess.run([sys.executable, "-m", "compiler.speedups", "status"], capture_output=True,
                         text=True, check=True).stdout
    for module in speedups.HOT_MODULES:
        assert module in out
    assert out.splitlines()[-1] == speedups.summary()
    pure = subprocess.run([sys.executable, "-m", "compiler.speedups", "status"], capture_output=True, text=True,
                          check=True, env={"PATH": "/usr/bin", speedups.PURE_PYTHON_ENV: "1"}).stdout
    assert pure.splitlines()[-1] == f"engine: pure Python ({speedups.PURE_PYTHON_ENV} is set)"
    assert pure.count("is set") == len(speedups.HOT_MODULES) + 1


# A toy module with declarations: where it was loaded from and why, in a process of its own.
DECLARED_PY = "class Counter:\n    def __init__(self):\n        self.total = 0\n\n\ndef answer():\n    return 45\n"
DECLARED_PXD = "cdef class Counter:\n    cdef public object total\n"


def _toy_with_declarations(tmp_path: Path, pxd: str | None = DECLARED_PXD) -> Path:
    root = tmp_path / "toypkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "hot.py").write_text(DECLARED_PY)
    if pxd is not None:
        (root / "hot.pxd").write_text(pxd)
    build(("toypkg.hot",), root=root, out=root / "_compiled", jobs=1)
    return root


def test_a_module_whose_declarations_were_edited_or_removed_runs_as_python(tmp_path):
    root = _toy_with_declarations(tmp_path)
    where, _, why = _probe(root)
    assert where.endswith(EXTENSION_SUFFIXES[0]) and why == "compiled"

    declarations = root / "hot.pxd"
    declarations.write_text(DECLARED_PXD.replace("object total", "long long total"))
    where, answer, why = _probe(root)
    assert where == str(root / "hot.py") and answer == "45"
    assert why == "declarations (.pxd) changed since the build: running it as Python"

    declarations.unlink()
    where, _, why = _probe(root)
    assert where == str(root / "hot.py")
    assert why == "declarations (.pxd) removed since the build: running it as Python"

    # Built again without them: compiled, under another name than the binary with them.
    first = _binaries(root)
    build(("toypkg.hot",), root=root, out=root / "_compiled", jobs=1)
    assert _probe(root)[2] == "compiled" and _binaries(root) != first


def test_declarations_added_since_the_build_make_the_module_run_as_python(tmp_path):
    root = _toy_with_declarations(tmp_path, pxd=None)
    assert _probe(root)[2] == "compiled"
    (root / "hot.pxd").write_text(DECLARED_PXD)
    where, _, why = _probe(root)
    assert where == str(root / "hot.py")
    assert why == "declarations (.pxd) added since the build: running it as Python"


def test_a_manifest_without_declarations_is_not_trusted(tmp_path):
    root = _toy_with_declarations(tmp_path)
    manifest = root / "_compiled" / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["modules"]["toypkg.hot"]["declarations"]
    manifest.write_text(json.dumps(data))
    assert _probe(root)[2] == "the build did not record its declarations (.pxd): running it as Python"
    assert not speedups.build_is_current(("toypkg.hot",), root / "_compiled", root)


def test_a_failed_build_raises_its_error_and_changes_nothing(tmp_path):
    root = _toy_with_declarations(tmp_path)
    before = {path.name: path.read_bytes() for path in (root / "_compiled").iterdir()}
    assert speedups.build_is_current(("toypkg.hot",), root / "_compiled", root)
    (root / "hot.pxd").write_text("cdef class Counter:\n    cdef public no_such_type total\n")
    with pytest.raises(Exception) as raised:
        build(("toypkg.hot",), root=root, out=root / "_compiled", jobs=1)
    assert "Cython" in type(raised.value).__module__ or "compil" in str(raised.value).lower()
    assert {path.name: path.read_bytes() for path in (root / "_compiled").iterdir()} == before
    assert not speedups.build_is_current(("toypkg.hot",), root / "_compiled", root)


def test_make_fails_with_the_builds_error(tmp_path):
    """`make speedups` (and so `make setup`, `make test`) stops when the build fails, with the
    build's own message. (A stand-in interpreter that fails as a build without a C compiler
    does: the rule under test is the Makefile's, not the build.)"""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text("#!/bin/sh\necho \"speedups: build failed (CompileError: command 'cc' failed)\" >&2\nexit 1\n")
    python.chmod(0o755)
    stamp = tmp_path / "installed"
    stamp.write_text("")
    result = subprocess.run(["make", "--no-print-directory", "-C", str(REPO_ROOT), "speedups", f"BIN={bin_dir}",
                             f"STAMP={stamp}", f"COMPILED={tmp_path / 'manifest.json'}"],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "speedups: build failed (CompileError: command 'cc' failed)" in result.stderr


def test_build_if_stale_leaves_a_current_build_alone():
    before = (speedups.COMPILED_DIR / speedups.MANIFEST).read_bytes()
    result = subprocess.run([sys.executable, "-m", "compiler.speedups", "build", "--if-stale"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip().endswith(", current")
    assert (speedups.COMPILED_DIR / speedups.MANIFEST).read_bytes() == before


def test_status_as_json_says_what_this_process_runs():
    def status(env: dict) -> dict:
        import os

        return json.loads(subprocess.run([sys.executable, "-m", "compiler.speedups", "status", "--format", "json"],
                                         capture_output=True, text=True, check=True,
                                         env={**os.environ, **env}).stdout)

    compiled, python = status({}), status({speedups.PURE_PYTHON_ENV: "1"})
    assert [m["module"] for m in compiled["modules"]] == list(speedups.HOT_MODULES)
    assert all(m["compiled"] for m in compiled["modules"]) and compiled["engine"].startswith("engine: compiled")
    assert not any(m["compiled"] for m in python["modules"]) and python["engine"].startswith("engine: pure Python")


INSTALL_PROBE = """\
import sys
from pathlib import Path
from compiler import speedups
speedups.install(Path(sys.argv[1]))
import compiler.evaluator.tree as tree
print(tree.__file__.endswith(".py"), speedups.status()[0].why.startswith("not built"))
try:
    speedups.install(speedups.COMPILED_DIR)
except RuntimeError as error:
    print(error)
"""


def test_another_build_replaces_the_default_one_until_the_engine_is_imported(tmp_path):
    result = subprocess.run([sys.executable, "-c", INSTALL_PROBE, str(tmp_path / "empty")], capture_output=True,
                            text=True, check=True)
    first, refused = result.stdout.splitlines()
    assert first == "True True"
    assert refused.startswith("compiler.evaluator.")
    assert refused.endswith(" is imported already: another build can no longer be used")


def test_the_benchmarks_configurations_compile_what_each_compiled_module_cimports():
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    from bench_speedups import cimports, configurations

    graph = cimports(speedups.HOT_MODULES)
    assert any(graph.values())  # (some declarations cimport others)
    chosen = configurations(speedups.HOT_MODULES, None)
    assert len(chosen) == len(speedups.HOT_MODULES) + 2
    for configuration in chosen:
        for module in configuration.compiled:
            assert graph[module] <= configuration.compiled, (configuration.name, module)
    left_out = {c.name: set(speedups.HOT_MODULES) - c.compiled for c in chosen[2:]}
    assert all(module in left_out[name] for name, module in zip(left_out, speedups.HOT_MODULES))
