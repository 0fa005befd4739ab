"""Benchmark `kueue-policy sandbox up` and `down` (the sandbox must be built: `make sandbox`).

    .venv/bin/python bench/bench_sandbox.py [--runs 5] [--out out/gpu-east]

Each run starts a sandbox in a fresh temporary folder (with the compiled tree applied when
--out is given), then stops it; prints each run's wall times and the medians. The CLI runs as a
subprocess, as a user runs it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = Path(sys.executable).parent / "kueue-policy"


def one_run(tree: Path | None) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp(prefix="kp-bench-sandbox-")) / "sandbox"
    args = [str(CLI), "sandbox", "up", "--dir", str(folder)] + (["--out", str(tree)] if tree else [])
    began = time.monotonic()
    up = subprocess.run(args, capture_output=True, text=True)
    up_seconds = time.monotonic() - began
    began = time.monotonic()
    down = subprocess.run([str(CLI), "sandbox", "down", "--dir", str(folder)], capture_output=True, text=True)
    down_seconds = time.monotonic() - began
    shutil.rmtree(folder.parent, ignore_errors=True)
    if up.returncode != 0 or down.returncode != 0:
        raise SystemExit(f"sandbox failed:\n{up.stderr}\n{down.stderr}")
    return up_seconds, down_seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="a compiled cluster folder to apply")
    args = parser.parse_args()
    ups, downs = [], []
    for run in range(args.runs):
        up, down = one_run(args.out)
        ups.append(up)
        downs.append(down)
        print(f"run {run + 1}: up {up:.1f} s, down {down:.1f} s", flush=True)
    print(f"median over {args.runs}: up {statistics.median(ups):.1f} s, down {statistics.median(downs):.1f} s"
          f"{' with ' + str(args.out) if args.out else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
