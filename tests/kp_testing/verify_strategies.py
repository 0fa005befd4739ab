"""Hypothesis strategies for Kueue objects that are mostly valid and sometimes wrong in one of
the ways the API server or the webhook cares about (bad enums, quantities, names, lengths,
unknown fields, limits without a cohort, mismatched resource lists ...)."""

from __future__ import annotations

from hypothesis import strategies as st

V1BETA1 = "kueue.x-k8s.io/v1beta1"
V1BETA2 = "kueue.x-k8s.io/v1beta2"

GOOD_NAMES = st.sampled_from(["h100", "a100", "default-cpu", "team-a", "org.research", "x"])
BAD_NAMES = st.sampled_from(["Bad_Name", "-lead", "trail-", "UPPER", "a" * 254, "", "with space"])


def mostly(good, bad, odds: int = 15):
    """`good` values, and one time in `odds` a `bad` one: most generated objects stay valid, so the
    corpus exercises CEL rules and webhook-only rules too, not just schema refusals."""
    # Hypothesis favours boundary values (0, the max), so the rare branch sits in the middle.
    return st.integers(min_value=0, max_value=odds - 1).flatmap(lambda n: bad if n == odds // 2 else good)


def rarely(draw, odds: int) -> bool:
    return draw(st.integers(min_value=0, max_value=odds - 1)) == odds // 2


NAMES = mostly(GOOD_NAMES, BAD_NAMES)

GOOD_QUANTITIES = st.one_of(st.sampled_from(["0", "1", "16", "500m", "128Gi", "1.5", "1e3", "2k", ".5"]),
                            st.integers(min_value=0, max_value=64))
BAD_QUANTITIES = st.sampled_from(["abc", "1.2.3", "", "1Kb", "--1", 1.5, True, None, ["1"]])
NEGATIVE_QUANTITIES = st.sampled_from(["-1", "-500m", -2])
QUANTITIES = mostly(mostly(GOOD_QUANTITIES, NEGATIVE_QUANTITIES, 8), BAD_QUANTITIES, 25)

RESOURCES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "example.com/mig-1g.10gb"])
BAD_RESOURCES = st.sampled_from(["Not A Resource", "a/b/c", "/gpu"])


def maybe_enum(valid: list[str], invalid: list[str]):
    return mostly(st.sampled_from(valid), st.sampled_from(invalid + [7]))


def optional(d: dict, key: str, strategy, draw, p_present=True):
    """Put draw(strategy) under key, or leave it out."""
    if draw(st.booleans()) or not p_present:
        d[key] = draw(strategy)


@st.composite
def with_unknown_field(draw, obj_strategy):
    obj = draw(obj_strategy)
    if rarely(draw, 15):
        where = obj.get("spec") if isinstance(obj.get("spec"), dict) else obj
        where[draw(st.sampled_from(["bogus", "cohortname", "Spec"]))] = 1
    return obj


@st.composite
def resource_groups(draw):
    groups = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        covered = draw(st.lists(mostly(RESOURCES, BAD_RESOURCES, 20), min_size=1, max_size=3, unique=True))
        if rarely(draw, 16):
            covered = draw(st.lists(RESOURCES, max_size=4))  # empty or with duplicates
        flavors = []
        for _ in range(draw(st.integers(min_value=0 if rarely(draw, 16) else 1, max_value=3))):
            # usually the covered list in order; sometimes shorter, longer or reordered
            names = draw(mostly(st.just(list(covered)), st.lists(RESOURCES, min_size=0, max_size=3), 8))
            resources = []
            for name in names:
                quota = {"name": name, "nominalQuota": draw(QUANTITIES)}
                if rarely(draw, 4):
                    quota["borrowingLimit"] = draw(QUANTITIES)
                if rarely(draw, 4):
                    quota["lendingLimit"] = draw(QUANTITIES)
                if rarely(draw, 16):
                    del quota["nominalQuota"]
                resources.append(quota)
            flavors.append({"name": draw(NAMES), "resources": resources})
        group = {"coveredResources": covered, "flavors": flavors}
        if rarely(draw, 16):
            del group[draw(st.sampled_from(["coveredResources", "flavors"]))]
        groups.append(group)
    return groups


