"""Benchmark: which of the engine's hot modules earn compiling (compiler/speedups).

Builds every module of `compiler.speedups.HOT_MODULES` once (or reuses `compiler/_compiled/`
when it is current), then times `evaluate` (bench_evaluate.py's world) and `simulate`
(bench_simulate.py's policy and a synthetic trace) with:

- every module compiled, and none (pure Python);
- every module compiled but one, M (and the modules whose declarations cimport M, which cannot
  run compiled beside M's Python classes): what compiling M saves is that run's time less the
  all-compiled time.

Each configuration is a manifest of the modules it compiles, over the same binaries, run in a
child process that installs its finder before anything imports the engine and reports which
modules it loaded compiled (checked against the configuration: a run that did not run as
claimed stops the benchmark). Figures are CPU seconds of the evaluation or simulation, median
of `--runs` rounds (each round runs every configuration once). Works for whatever modules HOT_MODULES lists and whatever their .pxd cimport.

    .venv/bin/python bench/bench_speedups.py [--workloads 20000] [--jobs 25000] [--runs 3]
                                             [--only evaluate|simulate] [--modules M ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from compiler import speedups  # noqa: E402

_CIMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+cimport|cimport\s+([\w.]+))", re.MULTILINE)


@dataclass(frozen=True)
class Configuration:
    name: str
    compiled: frozenset[str]


@dataclass(frozen=True)
class Timing:
    evaluate_cpu_s: float | None
    simulate_cpu_s: float | None


def cimports(modules: tuple[str, ...]) -> dict[str, set[str]]:
    """For each module, the hot modules its declarations cimport."""
    graph = {}
    for module in modules:
        declarations = speedups.declarations_path(module)
        text = declarations.read_text() if declarations.exists() else ""
        graph[module] = {a or b for a, b in _CIMPORT.findall(text)} & set(modules)
    return graph


def dependents(module: str, graph: dict[str, set[str]]) -> set[str]:
    """`module` and every module whose declarations cimport it, directly or not."""
    found, grew = {module}, True
    while grew:
        more = {m for m, uses in graph.items() if uses & found} - found
        found |= more
        grew = bool(more)
    return found


def configurations(modules: tuple[str, ...], only: list[str] | None) -> list[Configuration]:
    graph = cimports(modules)
    every = frozenset(modules)
    chosen = [Configuration("all compiled", every), Configuration("pure Python", frozenset())]
    for module in only or modules:
        left_out = dependents(module, graph)
        extra = sorted(m.rsplit(".", 1)[1] for m in left_out - {module})
        name = f"all but {module.rsplit('.', 1)[1]}" + (f" (and {', '.join(extra)})" if extra else "")
        chosen.append(Configuration(name, every - left_out))
    return chosen


def _binaries(scratch: Path) -> Path:
    """A build of every hot module: compiler/_compiled/ when current, else a fresh one."""
    if speedups.build_is_current():
        return speedups.COMPILED_DIR
    from compiler.speedups.build import build

    return build(out=scratch / "full")


def _manifest_dir(full: Path, configuration: Configuration, scratch: Path) -> Path:
    """A build directory holding `configuration`'s modules only (links to the full build's)."""
    data = json.loads((full / speedups.MANIFEST).read_text())
    folder = scratch / re.sub(r"\W+", "-", configuration.name)
    folder.mkdir()
    kept = {m: e for m, e in data["modules"].items() if m in configuration.compiled}
    for entry in kept.values():
        (folder / entry["binary"]).symlink_to(full / entry["binary"])
    (folder / speedups.MANIFEST).write_text(json.dumps({**data, "modules": kept}, sort_keys=True))
    return folder


# The child: the configuration's build installed first, then one workload, then what it loaded.
CHILD = """\
import contextlib, io, json, sys, time
from pathlib import Path
from compiler import speedups
speedups.install(Path(sys.argv[1]))
workload = sys.argv[2]
if workload == "evaluate":
    sys.path.insert(0, sys.argv[3])
    from bench_evaluate import one
    cpu = one(int(sys.argv[4]), "LowerPriority/LowerPriority", False)["evaluate_cpu_s"]
else:
    from compiler.cli import main
    started = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        main(["simulate", sys.argv[3], "--trace", sys.argv[4], "--format", "json"], standalone_mode=False)
    cpu = time.process_time() - started
