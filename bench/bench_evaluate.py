"""Benchmark of the admission engine (compiler/evaluator).

Generates a cluster: 500 ClusterQueues in 50 cohorts on two levels (5 roots x 9 children, plus
the roots themselves), 8 ResourceFlavors (cpu/memory on 4, GPUs on 4), and N pending Workloads
(default 20,000) with mixed sizes and priorities; some queues preempt within the queue and
reclaim within the cohort. Runs `evaluate` until quiescent and reports admission decisions per
second (a decision = one head nominated and processed in a cycle), admissions, cycles, peak RSS,
and the time ratio of 2N to N workloads.

    .venv/bin/python bench/bench_evaluate.py            # 20k and 40k, 3 runs each, medians
    .venv/bin/python bench/bench_evaluate.py --matrix --every-queue --sizes 2000 4000 --runs 1
                                                         # every preemption setting on every queue
    .venv/bin/python bench/bench_evaluate.py --one 20000  # one run, JSON line (used internally)

Times are given as wall and CPU time of the evaluation (this machine's 2 cores are shared:
CPU time is the figure that does not depend on the neighbours); decisions/s uses CPU time.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CPU_FLAVORS = ["cpu-a", "cpu-b", "cpu-c", "cpu-d"]
GPU_FLAVORS = ["h100", "a100", "l40s", "t4"]


def generate(workloads: int, queues: int = 500, seed: int = 7, reclaim: str = "LowerPriority",
             within: str = "LowerPriority", every_queue: bool = False, fair_sharing: bool = False) -> list[dict]:
    """The benchmark world. By default a third of the queues preempt (`within` inside the queue,
    `reclaim` in the cohort) and the others never do; `every_queue` gives every queue that
    policy (issue 8's world: LowerPriority/Any everywhere); `fair_sharing` adds Kueue's
    Configuration with fair sharing on. Same arguments, same documents."""
    rnd = random.Random(seed)
    docs: list[dict] = []
    if fair_sharing:
        docs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                     "fairSharing": {"enable": True}})
    for flavor in CPU_FLAVORS + GPU_FLAVORS:
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                     "metadata": {"name": flavor}, "spec": {"nodeLabels": {"pool": flavor}}})
    roots = [f"org-{i}" for i in range(5)]
    children = [f"{root}-team-{j}" for root in roots for j in range(9)]
    for root in roots:
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": root},
                     "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                         {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]}
                         for f in GPU_FLAVORS]}]}})
    for child in children:
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": child},
                     "spec": {"parentName": child.rsplit("-team-", 1)[0]}})
    for i in range(queues):
        cohort = children[i % len(children)]
        preempting = every_queue or i % 3 == 0
        spec = {
            "cohortName": cohort, "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": within if preempting else "Never",
                           "reclaimWithinCohort": reclaim if preempting else "Never"},
            "resourceGroups": [
                {"coveredResources": ["cpu", "memory"], "flavors": [
                    {"name": f, "resources": [
                        {"name": "cpu", "nominalQuota": str(rnd.choice([32, 64, 96])),
                         **({"borrowingLimit": "32"} if i % 2 else {})},
                        {"name": "memory", "nominalQuota": f"{rnd.choice([256, 512])}Gi",
                         **({"lendingLimit": "128Gi"} if i % 4 == 1 else {})}]} for f in CPU_FLAVORS]},
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                    {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": str(rnd.choice([4, 8, 16])),
                                               **({"lendingLimit": "4"} if i % 5 == 2 else {})}]}
                    for f in GPU_FLAVORS]},
            ]}
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                     "metadata": {"name": f"cq-{i:03d}"}, "spec": spec})
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                     "metadata": {"name": "jobs", "namespace": f"ns-{i:03d}"}, "spec": {"clusterQueue": f"cq-{i:03d}"}})
    for w in range(workloads):
        gpus = rnd.choice([0, 0, 1, 2, 4, 8])
        count = rnd.choice([1, 1, 2, 4, 8])
        requests = {"cpu": str(rnd.choice([1, 2, 4, 8])), "memory": f"{rnd.choice([4, 8, 16, 32])}Gi"}
        if gpus:
            requests["nvidia.com/gpu"] = str(gpus)
        spec = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
        if rnd.random() < 0.2:
            spec["nodeSelector"] = {"pool": rnd.choice(GPU_FLAVORS)}
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                     "metadata": {"name": f"wl-{w:06d}", "namespace": f"ns-{rnd.randrange(queues):03d}",
                                  "creationTimestamp": f"2026-01-{1 + w // 86400 % 28:02d}T{w // 3600 % 24:02d}:"
                                                       f"{w // 60 % 60:02d}:{w % 60:02d}Z"},
                     "spec": {"queueName": "jobs", "priority": rnd.choice([0, 0, 10, 100]),
                              "podSets": [{"name": "main", "count": count, "template": {"spec": spec}}]}})
    return docs


def write_world(path: str, workloads: int, **options) -> None:
    """The world as one multi-document YAML file (what `kueue-policy evaluate` and
    `kueue-oracle` read); the same arguments give the same bytes."""
    import yaml
    with open(path, "w") as out:
        yaml.safe_dump_all(generate(workloads, **options), out, sort_keys=True)


SETTINGS = [f"{w}/{r}" for w in ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
            for r in ("Never", "LowerPriority", "Any")] + ["fair-sharing"]


def options(setting: str, every_queue: bool) -> dict:
    """generate()'s arguments for a preemption setting "withinClusterQueue/reclaimWithinCohort"
    (or "fair-sharing": LowerPriority/Any with fair sharing on)."""
    if setting == "fair-sharing":
        return {"within": "LowerPriority", "reclaim": "Any", "fair_sharing": True, "every_queue": every_queue}
    within, reclaim = setting.split("/")
    return {"within": within, "reclaim": reclaim, "every_queue": every_queue}


def one(workloads: int, setting: str, every_queue: bool) -> dict:
    from compiler.evaluator import load_manifests
    from compiler.evaluator.result import EvaluationResult
    from compiler.evaluator.engine import Engine
    from compiler.runtime.garbage_collection import few_collections

    docs = generate(workloads, **options(setting, every_queue))
    start = time.perf_counter()
    state = load_manifests(docs)
    loaded = time.perf_counter()
    cpu = time.process_time()
    engine = Engine(state)
    with few_collections():  # as evaluate() runs it
        engine.run(None)
    evaluated = time.perf_counter()
    cpu = time.process_time() - cpu
    result = EvaluationResult(engine)
    statuses: dict[str, int] = {}
    for outcome in result.outcomes.values():
        statuses[outcome.status] = statuses.get(outcome.status, 0) + 1
    return {"workloads": workloads, "setting": setting, "load_s": loaded - start,
            "evaluate_s": evaluated - loaded, "evaluate_cpu_s": cpu,
            "decisions": engine.decisions, "cycles": engine.cycle, "statuses": statuses,
            "converged": engine.converged,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _runs(size: int, setting: str, every_queue: bool, runs: int) -> list[dict]:
    command = [sys.executable, __file__, "--one", str(size), "--setting", setting]
    if every_queue:
        command.append("--every-queue")
    return [json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
            for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", type=int)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20000, 40000])
    parser.add_argument("--setting", default="LowerPriority/LowerPriority", choices=SETTINGS,
                        help="withinClusterQueue/reclaimWithinCohort of the preempting queues")
    parser.add_argument("--every-queue", action="store_true",
                        help="every queue preempts (default: a third of them, the others never do)")
    parser.add_argument("--matrix", action="store_true", help="every setting, at each size")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.setting, args.every_queue)))
        return
    from compiler import speedups

    print(speedups.summary())  # (the child processes import the same modules)
    for setting in (SETTINGS if args.matrix else [args.setting]):
        medians = {}
        for size in args.sizes:
            runs = _runs(size, setting, args.every_queue, args.runs)
            evaluate_s = statistics.median(r["evaluate_s"] for r in runs)
            cpu_s = statistics.median(r["evaluate_cpu_s"] for r in runs)
            last = runs[-1]
            medians[size] = cpu_s
            print(f"{setting} {size} workloads: evaluate {evaluate_s:.2f}s wall, {cpu_s:.2f}s CPU "
                  f"(median of {args.runs}), load {statistics.median(r['load_s'] for r in runs):.2f}s, "
                  f"{last['decisions']} decisions in {last['cycles']} cycles = "
                  f"{last['decisions'] / cpu_s:,.0f} decisions/s (CPU), converged {last['converged']}, "
                  f"statuses {last['statuses']}, peak RSS {max(r['peak_rss_mib'] for r in runs):.0f} MiB",
                  flush=True)
        if len(args.sizes) == 2:
            a, b = args.sizes
            print(f"{setting} CPU time ratio {b}/{a} workloads: {medians[b] / medians[a]:.2f}", flush=True)


if __name__ == "__main__":
    main()