@st.composite
def cluster_queues(draw, api_version: str):
    spec: dict = {}
    cohort_field = "cohortName" if api_version == V1BETA2 else "cohort"
    optional(spec, cohort_field, NAMES, draw)
    optional(spec, "resourceGroups", resource_groups(), draw)
    optional(spec, "queueingStrategy", maybe_enum(["StrictFIFO", "BestEffortFIFO"], ["Fifo"]), draw)
    optional(spec, "stopPolicy", maybe_enum(["None", "Hold", "HoldAndDrain"], ["Stop"]), draw)
    optional(spec, "namespaceSelector", mostly(st.sampled_from([
        {}, {"matchLabels": {"team": "a"}}, {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]},  # webhook-only error
        {"matchExpressions": [{"key": "team", "operator": "Like"}]}]),  # webhook-only error
        st.just({"matchExpressions": [{"key": "team"}]})), draw)
    borrow = ["MayStopSearch", "TryNextFlavor"] + (["Borrow"] if api_version == V1BETA1 else [])
    preempt = ["MayStopSearch", "TryNextFlavor"] + (["Preempt"] if api_version == V1BETA1 else [])
    fungibility: dict = {}
    optional(fungibility, "whenCanBorrow", maybe_enum(borrow, ["Borrow", "Maybe"]), draw)
    optional(fungibility, "whenCanPreempt", maybe_enum(preempt, ["Preempt", "Maybe"]), draw)
    optional(fungibility, "preference", maybe_enum(["BorrowingOverPreemption", "PreemptionOverBorrowing"],
                                                   ["Borrowing"]), draw)
    optional(spec, "flavorFungibility", st.just(fungibility), draw)
    preemption: dict = {}
    optional(preemption, "reclaimWithinCohort", maybe_enum(["Never", "LowerPriority", "Any"], ["Always"]), draw)
    optional(preemption, "withinClusterQueue",
             maybe_enum(["Never", "LowerPriority", "LowerOrNewerEqualPriority"], ["Any"]), draw)
    bwc: dict = {}
    optional(bwc, "policy", maybe_enum(["Never", "LowerPriority"], ["Any"]), draw)
    optional(bwc, "maxPriorityThreshold", mostly(st.integers(-5, 1000), st.just(2**31)), draw)
    optional(preemption, "borrowWithinCohort", st.just(bwc), draw)
    optional(spec, "preemption", st.just(preemption), draw)
    optional(spec, "fairSharing", st.fixed_dictionaries({"weight": QUANTITIES}), draw)
    if rarely(draw, 6):
        checks = [{"name": draw(st.sampled_from(["prov", "mk", "prov", "mk", ""]))} for _ in range(draw(st.integers(0 if rarely(draw, 8) else 1, 2)))]
        for check in checks:
            if draw(st.booleans()):
                check["onFlavors"] = draw(st.lists(NAMES, max_size=2))
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    if rarely(draw, 31):
        spec["resourceGroups"] = [{"coveredResources": [f"r{i}"], "flavors": [
            {"name": f"f{i}", "resources": [{"name": f"r{i}", "nominalQuota": "1"}]}]} for i in range(17)]
    return {"apiVersion": api_version, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}


@st.composite
def cohorts(draw, api_version: str):
    spec: dict = {}
    optional(spec, "parentName", NAMES, draw)
    optional(spec, "resourceGroups", resource_groups(), draw)
    optional(spec, "fairSharing", st.fixed_dictionaries({"weight": QUANTITIES}), draw)
    return {"apiVersion": api_version, "kind": "Cohort", "metadata": {"name": "co"}, "spec": spec}


EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


