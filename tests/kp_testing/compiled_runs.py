"""One program run twice, with the compiled engine and as Python, each run checked to have run
the way it claims: the compiled run's hot modules loaded from their extension modules, the
Python run's from their `.py` sources (KUEUE_POLICY_PURE_PYTHON=1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from compiler import speedups

TESTS = Path(__file__).resolve().parent.parent
_MARK = "compiled-runs: loaded "

# Run first in the child: at exit, the files its hot modules were loaded from, on stderr.
_PRELUDE = f"""\
import atexit, json, sys
from compiler import speedups as _speedups

def _loaded():
    modules = {{m: sys.modules[m].__file__ for m in _speedups.HOT_MODULES if m in sys.modules}}
    print("\\n{_MARK}" + json.dumps(modules, sort_keys=True), file=sys.stderr)

atexit.register(_loaded)
"""

# The console script, in that child (its arguments after the program's).
CLI = "from compiler.cli import main\nmain(args=sys.argv[1:], prog_name='kueue-policy')\n"


@dataclass(frozen=True)
class Run:
    stdout: str
    stderr: str
    returncode: int
    loaded: dict[str, str]    # hot module -> the file it was loaded from


@dataclass(frozen=True)
class BothRuns:
    compiled: Run
    python: Run


def run(program: str, args: list[str], pure_python: bool, env: dict | None = None) -> Run:
    environment = {**os.environ, **(env or {})}
    environment.pop(speedups.PURE_PYTHON_ENV, None)
    if pure_python:
        environment[speedups.PURE_PYTHON_ENV] = "1"
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), environment.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", _PRELUDE + program, *args], capture_output=True, text=True,
                            env=environment, timeout=900)
    report = [line for line in result.stderr.splitlines() if line.startswith(_MARK)]
    assert report, result.stderr
    stderr = result.stderr[:result.stderr.rindex("\n" + _MARK)]
    return Run(result.stdout, stderr, result.returncode, json.loads(report[-1][len(_MARK):]))


def run_both(program: str, args: list[str], needs: tuple[str, ...], env: dict | None = None) -> BothRuns:
    """`program` (Python source; its arguments `args`) run compiled and as Python. `needs`: hot
    modules the program imports, so both runs are seen to load them the way they claim."""
    compiled, python = run(program, args, False, env), run(program, args, True, env)
    for answer, suffix in ((compiled, EXTENSION_SUFFIXES[0]), (python, ".py")):
        assert set(needs) <= set(answer.loaded), (set(needs) - set(answer.loaded), answer.stderr)
        wrong = {module: where for module, where in answer.loaded.items() if not where.endswith(suffix)}
        assert wrong == {}, f"expected every hot module from *{suffix}: {wrong}"
    return BothRuns(compiled, python)
