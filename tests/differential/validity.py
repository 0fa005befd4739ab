"""Is a world one a live Kueue v0.19 cluster could hold?

`problems(objects)` lists everything that makes it impossible, empty when none:
* the Kueue kinds (ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass)
  through the project's own CRD, CEL and webhook checks (compiler.verify);
* Workloads through the Workload CRD's CEL rules and webhook rules that apply to these worlds;
* workloads holding quota: their admission names a ClusterQueue that selects their namespace,
  one assignment per pod set, a count between minCount and count, resourceUsage equal to the
  pods' requests times that count, one flavor per resource group that covers each resource, a
  flavor whose taints the pods tolerate and whose labels their nodeSelector accepts;
* quota: every ClusterQueue's usage within nominal + borrowingLimit, and what it borrows found
  in its own cohort (the Cohort's own quota plus the lendable, unused quota of the queues
  directly in it). This is stricter than Kueue (which also lends across cohort levels), so
  every world that passes is one Kueue itself could have admitted.
The shrinker keeps only candidates that pass, so a minimal world is still a valid one.
"""

from __future__ import annotations

import re

from compiler.core.quantity import QuantityError, to_units
from compiler.verify import verify_objects

VERIFIED_KINDS = {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
PODSET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def pod_requests(pod: dict) -> dict[str, int]:
    total: dict[str, int] = {}
    for container in pod.get("containers") or []:
        for res, qty in ((container.get("resources") or {}).get("requests") or {}).items():
            total[res] = total.get(res, 0) + to_units(res, qty)
    return total


def _tolerates(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") != taint.get("key"):
        return not toleration.get("key") and toleration.get("operator") == "Exists"
    return toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value")


def flavor_fits(spec: dict, pod: dict) -> bool:
    tolerations = (pod.get("tolerations") or []) + (spec.get("tolerations") or [])
    for taint in spec.get("nodeTaints") or []:
        if taint["effect"] != "PreferNoSchedule" and not any(_tolerates(t, taint) for t in tolerations):
            return False
    labels = spec.get("nodeLabels") or {}
    return all(labels.get(k, v) == v for k, v in (pod.get("nodeSelector") or {}).items())


def fitting_flavor(names: list[str], specs: dict[str, dict], pod: dict, rng) -> str | None:
    fitting = [n for n in names if n in specs and flavor_fits(specs[n], pod)]
    return rng.choice(fitting) if fitting else None


def problems(objects: list[dict]) -> list[str]:
    kueue = [o for o in objects if o.get("kind") in VERIFIED_KINDS]
    found = [f"{p.kind} {p.name}: {p.field_path}: {p.message}"
             for p in verify_objects(kueue, "1.34", "0.19")]
    try:
        found += workload_problems(objects)
        found += admission_problems(objects)
        found += quota_problems(objects)
    except (QuantityError, KeyError, TypeError, ValueError, AttributeError) as error:
        found.append(f"malformed: {type(error).__name__}: {error}")
    return found


def workload_problems(objects: list[dict]) -> list[str]:
    namespaces = set(_index(objects, "Namespace"))
    found = [f"{o['kind']} {o['metadata']['name']}: namespace {o['metadata'].get('namespace')} does not exist"
             for o in objects if o.get("kind") in ("LocalQueue", "Workload")
             and o["metadata"].get("namespace") not in namespaces]
    for wl in (o for o in objects if o.get("kind") == "Workload"):
        name, spec = wl["metadata"]["name"], wl["spec"]
        podsets = spec.get("podSets") or []
        names = [ps.get("name", "main") for ps in podsets]
        if not 1 <= len(podsets) <= 18 or len(set(names)) != len(names):
            found.append(f"Workload {name}: 1-18 pod sets with unique names")
        for ps in podsets:
            if not PODSET_NAME.match(ps.get("name", "main")) or ps.get("count", 1) < 0:
                found.append(f"Workload {name}: pod set {ps.get('name')} name or count")
            containers = ps["template"]["spec"]["containers"]
            if not containers or not all(c.get("name") for c in containers):
                found.append(f"Workload {name}: pod set {ps.get('name')}: at least one container, each with a name")
            if "minCount" in ps and not 1 <= ps["minCount"] <= ps.get("count", 1):
                found.append(f"Workload {name}: minCount should be positive and less or equal to count")
        if sum(1 for ps in podsets if "minCount" in ps) > 1:
            found.append(f"Workload {name}: at most one podSet can use minCount")
        if "priorityClassRef" in spec and "priority" not in spec:
            found.append(f"Workload {name}: priority should not be nil when priorityClassRef is set")
        if _holds_quota(wl) and not (wl.get("status") or {}).get("admission"):
            found.append(f"Workload {name}: quota-reserved workloads must have status.admission")
    return found


def selects(selector: dict | None, labels: dict[str, str]) -> bool:
    """A label selector as the API server reads a ClusterQueue's namespaceSelector (none: no
    namespace; {}: every namespace)."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator == "Exists" and key not in labels or operator == "DoesNotExist" and key in labels:
            return False
        if operator == "In" and labels.get(key) not in values or operator == "NotIn" and key in labels \
                and labels[key] in values:
            return False
    return True


def _holds_quota(wl: dict) -> bool:
    return any(c.get("type") == "QuotaReserved" and c.get("status") == "True"
               for c in (wl.get("status") or {}).get("conditions") or [])


def _index(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o.get("kind") == kind}


def admission_problems(objects: list[dict]) -> list[str]:
    queues, flavors = _index(objects, "ClusterQueue"), _index(objects, "ResourceFlavor")
    namespaces = _index(objects, "Namespace")
    found = []
    for wl in (o for o in objects if o.get("kind") == "Workload" and _holds_quota(o)):
        name = wl["metadata"]["name"]
        admission = wl["status"]["admission"]
        queue = queues.get(admission.get("clusterQueue"))
        ns = namespaces.get(wl["metadata"].get("namespace"))
        if queue is None or ns is None:
            found.append(f"Workload {name}: admitted into a missing ClusterQueue or namespace")
            continue
        labels = {"kubernetes.io/metadata.name": ns["metadata"]["name"], **(ns["metadata"].get("labels") or {})}
        # (a queue without a selector is not held against its workloads: a shrunk world may lose
        # the field, and Kueue does not evict what a queue holds when its selector changes)
        if not selects(queue["spec"].get("namespaceSelector") or {}, labels):
            found.append(f"Workload {name}: its ClusterQueue does not select its namespace")
        podsets = {ps.get("name", "main"): ps for ps in wl["spec"]["podSets"]}
        assignments = admission.get("podSetAssignments") or []
        if sorted(a.get("name") for a in assignments) != sorted(podsets):
            found.append(f"Workload {name}: podSetAssignments must have the same number of podSets as the spec")
            continue
        groups = queue["spec"].get("resourceGroups") or []
        for psa in assignments:
            found += _assignment_problems(name, psa, podsets[psa["name"]], groups, flavors)
    return found


def _assignment_problems(name: str, psa: dict, podset: dict, groups: list[dict],
                         flavors: dict[str, dict]) -> list[str]:
    pod = podset["template"]["spec"]
    per_pod = pod_requests(pod)
    count = psa.get("count", podset.get("count", 1))
    if not podset.get("minCount", podset.get("count", 1)) <= count <= podset.get("count", 1):
        return [f"Workload {name}: admitted count {count} outside minCount..count"]
    usage = {r: to_units(r, q) for r, q in (psa.get("resourceUsage") or {}).items()}
    if usage != {r: v * count for r, v in per_pod.items()} or set(psa.get("flavors") or {}) != set(per_pod):
        return [f"Workload {name}: resourceUsage/flavors do not match the pod set's requests"]
    for group in groups:
        chosen = {psa["flavors"][r] for r in group["coveredResources"] if r in per_pod}
        names = [f["name"] for f in group["flavors"]]
        if len(chosen) > 1 or any(f not in names or f not in flavors or
                                  not flavor_fits(flavors[f]["spec"] or {}, pod) for f in chosen):
            return [f"Workload {name}: pod set {psa['name']} admitted on flavors {sorted(chosen)} it cannot use"]
    covered = {r for g in groups for r in g["coveredResources"]}
    if set(per_pod) - covered:
        return [f"Workload {name}: admitted with resources its ClusterQueue does not cover"]
    return []


def _quotas(spec: dict) -> dict[tuple[str, str], tuple[int, int | None, int | None]]:
    out = {}
    for group in spec.get("resourceGroups") or []:
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                name = res["name"]
                limit = [None if res.get(k) is None else to_units(name, res[k])
                         for k in ("borrowingLimit", "lendingLimit")]
                out[(flavor["name"], name)] = (to_units(name, res["nominalQuota"]), limit[0], limit[1])
    return out


def quota_problems(objects: list[dict]) -> list[str]:
    queues = {n: (o["spec"].get("cohortName"), _quotas(o["spec"])) for n, o in _index(objects, "ClusterQueue").items()}
    cohort_quota = {n: _quotas(o.get("spec") or {}) for n, o in _index(objects, "Cohort").items()}
    usage: dict[str, dict[tuple[str, str], int]] = {n: {} for n in queues}
    for wl in (o for o in objects if o.get("kind") == "Workload" and _holds_quota(o)):
        admission = wl["status"]["admission"]
        used = usage.setdefault(admission["clusterQueue"], {})
        for psa in admission.get("podSetAssignments") or []:
            for res, qty in (psa.get("resourceUsage") or {}).items():
                key = (psa["flavors"][res], res)
                used[key] = used.get(key, 0) + to_units(res, qty)
    found = []
    cohort_use: dict[tuple[str, tuple[str, str]], int] = {}
    for name, (cohort, quota) in sorted(queues.items()):
        for key, amount in sorted(usage.get(name, {}).items()):
            nominal, borrow, lend = quota.get(key, (0, None, None))
            guaranteed = nominal - (nominal if lend is None else lend)
            if amount > nominal and (cohort is None or (borrow is not None and amount - nominal > borrow)):
                found.append(f"ClusterQueue {name}: usage {amount} of {key} above nominal + borrowingLimit")
            if cohort is not None:
                cohort_use[(cohort, key)] = cohort_use.get((cohort, key), 0) + max(0, amount - guaranteed)
    for (cohort, key), used in sorted(cohort_use.items()):
        pool = cohort_quota.get(cohort, {}).get(key, (0, None, None))[0]
        for cohort_name, quota in queues.values():
            if cohort_name == cohort and key in quota:
                nominal, _, lend = quota[key]
                pool += nominal if lend is None else lend
        if used > pool:
            found.append(f"cohort {cohort}: usage {used} of {key} above what its queues lend ({pool})")
    return found