@st.composite
def resource_flavors(draw, api_version: str):
    spec: dict = {}
    optional(spec, "nodeLabels", st.dictionaries(st.sampled_from([f"k{i}" for i in range(10)] + ["bad key"]),
                                                 mostly(st.sampled_from(["v", ""]), st.just("Bad Value")), max_size=9), draw)
    taints = []
    for _ in range(draw(st.integers(0, 9 if rarely(draw, 11) else 3))):
        taint = {"key": draw(mostly(st.sampled_from(["nvidia.com/gpu", "dedicated"]), st.just("bad key"))),
                 "effect": draw(maybe_enum(EFFECTS, ["Sometimes"]))}
        if rarely(draw, 4):  # unique (key, effect) is a webhook rule, not a CRD one
            taint["key"] = "dedicated"
        optional(taint, "value", mostly(st.just("present"), st.just("Bad Value")), draw)
        if rarely(draw, 11):
            del taint[draw(st.sampled_from(["key", "effect"]))]
        taints.append(taint)
    optional(spec, "nodeTaints", st.just(taints), draw)
    tolerations = []
    for _ in range(draw(st.integers(0, 3))):
        tol: dict = {}
        optional(tol, "key", st.sampled_from(["nvidia.com/gpu", "dedicated"]), draw)
        optional(tol, "operator", maybe_enum(["Equal", "Exists"], ["Matches"]), draw)
        optional(tol, "value", st.just("present"), draw)
        optional(tol, "effect", maybe_enum(EFFECTS, ["Sometimes"]), draw)
        if rarely(draw, 5):
            tol["tolerationSeconds"] = draw(st.integers(0, 600))
        tolerations.append(tol)
    optional(spec, "tolerations", st.just(tolerations), draw)
    if rarely(draw, 5):
        spec["topologyName"] = draw(NAMES)
    return {"apiVersion": api_version, "kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": spec}


@st.composite
def local_queues(draw, api_version: str):
    spec: dict = {}
    optional(spec, "clusterQueue", NAMES, draw)
    optional(spec, "stopPolicy", maybe_enum(["None", "Hold", "HoldAndDrain"], ["Drain"]), draw)
    optional(spec, "fairSharing", st.fixed_dictionaries({"weight": QUANTITIES}), draw)
    return {"apiVersion": api_version, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team-a"},
            "spec": spec}


@st.composite
def workload_priority_classes(draw, api_version: str):
    obj = {"apiVersion": api_version, "kind": "WorkloadPriorityClass", "metadata": {"name": "prod"}}
    if not rarely(draw, 8):
        obj["value"] = draw(mostly(st.integers(-100, 100000), st.sampled_from([2**31, -(2**31) - 1, "100"]), 6))
    optional(obj, "description", mostly(st.just("prod"), st.sampled_from(["x" * 2049, 5]), 6), draw)
    return obj


LEVEL_LABELS = ["cloud.google.com/gce-topology-block", "nvidia.com/gpu.clique", "kubernetes.io/hostname",
                "topology.k8s.aws/network-node-layer-1"]


@st.composite
def topologies(draw, api_version: str):
    """Topologies around Kueue's rules: 0..17 levels, duplicates, hostname anywhere, bad labels."""
    levels = []
    for _ in range(draw(mostly(st.integers(1, 4), st.sampled_from([0, 17]), 8))):
        level: dict = {}
        if not rarely(draw, 15):
            level["nodeLabel"] = draw(mostly(st.sampled_from(LEVEL_LABELS), st.sampled_from(["", "Bad Label", 5]), 8))
        levels.append(level)
    spec: dict = {}
    if not rarely(draw, 12):
        spec["levels"] = levels
    return {"apiVersion": api_version, "kind": "Topology", "metadata": {"name": "topo"}, "spec": spec}


BY_KIND = {
    "ClusterQueue": cluster_queues,
    "Cohort": cohorts,
    "ResourceFlavor": resource_flavors,
    "LocalQueue": local_queues,
    "WorkloadPriorityClass": workload_priority_classes,
    "Topology": topologies,
}
