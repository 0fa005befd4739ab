"""Benchmark: compile a generated policy of N teams, 40 pools, 200 cohorts (issue 2).

Runs the real console script as a subprocess (as users and CI do), `--repeat` times per size, and
reports the median wall time, the median CPU time (both processes of a large compile: the parent
waits for its child, so the child's time is included) and the peak resident memory of the
compile process.

    python bench/bench_compile.py [--repeat 3] [--sizes 500 1000] [--jobs 1]

`--stages N` instead runs the compile of N teams stage by stage in this process (one process,
public stage functions) and prints each stage's CPU and wall time: where the time goes.

Each run compiles into a new, empty folder; nothing is deleted until the end. Why: on an ext4
file system without a journal (this project's VMs), creating a file first checks, one by one,
every inode of its group freed in the last 5 s, or in the last 305 s while that inode's block is
dirty or still cached, so a compile soon after anything deleted thousands of files (the previous
run's output, a test suite's temporary folders) spends ~3 s in the kernel creating its own 3,000.
A journaled file system never does this check. `--settle-disk` (root only) flushes the disk and
drops the kernel's clean caches once before the runs, so earlier deletions are forgotten;
`--delete-between` removes each output before the next run and keeps the effect in the figures;
`--recompile` compiles every run into the same folder, the way a user re-runs `compile`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_policy import WORKLOADS, generate  # noqa: E402

EXE = str(Path(sys.executable).parent / "kueue-policy")


def settle_disk() -> None:
    """Write back everything and drop clean caches: earlier deletions stop costing file creation."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as error:
        raise SystemExit(f"--settle-disk needs root: {error}") from None


def run_once(policy: Path, out: Path, jobs: int | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of one compile."""
    command = [EXE, "compile", str(policy), "--out", str(out), "--format", "json"]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"compile failed: {process.stderr.read().decode()}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # MiB (Linux reports KiB)


def stages(policy: Path, out: Path) -> None:
    """Each stage of one compile, in this process: CPU and wall seconds."""
    from compiler.stages import admissibility
    from compiler.stages.build import build
    from compiler.stages.emit import json_file, write_tree, yaml_file
    from compiler.core.errors import DiagnosticSink
    from compiler.language.load import discover_files, load_sources
    from compiler.stages.pipeline import ClusterArtifacts, CompileResult
    from compiler.stages.plan import plan
    from compiler.stages.report import build_report, render_markdown
    from compiler.stages.resolve import resolve
    from compiler.language.validate import validate_documents
    from compiler.verify import verify_objects

    sink = DiagnosticSink()
    rows: list[tuple[str, float, float]] = []

    def timed(name, function, *args):
        cpu, wall = time.process_time(), time.perf_counter()
        value = function(*args)
        rows.append((name, time.process_time() - cpu, time.perf_counter() - wall))
        return value

    documents = timed("load", lambda: load_sources(discover_files(policy), sink))
    cluster = timed("validate + resolve", lambda: resolve(validate_documents(documents, sink), sink))[0]
    placement = timed("plan", plan, cluster, sink)
    built = timed("build (templates -> objects)", build, cluster, placement)
    spec = cluster.spec
    problems = timed("verify", verify_objects, [o.obj for o in built.objects], spec.kubernetesVersion,
                     spec.kueueVersion)
    assert not problems and not sink.errors
    verdicts = timed("admissibility (admission engine)", admissibility.judge, cluster, built, placement)
    files = timed("render object files (YAML)", lambda: {o.relpath: yaml_file(o.obj, o.origin.file)
                                                         for o in built.objects})
    report = timed("report", build_report, cluster, placement, built, verdicts)
    files.update(timed("report files", lambda: {"report.json": json_file(report),
                                                "REPORT.md": render_markdown(report)}))
    artifacts = ClusterArtifacts(cluster.name, cluster, placement, built.objects, verdicts, report, files)
    timed("write files", write_tree, CompileResult({cluster.name: artifacts}, {}, []), out)
    for name, cpu, wall in rows:
        print(f"{name:<36} cpu {cpu:6.2f} s   wall {wall:6.2f} s")
    print(f"{'total':<36} cpu {sum(r[1] for r in rows):6.2f} s   wall {sum(r[2] for r in rows):6.2f} s "
          f"({len(built.objects)} objects, {len(verdicts)} declared workloads)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pools", type=int, default=40)
    parser.add_argument("--cohorts", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=None, help="passed to compile --jobs")
    parser.add_argument("--workloads", type=int, default=len(WORKLOADS), choices=range(len(WORKLOADS) + 1),
                        help="declared workloads per team")
    parser.add_argument("--stages", type=int, metavar="TEAMS", help="stage-by-stage breakdown of one compile")
    parser.add_argument("--delete-between", action="store_true",
                        help="remove each run's output before the next one (see the module docstring)")
    parser.add_argument("--recompile", action="store_true", help="every run compiles into the same folder")
    parser.add_argument("--settle-disk", action="store_true",
                        help="sync and drop the kernel's clean caches before the runs (root; see the module docstring)")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.settle_disk:
            settle_disk()
        if args.stages:
            stages(generate(Path(tmp) / "policy", args.stages, args.pools, args.cohorts, workloads=args.workloads),
                   Path(tmp) / "out")
            return
        for size in args.sizes:
            policy = generate(Path(tmp) / f"policy-{size}", size, args.pools, args.cohorts, workloads=args.workloads)
            runs = []
            for run in range(args.repeat):
                out = Path(tmp) / (f"out-{size}" if args.recompile or args.delete_between else f"out-{size}-{run}")
                if args.delete_between:
                    shutil.rmtree(out, ignore_errors=True)
                runs.append(run_once(policy, out, args.jobs))
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            peak = max(r[2] for r in runs)
            results[size] = (wall, peak)
            print(f"{size:>5} teams, {args.pools} pools, {args.cohorts} cohorts, {args.workloads} workloads/team: "
                  f"median {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {peak:.0f} MiB ({args.repeat} runs; "
                  f"walls {', '.join(f'{r[0]:.2f}' for r in runs)})")
    if len(results) >= 2:
        small, large = sorted(results)[:2]
        print(f"ratio {large}/{small} teams: {results[large][0] / results[small][0]:.2f}x time, "
              f"{results[large][1] / results[small][1]:.2f}x memory")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}, "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
