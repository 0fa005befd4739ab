"""The one YAML reader (compiler.core.yamlio: libyaml + YAML 1.2 core resolvers, keys as written,
duplicate keys refused) against PyYAML's stock libyaml loader (YAML 1.1) it replaced, on the
compiled example's objects: the template parse-back path of every compile. CPU time of this
process (time.process_time), so a shared machine's load does not count.

    .venv/bin/python bench/bench_yaml.py [--copies 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import yaml

from compiler.core import yamlio

ROOT = Path(__file__).resolve().parent.parent


def _time(function, texts: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for text in texts:
            function(text)
        runs.append(time.process_time() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    texts = [p.read_text() for p in sorted((ROOT / "out").rglob("*.yaml"))] * args.copies
    stock = _time(lambda t: yaml.load(t, Loader=yaml.CSafeLoader), texts, args.repeat)
    ours = _time(yamlio.load, texts, args.repeat)
    data = [yamlio.load(t) for t in texts]
    dump = _time(yamlio.dump, data, args.repeat)
    print(f"{len(texts)} documents, median of {args.repeat}")
    print(f"  PyYAML CSafeLoader (YAML 1.1): {stock:.3f} s")
    print(f"  yamlio.load (YAML 1.2 core):   {ours:.3f} s  ({ours / stock:.2f}x)")
    print(f"  yamlio.dump:                   {dump:.3f} s")


if __name__ == "__main__":
    main()
