"""Benchmark the verify stage on a policy-sized output: N teams, each a ClusterQueue, a
LocalQueue and a namespace-scoped ResourceFlavor share (3 objects per team), plus cohorts,
flavors and priority classes.

    .venv/bin/python bench/bench_verify.py [--teams 1000] [--runs 5] [--only-cluster-queues]

Prints the median wall time of verify_objects over the runs (the first, cold run is reported
separately: it builds validators and compiles CEL programs).
"""

from __future__ import annotations

import argparse
import statistics
import time

from compiler.verify import verify_objects

API = "kueue.x-k8s.io/v1beta2"


def build_objects(teams: int) -> list[dict]:
    objects: list[dict] = []
    for model in ("h100", "a100", "l40s"):
        objects.append({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": model},
                        "spec": {"nodeLabels": {"nvidia.com/gpu.product": model.upper()},
                                 "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                  "effect": "NoSchedule"}]}})
    objects.append({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default-cpu"}, "spec": {}})
    objects.append({"apiVersion": API, "kind": "Cohort", "metadata": {"name": "org"}, "spec": {}})
    for d in range(20):
        objects.append({"apiVersion": API, "kind": "Cohort", "metadata": {"name": f"dept-{d}"},
                        "spec": {"parentName": "org"}})
    for prio, value in (("low", 100), ("normal", 1000), ("high", 10000)):
        objects.append({"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": prio},
                        "value": value, "description": f"{prio} priority"})
    for t in range(teams):
        name = f"team-{t:04d}"
        gpu_flavors = [{"name": m, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": str(4 + t % 5),
                                                   "borrowingLimit": "8", "lendingLimit": "2"}]}
                       for m in ("h100", "a100", "l40s")]
        objects.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
                        "spec": {"cohortName": f"dept-{t % 20}", "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": name}},
                            "queueingStrategy": "BestEffortFIFO",
                            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                           "borrowWithinCohort": {"policy": "LowerPriority",
                                                                  "maxPriorityThreshold": 100}},
                            "fairSharing": {"weight": "1"},
                            "resourceGroups": [
                                {"coveredResources": ["cpu", "memory"], "flavors": [
                                    {"name": "default-cpu", "resources": [{"name": "cpu", "nominalQuota": "64"},
                                                                         {"name": "memory", "nominalQuota": "512Gi"}]}]},
                                {"coveredResources": ["nvidia.com/gpu"], "flavors": gpu_flavors}]}})
        objects.append({"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": name},
                        "spec": {"clusterQueue": name}})
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": "gpu", "namespace": name},
                        "spec": {"spec": {"devices": {"requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}}}})
    return objects


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only-cluster-queues", action="store_true",
                        help="verify only the ClusterQueues (the heaviest kind), --teams of them")
    args = parser.parse_args()
    objects = build_objects(args.teams)
    if args.only_cluster_queues:
        objects = [o for o in objects if o["kind"] == "ClusterQueue"]
    start = time.perf_counter()
    problems = verify_objects(objects, "1.34", "0.19")
    cold = time.perf_counter() - start
    assert not problems, [p.describe() for p in problems[:5]]
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        verify_objects(objects, "1.34", "0.19")
        times.append(time.perf_counter() - start)
    print(f"objects={len(objects)} teams={args.teams} only_cqs={args.only_cluster_queues} cold={cold:.3f}s "
          f"median={statistics.median(times):.3f}s min={min(times):.3f}s runs={args.runs}")


if __name__ == "__main__":
    main()
