"""Full-engine Topology Aware Scheduling worlds for `make differential TAS=1` (`--tas-worlds`):
a placement world of tas_worlds.py (a Topology, a TAS flavor, Nodes regular or irregular with
tainted, not-Ready and unschedulable ones, Workloads in every request form, running Workloads
already placed) grown into a world the whole admission engine decides: quota that is sometimes
short, a second ClusterQueue sharing the TAS flavor's nodes (so placements made in one
queue's nomination collide within a scheduling cycle), a plain flavor beside the TAS one (a queue
that is not TAS-only: pod sets without a request use the plain flavor), and more Workloads.

Most worlds also preempt (`_preempting`): a withinClusterQueue policy, priorities (plain or
from WorkloadPriorityClasses), more running Workloads placed on the nodes as the victims, and
sometimes a cohort with the second queue borrowing (reclaimWithinCohort) and fair sharing. A
head whose pods do not fit the nodes then asks Kueue's preemption for victims whose removal
makes its pods placeable (preemption.go workloadFits), not only for quota.

Its own random stream (seeded "tas-engine-S-I"), so the ordinary worlds' draws are unchanged."""

from __future__ import annotations

import random

import yaml

from .tas_worlds import GPU, TasWorkload, _held_yaml, dump_tas_world, random_held, random_request, tas_world
from .worlds import CONFIG_API, V1BETA2


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
    # (drawn after every draw above: a world without preemption is the world it was)
    if rng.random() < 0.65:
        _preempting(rng, objects, base)
    return objects


PRIORITY_CLASSES = {"low": 10, "high": 1000}


def _preempting(rng: random.Random, objects: list[dict], base) -> None:
    """The world with preemption: policies, priorities, and running Workloads to preempt."""
    queue = next(o for o in objects if o["kind"] == "ClusterQueue")
    other = next((o for o in objects if o["kind"] == "ClusterQueue" and o is not queue), None)
    policy = {"withinClusterQueue": rng.choice(("LowerPriority", "LowerOrNewerEqualPriority"))}
    queue["spec"]["preemption"] = policy
    classes = rng.random() < 0.5
    if classes:
        objects[1:1] = [{"apiVersion": V1BETA2, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                         "value": value} for name, value in PRIORITY_CLASSES.items()]
    extra = [_held(h, f"held-p{i}") for i, h in enumerate(random_held(rng, base.flavor.levels, base.nodes))]
    extra += [_held(h, f"held-q{i}") for i, h in enumerate(random_held(rng, base.flavor.levels, base.nodes))]
    first_pending = next(i for i, o in enumerate(objects) if o["kind"] == "Workload" and "status" not in o)
    objects[first_pending:first_pending] = extra
    running = [o for o in objects if o["kind"] == "Workload" and "status" in o]
    for order, obj in enumerate(running):
        # Distinct reservation times and UIDs: Kueue's candidate order ends on them.
        obj["metadata"]["uid"] = f"00000000-0000-4000-8000-{order + 1:012d}"
        # Distinct creation times too: LowerOrNewerEqualPriority lets a requeued victim preempt
        # an equal-priority workload created after it, and Kueue compares the timestamps
        # strictly, where kueue-oracle must move same-second Workloads apart (its heap order
        # would otherwise fall to Go's map order), making one of two twins "newer".
        obj["metadata"]["creationTimestamp"] = f"2025-12-31T22:{order:02d}:00Z"
        for condition in obj["status"]["conditions"]:
            condition["lastTransitionTime"] = f"2025-12-31T23:{order:02d}:00Z"
        _set_priority(rng, obj, classes, (0, 10, 10, 100))
    for order, obj in enumerate(o for o in objects if o["kind"] == "Workload" and "status" not in o):
        obj["metadata"]["uid"] = f"00000000-0000-4000-8000-{order + 100:012d}"
        _set_priority(rng, obj, classes, (0, 10, 100, 1000, 1000))
    if other is not None and rng.random() < 0.6:
        # A cohort: the second queue lends nothing of its own and borrows the first's quota,
        # so its running Workloads can be reclaimed.
        queue["spec"]["cohortName"] = other["spec"]["cohortName"] = "co"
        policy["reclaimWithinCohort"] = rng.choice(("Any", "LowerPriority"))
        if rng.random() < 0.5:
            other["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority",
                                           "reclaimWithinCohort": rng.choice(("Any", "LowerPriority"))}
        resources = other["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        resources[1]["nominalQuota"] = rng.choice((0, 2, 4))
        for obj in running:
            if rng.random() < 0.5:
                obj["spec"]["queueName"] = "lq-b"
                obj["status"]["admission"]["clusterQueue"] = "cq-b"
    if rng.random() < 0.25:
        objects.insert(0, {"apiVersion": CONFIG_API, "kind": "Configuration", "fairSharing": {"enable": True}})


def _held(held, name: str) -> dict:
    obj = yaml.safe_load(_held_yaml(held))
    obj["metadata"]["name"] = name
    return obj


def _set_priority(rng: random.Random, obj: dict, classes: bool, plain: tuple[int, ...]) -> None:
    if classes and rng.random() < 0.7:
        name = rng.choice(sorted(PRIORITY_CLASSES))
        obj["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}
        obj["spec"]["priority"] = PRIORITY_CLASSES[name]
    else:
        obj["spec"]["priority"] = rng.choice(plain)


