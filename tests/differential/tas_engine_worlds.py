"""Full-engine Topology Aware Scheduling worlds for `make differential TAS=1` (`--tas-worlds`):
a placement world of tas_worlds.py (a Topology, a TAS flavor, Nodes regular or irregular with
tainted, not-Ready and unschedulable ones, Workloads in every request form, running Workloads
already placed) grown into a world the whole admission engine decides: quota that is sometimes
short, a second ClusterQueue sharing the TAS flavor's nodes (so placements made in one
queue's nomination collide within a scheduling cycle), a plain flavor beside the TAS one (a queue
that is not TAS-only: pod sets without a request use the plain flavor), and more Workloads.

Its own random stream (seeded "tas-engine-S-I"), so the ordinary worlds' draws are unchanged."""

from __future__ import annotations

import random

import yaml

from .tas_worlds import GPU, TasWorkload, dump_tas_world, random_request, tas_world


def tas_engine_world(seed: int, index: int) -> list[dict]:
    base = tas_world(seed, index)
    rng = random.Random(f"tas-engine-{seed}-{index}")
    extra = [TasWorkload(f"wl-x{i}", random_request(rng, base.flavor.levels)) for i in range(rng.choice((0, 1, 3)))]
    base.workloads = base.workloads + extra
    objects = [o for o in yaml.safe_load_all(dump_tas_world(base)) if o]
    queue = next(o for o in objects if o["kind"] == "ClusterQueue")
    group = queue["spec"]["resourceGroups"][0]
    if rng.random() < 0.35:
        # Short quota: the TAS step then also runs on a Preempt assignment (on empty nodes).
        needed = sum(w.request.count * w.request.per_pod[GPU] for w in base.workloads)
        group["flavors"][0]["resources"][1]["nominalQuota"] = max(1, int(needed * rng.uniform(0.2, 0.9)))
    if rng.random() < 0.2:
        objects.insert(1, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                           "metadata": {"name": "plain"}, "spec": {"nodeLabels": {"pool": "cpu"}}})
        group["flavors"].append({"name": "plain", "resources": [{"name": "cpu", "nominalQuota": 100000},
                                                                {"name": GPU, "nominalQuota": 100000}]})
    if rng.random() < 0.5:
        other = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq-b"},
                 "spec": {"namespaceSelector": {}, "resourceGroups": [
                     {"coveredResources": ["cpu", GPU], "flavors": [
                         {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": 100000},
                                                       {"name": GPU, "nominalQuota": 100000}]}]}]}}
        local = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": "lq-b", "namespace": "default"}, "spec": {"clusterQueue": "cq-b"}}
        at = objects.index(queue) + 1
        objects[at:at] = [other, local]
        for obj in objects:
            if obj["kind"] == "Workload" and "status" not in obj and rng.random() < 0.5:
                obj["spec"]["queueName"] = "lq-b"
    return objects


