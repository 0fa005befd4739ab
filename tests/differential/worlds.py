"""Random, valid Kueue worlds for the differential test.

`world(seed, index)` returns the objects of one world (plain dicts, as `kubectl get -o yaml`
prints them); `world_yaml(seed, index)` their multi-document YAML. The same (seed, index) gives
the same bytes on every machine: every choice comes from one `random.Random` seeded with a
string (Python hashes string seeds with SHA-512, not with the per-process hash salt).

A world holds ResourceFlavors with node labels and taints, a cohort tree up to three levels
(Cohort objects with their own quota and limits), ClusterQueues with several disjoint resource
groups, every preemption policy, optional fair sharing (a Kueue Configuration object) with
weights, both queueing strategies, WorkloadPriorityClasses, Namespaces, LocalQueues and
Workloads: pending ones next to ones already holding quota (status.admission with QuotaReserved
and Admitted conditions). Admitted workloads are placed the way a live cluster could have placed
them: on a flavor their pods fit, within the queue's nominal quota or borrowing from the unused,
lendable quota of its own cohort (see `validity.quota_problems`). In a share of worlds a reclaim
is staged behind a misrouted workload (`_Generator.misrouted`), a class random worlds hardly drew.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import yaml

from compiler.core.quantity import format_units

from .validity import fitting_flavor, pod_requests, quota_problems, selects

V1BETA2 = "kueue.x-k8s.io/v1beta2"
CONFIG_API = "config.kueue.x-k8s.io/v1beta1"
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "example.com/nic")
BASE_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z
TAINTS = (("dedicated", "gpu", "NoSchedule"), ("spot", "true", "NoExecute"),
          ("maintenance", "soon", "PreferNoSchedule"), ("dedicated", "batch", "NoExecute"))
# The share of worlds with a misrouted workload (see `_Generator.misrouted`), and the priority
# that puts it and its reclaimer ahead of every other workload of their queue (the generated
# ones have at most 1005): a StrictFIFO queue's head that never fits would keep them waiting.
MISROUTED = 0.3
PRIORITY_AHEAD = 2000


def quantity(resource: str, amount: int) -> str:
    """Whole units as Kubernetes quantities: memory in Gi, everything else in plain units."""
    return f"{amount}Gi" if resource == "memory" else str(amount)


def timestamp(offset: int) -> str:
    import datetime as _dt
    moment = _dt.datetime.fromtimestamp(BASE_TIME + offset, tz=_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Queue:
    """What the generator remembers of a ClusterQueue to place admitted workloads."""
    name: str
    cohort: str | None
    groups: list[tuple[list[str], list[str]]]  # (covered resources, flavors)
    quota: dict[tuple[str, str], tuple[int, int | None, int | None]]  # (flavor, res) -> nominal, borrow, lend
    selector: dict


class _Generator:
    def __init__(self, seed: int, index: int) -> None:
        self.r = random.Random(f"kueue-differential:{seed}:{index}")
        # The misrouted workload's choices come from a stream of their own: the rest of a world
        # is the one its seed gave before that part of the generator existed.
        self.misrouted_r = random.Random(f"kueue-differential-misrouted:{seed}:{index}")
        self.objects: list[dict] = []
        self.flavors: dict[str, dict] = {}
        self.cohorts: dict[str, tuple[str | None, int]] = {}  # name -> parent, depth
        self.cohort_quota: dict[str, dict[tuple[str, str], int]] = {}
        self.queues: list[_Queue] = []
        self.namespaces: dict[str, dict[str, str]] = {}
        self.priority_classes: dict[str, int] = {}
        self.fair_sharing = False

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    # ---- cluster objects -------------------------------------------------------------------
    def build(self) -> list[dict]:
        self.configuration()
        self.namespace_objects()
        self.flavor_objects()
        self.cohort_objects()
        for i in range(self.r.randint(1, 5)):
            self.cluster_queue(f"cq-{i}")
        self.priority_class_objects()
        self.local_queues()
        self.workloads()
        self.misrouted()
        return self.objects

    def configuration(self) -> None:
        if self.chance(0.3):
            self.fair_sharing = True
            fair: dict = {"enable": True}
            if self.chance(0.3):
                fair["preemptionStrategies"] = self.r.choice([
                    ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"],
                    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]])
            self.objects.append({"apiVersion": CONFIG_API, "kind": "Configuration", "fairSharing": fair})

    def namespace_objects(self) -> None:
        for i in range(self.r.randint(1, 3)):
            labels = {"team": self.r.choice(["red", "blue"])}
            self.namespaces[f"ns-{i}"] = labels
            self.objects.append({"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": f"ns-{i}", "labels": labels}})

    def flavor_objects(self) -> None:
        for i in range(self.r.randint(1, 8)):
            name = f"rf-{i}"
            labels = {"pool": name}
            if self.chance(0.5):
                labels["zone"] = self.r.choice(["a", "b"])
            spec: dict = {"nodeLabels": labels}
            if self.chance(0.25):
                taints = self.r.sample(TAINTS, self.r.randint(1, 2))
                if len({(k, e) for k, _, e in taints}) == len(taints):
                    spec["nodeTaints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
            if "nodeTaints" in spec and self.chance(0.15):
                key, value, effect = TAINTS[0]
                spec["tolerations"] = [{"key": key, "operator": "Equal", "value": value, "effect": effect}]
            self.flavors[name] = spec
            self.objects.append({"apiVersion": V1BETA2, "kind": "ResourceFlavor",
                                 "metadata": {"name": name}, "spec": spec})

    def cohort_objects(self) -> None:
        for i in range(self.r.randint(0, 5)):
            name = f"co-{i}"
            candidates = [c for c, (_, depth) in self.cohorts.items() if depth < 3]
            parent = self.r.choice(candidates) if candidates and self.chance(0.6) else None
            depth = 1 if parent is None else self.cohorts[parent][1] + 1
            self.cohorts[name] = (parent, depth)
            spec: dict = {}
            if parent is not None:
                spec["parentName"] = parent
            quota: dict[tuple[str, str], int] = {}
            if self.chance(0.4):
                groups, limits = self.resource_groups(has_parent=parent is not None, cohort=True)
                spec["resourceGroups"] = groups
                quota = {key: nominal for key, (nominal, _, _) in limits.items()}
            if self.fair_sharing and self.chance(0.4):
                spec["fairSharing"] = {"weight": self.r.choice(["1", "2", "500m", "3"])}
            self.cohort_quota[name] = quota
            if spec or self.chance(0.7):  # a cohort named only by its queues is an empty root
                self.objects.append({"apiVersion": V1BETA2, "kind": "Cohort", "metadata": {"name": name},
                                     "spec": spec})

    def resource_groups(self, has_parent: bool, cohort: bool = False):
        """Disjoint covered resources and disjoint flavors over 1-3 groups, quotas per flavor."""
        resources = ["cpu"] + [r for r in RESOURCES[1:] if self.chance(0.45)]
        self.r.shuffle(resources)
        flavors = self.r.sample(sorted(self.flavors), self.r.randint(1, len(self.flavors)))
        count = min(self.r.randint(1, 3), len(resources), len(flavors))
        cuts_r = sorted(self.r.sample(range(1, len(resources)), count - 1)) if count > 1 else []
        cuts_f = sorted(self.r.sample(range(1, len(flavors)), count - 1)) if count > 1 else []
        res_parts = _split(resources, cuts_r)
        flavor_parts = _split(flavors, cuts_f)
        groups, limits = [], {}
        for covered, group_flavors in zip(res_parts, flavor_parts):
            entries = []
            for flavor in group_flavors:
                quotas = []
                for res in covered:
                    nominal = self.r.choice([0, 2, 4, 6, 8, 8, 10, 12, 16])
                    entry = {"name": res, "nominalQuota": quantity(res, nominal)}
                    borrow = lend = None
                    if has_parent and self.chance(0.3):
                        borrow = self.r.randint(0, 4)
                        entry["borrowingLimit"] = quantity(res, borrow)
                    if has_parent and self.chance(0.3):
                        lend = self.r.randint(0, nominal if not cohort else nominal + 2)
                        entry["lendingLimit"] = quantity(res, lend)
                    quotas.append(entry)
                    limits[(flavor, res)] = (nominal, borrow, lend)
                entries.append({"name": flavor, "resources": quotas})
            groups.append({"coveredResources": list(covered), "flavors": entries})
        return groups, limits

    def cluster_queue(self, name: str) -> None:
        cohort = self.r.choice(sorted(self.cohorts)) if self.cohorts and self.chance(0.8) else None
        groups, limits = self.resource_groups(has_parent=cohort is not None)
        selector: dict = {}
        if self.chance(0.08):
            selector = {"matchLabels": {"team": self.r.choice(["red", "blue"])}}
        spec: dict = {"namespaceSelector": selector, "resourceGroups": groups}
        if cohort is not None:
            spec["cohortName"] = cohort
        if self.chance(0.4):
            spec["queueingStrategy"] = self.r.choice(["StrictFIFO", "BestEffortFIFO"])
        spec.update(self.preemption())
        if self.chance(0.25):
            borrow = self.r.choice(["MayStopSearch", "TryNextFlavor"])
            preempt = self.r.choice(["MayStopSearch", "TryNextFlavor"])
            spec["flavorFungibility"] = {"whenCanBorrow": borrow, "whenCanPreempt": preempt}
            if borrow == preempt == "TryNextFlavor" and self.chance(0.5):
                spec["flavorFungibility"]["preference"] = self.r.choice(
                    ["BorrowingOverPreemption", "PreemptionOverBorrowing"])
        if self.fair_sharing and self.chance(0.5):
            spec["fairSharing"] = {"weight": self.r.choice(["1", "2", "500m", "0", "3"])}
        self.objects.append({"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": {"name": name},
                             "spec": spec})
        self.queues.append(_Queue(name, cohort, [(g["coveredResources"], [f["name"] for f in g["flavors"]])
                                                 for g in groups], limits, selector))

    def preemption(self) -> dict:
        if self.chance(0.2):
            return {}
        within = self.r.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
        reclaim = self.r.choice(["Never", "LowerPriority", "Any"])
        policy: dict = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
        if reclaim != "Never" and self.chance(0.5):
            borrow: dict = {"policy": self.r.choice(["Never", "LowerPriority"])}
            if borrow["policy"] == "LowerPriority" and self.chance(0.6):
                borrow["maxPriorityThreshold"] = self.r.choice([0, 10, 100, 1000])
            policy["borrowWithinCohort"] = borrow
        return {"preemption": policy}

    def priority_class_objects(self) -> None:
        for name, value in (("low", 10), ("mid", 100), ("high", 1000)):
            if self.chance(0.7):
                value = value + self.r.choice([0, 0, 5])
                self.priority_classes[name] = value
                self.objects.append({"apiVersion": V1BETA2, "kind": "WorkloadPriorityClass",
                                     "metadata": {"name": name}, "value": value})

    def local_queues(self) -> None:
        for queue in self.queues:
            for ns in sorted(self.namespaces):
                if self.chance(0.8):
                    self.objects.append({"apiVersion": V1BETA2, "kind": "LocalQueue",
                                         "metadata": {"name": f"lq-{queue.name}", "namespace": ns},
                                         "spec": {"clusterQueue": queue.name}})

    # ---- workloads -------------------------------------------------------------------------
    def workloads(self) -> None:
        local = [(o["metadata"]["namespace"], o["spec"]["clusterQueue"]) for o in self.objects
                 if o["kind"] == "LocalQueue"]
        if not local:
            return
        total = self.r.randint(3, 16)
        offsets = self.r.sample(range(1, 1000), total)
        for i in range(total):
            ns, cq = self.r.choice(local)
            queue = next(q for q in self.queues if q.name == cq)
            doc = self.workload(f"wl-{i}", ns, queue, offsets[i])
            if self.chance(0.55):
                self.admit(doc, queue, offsets[i])
            self.objects.append(doc)

    def workload(self, name: str, ns: str, queue: _Queue, offset: int) -> dict:
        covered = [res for resources, _ in queue.groups for res in resources]
        podsets = []
        partial = self.r.randrange(3) if self.chance(0.25) else None
        for p in range(self.r.randint(1, 3) if self.chance(0.35) else 1):
            requests = {"cpu": quantity("cpu", self.r.choice([1, 1, 2, 3]))}
            for res in RESOURCES[1:]:
                if (res in covered and self.chance(0.5)) or self.chance(0.03):
                    requests[res] = quantity(res, self.r.randint(1, 2))
            pod: dict = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}]}
            self.placement(pod, queue)
            count = self.r.randint(1, 4)
            podset: dict = {"name": "main" if p == 0 else f"worker-{p}", "count": count,
                            "template": {"spec": pod}}
            if partial == p and count > 1:
                podset["minCount"] = self.r.randint(1, count - 1)
            podsets.append(podset)
        spec: dict = {"queueName": f"lq-{queue.name}" if self.chance(0.99) else "lq-missing",
                      "podSets": podsets}
        if self.priority_classes and self.chance(0.6):
            pc = self.r.choice(sorted(self.priority_classes))
            spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": pc}
            spec["priority"] = self.priority_classes[pc]
        elif self.chance(0.3):
            spec["priority"] = self.r.choice([0, 5, 50, 500])
        return {"apiVersion": V1BETA2, "kind": "Workload",
                "metadata": {"name": name, "namespace": ns, "uid": f"00000000-0000-4000-8000-{offset:012d}",
                             "creationTimestamp": timestamp(offset)},
                "spec": spec}

    def placement(self, pod: dict, queue: _Queue) -> None:
        flavors = [f for _, fs in queue.groups for f in fs]
        if self.chance(0.25):
            target = self.flavors[self.r.choice(flavors)]["nodeLabels"]
            key = self.r.choice(sorted(target))
            pod["nodeSelector"] = {key: target[key]}
        taints = [t for f in flavors for t in self.flavors[f].get("nodeTaints") or []]
        if taints and self.chance(0.6) or self.chance(0.1):
            taint = self.r.choice(taints) if taints else dict(zip(("key", "value", "effect"), TAINTS[0]))
            toleration = {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}
            if self.chance(0.3):
                toleration = {"key": taint["key"], "operator": "Exists"}
            pod["tolerations"] = [toleration]

    def admit(self, doc: dict, queue: _Queue, offset: int) -> None:
        """status.admission on flavors the pods fit, if the quota allows it (validity.py)."""
        if not selects(queue.selector, self.namespaces[doc["metadata"]["namespace"]]):
            return
        assignments = []
        for podset in doc["spec"]["podSets"]:
            pod = podset["template"]["spec"]
            per_pod = pod_requests(pod)
            count = podset["count"]
            if "minCount" in podset and self.chance(0.3):
                count = self.r.randint(podset["minCount"], podset["count"])
            flavors = {}
            for covered, names in queue.groups:
                wanted = [res for res in covered if res in per_pod]
                if wanted:
                    flavor = fitting_flavor(names, self.flavors, pod, self.r)
                    if flavor is None:
                        return
                    flavors.update({res: flavor for res in wanted})
            if set(flavors) != set(per_pod):
                return  # a resource no group covers
            usage = {res: per_pod[res] * count for res in per_pod}
            assignments.append({"name": podset["name"], "flavors": dict(sorted(flavors.items())),
                                "resourceUsage": {r: format_units(r, v) for r, v in sorted(usage.items())},
                                "count": count})
        when = timestamp(offset + 1000)
        doc["status"] = {
            "admission": {"clusterQueue": queue.name, "podSetAssignments": assignments},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "message": f"Quota reserved in ClusterQueue {queue.name}", "lastTransitionTime": when},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "message": "The workload is admitted", "lastTransitionTime": when}]}
        if quota_problems(self.objects + [doc]):
            del doc["status"]


    def misrouted(self) -> None:
        """A reclaim behind a misrouted workload, in a share of worlds (MISROUTED):
        * the misrouted workload: sent to a ClusterQueue of a cohort that does not select its
          namespace (a LocalQueue in an unlabelled namespace pointing at a team's queue),
          created before every other workload;
        * a borrower: a workload of another queue of the cohort, created next, asking for the
          cohort's unused cpu in the misrouted queue's first cpu flavor but the reclaimer's;
        * the reclaimer: a workload of the misrouted queue from a namespace it selects, created
          after the borrower, asking for that queue's unused nominal cpu there.
        The queue reclaims from the cohort more often than not and is StrictFIFO half the time.
        Kueue sets the misrouted workload aside for good once it was its queue's head: a quota
        release in the cohort does not requeue it (queueInadmissibleWorkloads skips a namespace
        the selector does not match). The borrower takes the quota the reclaimer's queue leaves
        unused the cycle its head is the misrouted one, the reclaimer preempts it; requeued by
        that eviction, the misrouted workload would take its queue's head the next cycle: ahead
        of the reclaimer in a StrictFIFO queue (the borrower takes the quota back and the two go
        round), or while the freed quota is shared out. Random worlds drew that about twice in
        10,000. The rest of the world is as random as ever: it gets in the way as often as not."""
        m = self.misrouted_r
        if not m.random() < MISROUTED:
            return
        in_cohort = [q for q in self.queues if q.cohort is not None]
        # (a queue with a cohort-mate that has quota in its first cpu flavor, where there is one)
        candidates = [q for q in in_cohort if any(other is not q and other.cohort == q.cohort and
                                                  (_first_cpu_flavor(q), "cpu") in other.quota
                                                  for other in self.queues)] or in_cohort
        if not candidates:
            return
        queue = m.choice(candidates)
        spec = next(o["spec"] for o in self.objects
                    if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == queue.name)
        if not queue.selector:
            # every generated namespace has a team label: they all stay selected
            queue.selector = spec["namespaceSelector"] = {
                "matchExpressions": [{"key": "team", "operator": "Exists"}]}
        if m.random() < 0.5:
            spec["queueingStrategy"] = "StrictFIFO"
        if m.random() < 0.7:
            policy = dict(spec.get("preemption") or {})
            policy["reclaimWithinCohort"] = m.choice(["Any", "LowerPriority"])
            spec["preemption"] = policy
        namespace = "ns-misrouted"
        self.namespaces[namespace] = {}
        self.objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self.objects.append({"apiVersion": V1BETA2, "kind": "LocalQueue",
                             "metadata": {"name": f"lq-{queue.name}", "namespace": namespace},
                             "spec": {"clusterQueue": queue.name}})
        # offset 0: older than every other workload (theirs are drawn from 1-999)
        self.objects.append(_pending("wl-misrouted", namespace, queue, 0, 1, None, PRIORITY_AHEAD))
        flavor = _first_cpu_flavor(queue)
        used = {int(o["metadata"]["uid"].rsplit("-", 1)[1]) for o in self.objects if o["kind"] == "Workload"}
        early = sorted(m.sample([o for o in range(1, 1000) if o not in used][:30], 2))
        unused = {q.name: q.quota.get((flavor, "cpu"), (0, None, None))[0] - self._held(q.name, flavor)
                  for q in self.queues if q.cohort == queue.cohort}
        reclaimer = unused[queue.name]
        lenders = [q for q in self.queues if q.cohort == queue.cohort and q is not queue
                   and (flavor, "cpu") in q.quota]
        if reclaimer <= 0:
            return
        lender = m.choice(lenders) if lenders else None
        ns = self._selected_namespace(lender, m) if lender is not None else None
        borrower = sum(max(0, v) for v in unused.values()) + self.cohort_quota[queue.cohort].get(
            (flavor, "cpu"), 0) - reclaimer + 1
        if ns is not None and borrower > 0:
            self.objects.append(_pending("wl-borrower", ns, lender, early[0], borrower, self.flavors[flavor],
                                         PRIORITY_AHEAD - 1))
        ns = self._selected_namespace(queue, m)
        if ns is not None:
            self.objects.append(_pending("wl-reclaimer", ns, queue, early[1], reclaimer, self.flavors[flavor],
                                         PRIORITY_AHEAD))

    def _held(self, queue: str, flavor: str) -> int:
        """The cpu in `flavor` that the workloads holding quota in `queue` use."""
        total = 0
        for o in self.objects:
            admission = (o.get("status") or {}).get("admission") if o["kind"] == "Workload" else None
            if admission and admission["clusterQueue"] == queue:
                for psa in admission["podSetAssignments"]:
                    if psa["flavors"].get("cpu") == flavor:
                        total += int(psa["resourceUsage"]["cpu"])
        return total

    def _selected_namespace(self, queue: _Queue, m: random.Random) -> str | None:
        names = sorted(o["metadata"]["namespace"] for o in self.objects
                       if o["kind"] == "LocalQueue" and o["spec"]["clusterQueue"] == queue.name
                       and selects(queue.selector, self.namespaces[o["metadata"]["namespace"]]))
        return m.choice(names) if names else None


def _first_cpu_flavor(queue: _Queue) -> str:
    return next(fs[0] for covered, fs in queue.groups if "cpu" in covered)  # every queue covers cpu


def _pending(name: str, ns: str, queue: _Queue, offset: int, cpu: int, flavor: dict | None,
             priority: int) -> dict:
    """A pending workload of one pod asking for `cpu`, on `flavor` (its pool label, its taints
    tolerated) when one is named."""
    pod: dict = {"containers": [{"name": "c", "image": "busybox",
                                 "resources": {"requests": {"cpu": quantity("cpu", cpu)}}}]}
    if flavor is not None:
        pod["nodeSelector"] = {"pool": flavor["nodeLabels"]["pool"]}
        if flavor.get("nodeTaints"):
            pod["tolerations"] = [{"key": t["key"], "operator": "Exists"} for t in flavor["nodeTaints"]]
    return {"apiVersion": V1BETA2, "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "uid": f"00000000-0000-4000-8000-{offset:012d}",
                         "creationTimestamp": timestamp(offset)},
            "spec": {"queueName": f"lq-{queue.name}", "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}]}}


def _split(items: list, cuts: list[int]) -> list[list]:
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:])]


def world(seed: int, index: int) -> list[dict]:
    return _Generator(seed, index).build()


def dump(objects: list[dict]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False, default_flow_style=False, width=120)


def world_yaml(seed: int, index: int) -> str:
    return dump(world(seed, index))
