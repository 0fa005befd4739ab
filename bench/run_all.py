"""Run every benchmark in bench/ with its default settings (`make bench`).

Each script prints its own figures; BENCHMARKS.md records them with the command, date and machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failures = 0
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"== {script.name}", flush=True)
        failures += subprocess.run([sys.executable, str(script)]).returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