compiled = sorted(a.module for a in speedups.status() if a.compiled)
print(json.dumps({"cpu_s": cpu, "compiled": compiled}))
"""


def _run(folder: Path, configuration: Configuration, args: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if k != speedups.PURE_PYTHON_ENV}
    result = subprocess.run([sys.executable, "-c", CHILD, str(folder), *args], capture_output=True, text=True,
                            env=env, cwd=BENCH.parent)
    if result.returncode != 0:
        raise SystemExit(f"{configuration.name}: {' '.join(args[:1])} failed:\n{result.stderr}")
    answer = json.loads(result.stdout.splitlines()[-1])
    if set(answer["compiled"]) != configuration.compiled:
        raise SystemExit(f"{configuration.name}: ran with {answer['compiled']} compiled, not as configured")
    return answer["cpu_s"]


def _simulate_inputs(scratch: Path, jobs: int, teams: int) -> tuple[Path, Path]:
    """bench_simulate.py's policy (fair sharing on) and a trace at 0.6 of the quotas' rate."""
    from generate_policy import generate

    policy = generate(scratch / "policy", teams, 10, 20)
    trace = scratch / "trace.csv"
    rate = 0.6 * teams * 8 / (28 / 3)
    subprocess.run([str(Path(sys.executable).parent / "kueue-policy"), "trace", "synth", str(policy), "--jobs", str(jobs),
                    "--seed", "1", "--rate", f"{rate:.3f}", "--out", str(trace)], check=True, cwd=BENCH.parent)
    return policy, trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=20_000, help="evaluate: bench_evaluate.py's world size")
    parser.add_argument("--jobs", type=int, default=25_000, help="simulate: trace length")
    parser.add_argument("--teams", type=int, default=200, help="simulate: teams of the generated policy")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=["evaluate", "simulate"], help="one benchmark of the two")
    parser.add_argument("--modules", nargs="+", choices=speedups.HOT_MODULES, metavar="MODULE",
                        help="leave out only these modules, one at a time (default: each hot module)")
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.python_implementation()} "
          f"{platform.python_version()}; evaluate {args.workloads} workloads, simulate {args.jobs} jobs "
          f"({args.teams} teams); CPU s, median of {args.runs}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-speedups-") as tmp:
        scratch = Path(tmp)
        full = _binaries(scratch)
        policy, trace = _simulate_inputs(scratch, args.jobs, args.teams) if args.only != "evaluate" else (None, None)
        chosen = configurations(speedups.HOT_MODULES, args.modules)
        folders = [_manifest_dir(full, configuration, scratch) for configuration in chosen]
        evaluate: dict[str, list[float]] = {c.name: [] for c in chosen}
        simulate: dict[str, list[float]] = {c.name: [] for c in chosen}
        # Round after round of every configuration (not each one's runs in a row): a neighbour's
        # load on a shared machine then weighs on every configuration alike.
        for _ in range(args.runs):
            for configuration, folder in zip(chosen, folders):
                if args.only != "simulate":
                    evaluate[configuration.name].append(
                        _run(folder, configuration, ["evaluate", str(BENCH), str(args.workloads)]))
                if args.only != "evaluate":
                    simulate[configuration.name].append(
                        _run(folder, configuration, ["simulate", str(policy), str(trace)]))
        timings = [Timing(_median(evaluate[c.name]), _median(simulate[c.name])) for c in chosen]
        for configuration, timing in zip(chosen, timings):
            print(_row(configuration, timing, timings[0]), flush=True)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None

def _row(configuration: Configuration, timing: Timing, reference: Timing) -> str:
    """One configuration's figures, and how much slower than every module compiled."""
    cells = []
    for label, value, base in (("evaluate", timing.evaluate_cpu_s, reference.evaluate_cpu_s),
                               ("simulate", timing.simulate_cpu_s, reference.simulate_cpu_s)):
        if value is not None:
            cells.append(f"{label} {value:6.2f} s ({(value / base - 1) * 100:+5.1f}%)")
    return f"{len(configuration.compiled):2} compiled  " + "  ".join(cells) + f"  {configuration.name}"


if __name__ == "__main__":
    main()
