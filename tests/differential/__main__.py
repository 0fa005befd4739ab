"""`python -m differential --seed S -n N [--oracle BIN]` (run from tests/, as `make differential`
does): N random worlds from seed S through the Python engine and Kueue's own scheduler
(kueue-oracle). Every disagreement is shrunk to a minimal valid world; the detail (differences,
both JSON outputs on the minimal world, its YAML, and the original world's) goes to the JSON file
named on stdout, each minimal world also to a YAML file beside it.

Against Kueue, a disagreeing world is run through kueue-oracle a few more times: where Kueue
itself answers it in more than one way (Go's map order breaking a tie) and one of its answers is
the engine's, the world counts as agreeing, and is named on a line of its own (`Kueue varies`).
The last line is always `differential: K/N worlds agree`; the exit code is 0 only when K = N.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .engines import OracleEngine, PERTURBATIONS, perturbed_engine, python_engine
from .harness import (
    COMPARED, COMPARED_TAS, disagreeing_worlds, generated, kueue_varies_and_once_agrees, run_world, shrink,
)
from .tas_harness import tas_main
from .worlds import dump

REPO = Path(__file__).resolve().parents[2]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make differential", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("-n", "--worlds", type=int, required=True)
    parser.add_argument("--start", type=int, default=0, help="index of the first world (default 0)")
    parser.add_argument("--oracle", type=Path, default=REPO / "oracle" / "bin" / "kueue-oracle")
    parser.add_argument("--against", default="kueue",
                        help="kueue (the oracle, default), python (self-check) or perturbed:NAME "
                             f"with NAME in {', '.join(PERTURBATIONS)} (proves the harness finds differences)")
    parser.add_argument("--detail", type=Path, default=None,
                        help="detail file (default build/differential/seed-S-n-N.json)")
    parser.add_argument("--shrink-seconds", type=float, default=300,
                        help="time budget to shrink one disagreement")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes comparing worlds")
    parser.add_argument("--max-shrink", type=int, default=20,
                        help="shrink at most this many disagreements (the rest are kept whole)")
    parser.add_argument("--strict", action="store_true",
                        help="count a world Kueue answers more than one way as a disagreement too")
    parser.add_argument("--tas-worlds", action="store_true",
                        help="Topology Aware Scheduling worlds (tas_engine_worlds.py) through the whole "
                             "engine, comparing topologyAssignment and the reason too")
    parser.add_argument("--tas", action="store_true",
                        help="topology placement worlds (tas_worlds.py): compiler.evaluator.topology "
                             "against Kueue's TAS in the oracle")
    return parser.parse_args(argv)


def _reference(args: argparse.Namespace):
    if args.against == "kueue":
        if not args.oracle.is_file():
            sys.exit(f"differential: {args.oracle} not found: build it with `make oracle` (needs go), "
                     "or pass --oracle PATH")
        return OracleEngine(args.oracle)
    if args.against == "python":
        return python_engine
    name = args.against.removeprefix("perturbed:")
    if name not in PERTURBATIONS:
        sys.exit(f"differential: unknown --against {args.against!r}")
    return perturbed_engine(name)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    reference = _reference(args)
    if args.tas:
        return tas_main(args.seed, args.start, args.worlds, reference)
    kind = "tas-" if args.tas_worlds else ""
    detail = args.detail or REPO / "build" / "differential" / f"{kind}seed-{args.seed}-n-{args.worlds}.json"
    started = time.monotonic()
    disagreements = []
    kueue_varies: list[int] = []
    indices = range(args.start, args.start + args.worlds)
    fields = COMPARED_TAS if args.tas_worlds else COMPARED
    for index, differences in disagreeing_worlds(args.seed, indices, reference, args.jobs, args.tas_worlds):
        if args.against == "kueue" and not args.strict and \
                kueue_varies_and_once_agrees(args.seed, index, reference, args.tas_worlds):
            kueue_varies.append(index)
            print(f"world {args.seed}/{index}: Kueue varies (another kueue-oracle run gives the engine's answer)",
                  flush=True)
            continue
        objects = generated(args.seed, index, args.tas_worlds)
        entry = {"seed": args.seed, "index": index, "differences": differences}
        if len(disagreements) < args.max_shrink:
            minimal = shrink(objects, python_engine, reference, args.shrink_seconds, fields)
            final = run_world(dump(minimal), python_engine, reference, fields)
            entry.update(minimalDifferences=final.differences, python=final.left, kueue=final.right,
                         minimalWorld=dump(minimal))
        entry["world"] = dump(objects)
        disagreements.append(entry)
        print(f"world {args.seed}/{index}: {len(differences)} difference(s), first: {differences[0]}", flush=True)
    elapsed = time.monotonic() - started
    if disagreements:
        _write_detail(args, detail, disagreements)
    agree = args.worlds - len(disagreements)
    print(f"differential: {args.worlds} worlds in {elapsed:.1f}s ({args.against}, {args.jobs} job(s))")
    if kueue_varies:
        print(f"differential: {len(kueue_varies)} of the agreeing worlds are answered more than one way by Kueue "
              f"itself, the engine's answer among them: {', '.join(map(str, kueue_varies))}")
    print(f"differential: {agree}/{args.worlds} worlds agree")
    return 0 if agree == args.worlds else 1


def _write_detail(args: argparse.Namespace, detail: Path, disagreements: list[dict]) -> None:
    detail.parent.mkdir(parents=True, exist_ok=True)
    folder = detail.with_suffix("")
    folder.mkdir(exist_ok=True)
    for entry in disagreements:
        if "minimalWorld" in entry:
            (folder / f"world-{entry['index']}.min.yaml").write_text(entry["minimalWorld"])
    detail.write_text(json.dumps({"seed": args.seed, "worlds": args.worlds, "start": args.start,
                                  "against": args.against, "disagreements": disagreements},
                                 indent=2, sort_keys=True) + "\n")
    print(f"differential: detail of {len(disagreements)} disagreement(s) in {detail} "
          f"(minimal worlds in {folder}/)")


if __name__ == "__main__":
    sys.exit(main())
