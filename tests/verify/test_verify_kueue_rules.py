"""One test per rule of the verifier's Kueue model: a valid object passes, an invalid one is
refused with the stable code, the field path and the API server's / webhook's words."""

from __future__ import annotations

import copy

import pytest

from compiler.core import codes
from compiler.verify import ObjectProblem, verify_objects

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"
BOTH = pytest.mark.parametrize("version", [V1, V2])


def cohort_key(version: str) -> str:
    return "cohortName" if version == V2 else "cohort"


def cq(version: str = V2, *, cohort: str | None = "org", groups: list | None = None, **spec) -> dict:
    body = dict(spec)
    if cohort:
        body[cohort_key(version)] = cohort
    body["namespaceSelector"] = body.get("namespaceSelector", {})
    body["resourceGroups"] = groups if groups is not None else [
        {"coveredResources": ["cpu", "memory"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "64"},
                                              {"name": "memory", "nominalQuota": "512Gi"}]}]},
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16", "borrowingLimit": "8",
                                            "lendingLimit": "4"}]}]}]
    return {"apiVersion": version, "kind": "ClusterQueue", "metadata": {"name": "team-a"}, "spec": body}


def gpu_quota(obj: dict) -> dict:
    return obj["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]


def problems(*objects: dict, k8s: str = "1.34", kueue: str = "0.19") -> list[ObjectProblem]:
    return verify_objects([copy.deepcopy(o) for o in objects], k8s, kueue)


def only(found: list[ObjectProblem]) -> ObjectProblem:
    assert len(found) == 1, [p.describe() for p in found]
    return found[0]


# --- valid objects -----------------------------------------------------------------------------

@BOTH
def test_a_full_valid_set_passes(version):
    objs = [
        {"apiVersion": version, "kind": "ResourceFlavor", "metadata": {"name": "h100"},
         "spec": {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                  "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
        {"apiVersion": version, "kind": "Cohort", "metadata": {"name": "org"}, "spec": {}},
        {"apiVersion": version, "kind": "Cohort", "metadata": {"name": "research"}, "spec": {
            "parentName": "org", "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 12}]}]}]}},
        cq(version, preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}},
           fairSharing={"weight": "0"}),
        {"apiVersion": version, "kind": "LocalQueue", "metadata": {"name": "team-a", "namespace": "team-a"},
         "spec": {"clusterQueue": "team-a"}},
        {"apiVersion": version, "kind": "WorkloadPriorityClass", "metadata": {"name": "prod"}, "value": 1000,
         "description": "production"},
    ]
    assert problems(*objs) == []


# --- ClusterQueue webhook rules ----------------------------------------------------------------

@BOTH
def test_lending_limit_above_nominal(version):
    obj = cq(version)
    gpu_quota(obj).update(nominalQuota="16", lendingLimit="20")
    p = only(problems(obj))
    assert (p.code, p.field_path, p.rule) == (codes.KUEUE_WEBHOOK, "spec.resourceGroups[1].flavors[0].resources[0]"
                                              ".lendingLimit", "webhook.lendingLimit.aboveNominal")
    assert p.message == "lendingLimit 20 must be less than or equal to the nominalQuota 16"
    assert (p.index, p.kind, p.name, p.namespace) == (0, "ClusterQueue", "team-a", "")


def test_lending_limit_compares_quantities_not_strings():
    obj = cq()
    gpu_quota(obj).update(nominalQuota="1Ki", lendingLimit="1000")
    assert problems(obj) == []
    gpu_quota(obj).update(nominalQuota="500m", lendingLimit="1")
    assert only(problems(obj)).rule == "webhook.lendingLimit.aboveNominal"


def test_cohort_lending_limit_may_exceed_nominal():
    obj = {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "c"}, "spec": {"parentName": "org",
           "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
               {"name": "d", "resources": [{"name": "cpu", "nominalQuota": "1", "lendingLimit": "5"}]}]}]}}
    assert problems(obj) == []


@BOTH
def test_borrowing_limit_without_cohort_fails_cel_and_webhook(version):
    obj = cq(version, cohort=None)
    del gpu_quota(obj)["lendingLimit"]
    found = problems(obj)
    assert {(p.code, p.field_path) for p in found} == {
        (codes.KUEUE_CEL_RULE, "spec"),
        (codes.KUEUE_WEBHOOK, "spec.resourceGroups[1].flavors[0].resources[0].borrowingLimit")}
    assert any("borrowingLimit must be nil when cohort is empty" in p.message for p in found)


@BOTH
def test_lending_limit_without_cohort_is_a_webhook_rule(version):
    obj = cq(version, cohort=None)
    del gpu_quota(obj)["borrowingLimit"]
    p = only(problems(obj))
    assert p.code == codes.KUEUE_WEBHOOK and p.rule == "webhook.limit.withoutCohort"
    assert p.message == 'lendingLimit: Invalid value: "4": must be nil when cohort is empty'


def test_cohort_limits_need_a_parent():
    obj = {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "root"}, "spec": {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "d", "resources": [{"name": "cpu", "nominalQuota": "1", "borrowingLimit": "5"}]}]}]}}
    p = only(problems(obj))
    assert p.rule == "webhook.limit.withoutParent" and "must be nil when parent is empty" in p.message


@pytest.mark.parametrize("field", ["nominalQuota", "borrowingLimit", "lendingLimit"])
def test_negative_quantities(field):
    obj = cq()
    gpu_quota(obj)[field] = "-1"
    found = [p for p in problems(obj) if p.rule == "webhook.quantity.negative"]
    assert only(found).message == f'{field}: Invalid value: "-1": must be greater than or equal to 0'


def test_resource_in_two_groups():
    obj = cq(groups=[
        {"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]}]},
        {"coveredResources": ["cpu"], "flavors": [{"name": "b", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}])
    p = only(problems(obj))
    assert (p.field_path, p.rule) == ("spec.resourceGroups[1].coveredResources[0]",
                                      "webhook.resourceGroups.duplicateResource")
    assert 'Duplicate value: "cpu"' in p.message


def test_flavor_in_two_groups():
    obj = cq(groups=[
        {"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]}]},
        {"coveredResources": ["memory"], "flavors": [{"name": "a", "resources": [{"name": "memory", "nominalQuota": 1}]}]}])
    p = only(problems(obj))
    assert (p.field_path, p.rule) == ("spec.resourceGroups[1].flavors[0].name", "webhook.resourceGroups.duplicateFlavor")


def test_flavor_twice_in_one_group_is_a_schema_error():
    obj = cq(groups=[{"coveredResources": ["cpu"], "flavors": [
        {"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]},
        {"name": "a", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}])
    p = only(problems(obj))
    assert (p.code, p.field_path) == (codes.KUEUE_SCHEMA, "spec.resourceGroups[0].flavors[1]")
    assert 'Duplicate value: {"name": "a"}' in p.message


def test_resources_must_follow_covered_order():
    obj = cq(groups=[{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "a", "resources": [{"name": "memory", "nominalQuota": 1}, {"name": "cpu", "nominalQuota": 1}]}]}])
    found = problems(obj)
    assert [p.field_path for p in found] == ["spec.resourceGroups[0].flavors[0].resources[0].name",
                                             "spec.resourceGroups[0].flavors[0].resources[1].name"]
    assert all(p.rule == "webhook.resources.nameOrder" and "must match the name in coveredResources" in p.message
               for p in found)


def test_resources_count_must_match_covered_is_a_cel_rule():
    obj = cq(groups=[{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}])
    p = only(problems(obj))
    assert (p.code, p.field_path) == (codes.KUEUE_CEL_RULE, "spec.resourceGroups[0]")
    assert "flavors must have the same number of resources as the coveredResources" in p.message


def test_covered_resource_must_be_a_qualified_name():
    obj = cq(groups=[{"coveredResources": ["Not Valid"], "flavors": [
        {"name": "a", "resources": [{"name": "Not Valid", "nominalQuota": 1}]}]}])
    p = only(problems(obj))
    assert p.rule == "webhook.resourceName.invalid" and "name part must consist of alphanumeric" in p.message


def test_totals_across_groups():
    groups = [{"coveredResources": [f"example.com/r{g}-{r}" for r in range(17)], "flavors": [
        {"name": f"f{g}-{f}", "resources": [{"name": f"example.com/r{g}-{r}", "nominalQuota": 1} for r in range(17)]}
        for f in range(17)]} for g in range(16)]
    rules = sorted(p.rule for p in problems(cq(groups=groups)))
    # 16 x 17 = 272 flavors and 272 resources; 17 x 17 = 289 combinations per group is allowed
    assert rules == ["webhook.totals.coveredResources", "webhook.totals.flavors"]
    many = [{"coveredResources": [f"r{r}" for r in range(23)], "flavors": [
        {"name": f"f{f}", "resources": [{"name": f"r{r}", "nominalQuota": 1} for r in range(23)]} for f in range(23)]}]
    p = only(problems(cq(groups=many)))
    assert p.rule == "webhook.totals.combinations" and p.message.endswith("must be ≤ 512, got 529")


@pytest.mark.parametrize("selector,rule", [
    ({"matchExpressions": [{"key": "team", "operator": "In"}]}, "webhook.namespaceSelector.valuesRequired"),
    ({"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]},
     "webhook.namespaceSelector.valuesForbidden"),
    ({"matchExpressions": [{"key": "team", "operator": "Like", "values": ["a"]}]}, "webhook.namespaceSelector.operator"),
    ({"matchExpressions": [{"key": "bad key", "operator": "Exists"}]}, "webhook.namespaceSelector.key"),
    ({"matchLabels": {"team": "not valid!"}}, "webhook.namespaceSelector.matchLabels.value"),
    ({"matchLabels": {"-team": "a"}}, "webhook.namespaceSelector.matchLabels.key"),
])
def test_namespace_selector(selector, rule):
    assert only(problems(cq(namespaceSelector=selector))).rule == rule


@BOTH
def test_reclaim_never_with_borrow_within_cohort(version):
    found = problems(cq(version, preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}))
    assert {(p.code, p.field_path) for p in found} == {(codes.KUEUE_CEL_RULE, "spec.preemption"),
                                                       (codes.KUEUE_WEBHOOK, "spec.preemption")}
    assert all("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never" in p.message for p in found)


@BOTH
def test_preference_needs_try_next_flavor(version):
    found = problems(cq(version, flavorFungibility={"whenCanBorrow": "TryNextFlavor",
                                                   "preference": "BorrowingOverPreemption"}))
    # whenCanPreempt defaults to TryNextFlavor, so this is valid
    assert found == []
    found = problems(cq(version, flavorFungibility={"preference": "BorrowingOverPreemption"}))
    assert {p.code for p in found} == {codes.KUEUE_CEL_RULE, codes.KUEUE_WEBHOOK}
    assert any('preference "BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be '
               "TryNextFlavor" in p.message for p in found)


def test_v1beta1_deprecated_fungibility_values():
    assert problems(cq(V1, flavorFungibility={"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"})) == []
    p = only(problems(cq(V2, flavorFungibility={"whenCanBorrow": "Borrow"})))
    assert p.code == codes.KUEUE_SCHEMA and p.rule == "schema.enum"
    assert p.message == 'whenCanBorrow: Unsupported value: "Borrow": supported values: "MayStopSearch", "TryNextFlavor"'


@pytest.mark.parametrize("weight,rule", [("-1", "webhook.fairSharing.negativeWeight"),
                                         ("1n", "webhook.fairSharing.tinyWeight")])
def test_fair_sharing_weight(weight, rule):
    assert only(problems(cq(fairSharing={"weight": weight}))).rule == rule
    assert problems(cq(fairSharing={"weight": "2n"})) == []


def test_admission_check_on_unknown_flavor():
    obj = cq(admissionChecksStrategy={"admissionChecks": [{"name": "prov", "onFlavors": ["h100", "b200"]}]})
    p = only(problems(obj))
    assert (p.field_path, p.rule) == ("spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]",
                                      "webhook.admissionChecks.onFlavors")
    assert 'Unsupported value: "b200"' in p.message


def test_cohort_field_names_differ_between_versions():
    # v1beta1 says cohort, v1beta2 cohortName: the other name is an unknown field
    v2_with_v1_name = cq(V2, cohort=None)
    v2_with_v1_name["spec"]["cohort"] = "org"
    found = problems(v2_with_v1_name)
    unknown = [p for p in found if p.code == codes.KUEUE_UNKNOWN_FIELD]
    assert [p.field_path for p in unknown] == ["spec.cohort"]
    # the unknown field is pruned, so the ClusterQueue has no cohort and its limits are refused too
    assert {p.rule for p in found if p not in unknown} == {"cq.borrowingLimitNeedsCohort",
                                                           "webhook.limit.withoutCohort"}
    plain = cq(V1, cohort=None, groups=[])
    plain["spec"]["cohortName"] = "org"
    p = only(problems(plain))
    assert (p.code, p.message) == (codes.KUEUE_UNKNOWN_FIELD, 'unknown field "spec.cohortName"')


# --- schema ------------------------------------------------------------------------------------

@BOTH
def test_unknown_fields_are_refused_everywhere(version):
    obj = cq(version)
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["guaranteed"] = 1
    obj["extra"] = True
    found = problems(obj)
    assert [(p.code, p.field_path) for p in found] == [
        (codes.KUEUE_UNKNOWN_FIELD, "extra"),
        (codes.KUEUE_UNKNOWN_FIELD, "spec.resourceGroups[0].flavors[0].resources[0].guaranteed")]


def test_schema_errors_stop_before_cel_and_webhook():
    # like the API server: a structurally broken object is refused before CEL rules or webhooks run
    obj = cq(queueingStrategy="Fast")
    gpu_quota(obj).update(nominalQuota="1", lendingLimit="2")
    assert [p.rule for p in problems(obj)] == ["schema.enum"]


def test_max_items_and_required():
    obj = cq(groups=[{"coveredResources": ["cpu"], "flavors": [{"name": "a", "resources": [{"name": "cpu"}]}]}])
    p = only(problems(obj))
    assert (p.field_path, p.message) == ("spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
                                         "nominalQuota: Required value")
    rf = {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "x"},
          "spec": {"tolerations": [{"operator": "Exists"}] * 9}}
    p = only(problems(rf))
    assert (p.field_path, p.message) == ("spec.tolerations", "tolerations: Too many: 9: must have at most 8 items")


def test_bad_quantity_strings_and_types():
    obj = cq()
    gpu_quota(obj)["nominalQuota"] = "16 GPUs"
    p = only(problems(obj))
    assert p.rule == "schema.pattern" and p.message.startswith('nominalQuota: Invalid value: "16 GPUs"')
    gpu_quota(obj)["nominalQuota"] = 16.5
    p = only(problems(obj))
    assert p.rule == "schema.type" and "must be of type integer or string" in p.message


def test_a_quantity_beyond_the_parser_bounds_is_a_problem_not_a_hang():
    obj = cq()
    gpu_quota(obj)["nominalQuota"] = "1e99999999"  # the CRD pattern admits it
    p = only(problems(obj))
    assert p.rule == "webhook.quantity.range" and "at most 64 digits" in p.message


def test_priority_class_value_is_int32_and_top_level():
    wpc = {"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 2**31}
    assert only(problems(wpc)).rule == "schema.maximum"
    wpc = {"apiVersion": V2, "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "spec": {"value": 1}}
    assert sorted(p.rule for p in problems(wpc)) == ["schema.required", "schema.unknownField"]


# --- ResourceFlavor ----------------------------------------------------------------------------

def rf(**spec) -> dict:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "h100"}, "spec": spec}


def test_taints_unique_by_key_and_effect():
    taints = [{"key": "gpu", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoExecute"},
              {"key": "gpu", "value": "x", "effect": "NoSchedule"}]
    p = only(problems(rf(nodeTaints=taints)))
    assert (p.field_path, p.rule) == ("spec.nodeTaints[2]", "webhook.taint.duplicate")
    assert "taints must be unique by key and effect pair" in p.message


def test_taint_and_label_formats():
    found = problems(rf(nodeLabels={"bad key": "v", "ok": "bad value!"},
                        nodeTaints=[{"key": "-x", "value": "a b", "effect": "NoSchedule"}],
                        tolerations=[{"key": "bad key", "operator": "Exists"}]))
    assert sorted(p.rule for p in found) == ["webhook.nodeLabels.key", "webhook.nodeLabels.value",
                                             "webhook.taint.key", "webhook.taint.value", "webhook.toleration.key"]


def test_topology_needs_node_labels():
    p = only(problems(rf(topologyName="default")))
    assert (p.code, p.field_path) == (codes.KUEUE_CEL_RULE, "spec")
    assert "at least one nodeLabel is required when topology is set" in p.message
    assert problems(rf(topologyName="default", nodeLabels={"a": "b"})) == []


@pytest.mark.parametrize("toleration,message", [
    ({"operator": "Equal", "value": "x"}, "operator must be Exists when 'key' is empty"),
    ({"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 3},
     "effect must be 'NoExecute' when 'tolerationSeconds' is set"),
    ({"key": "k", "operator": "Matches"}, "supported toleration values: 'Equal'(default), 'Exists'"),
    ({"key": "k", "operator": "Exists", "value": "v"}, "a value must be empty when 'operator' is 'Exists'"),
    ({"key": "k", "effect": "Sometimes"}, "supported taint effect values"),
])
def test_toleration_cel_rules(toleration, message):
    p = only(problems(rf(tolerations=[toleration])))
    assert p.code == codes.KUEUE_CEL_RULE and p.field_path == "spec.tolerations" and message in p.message


# --- metadata, identity, kinds, versions -------------------------------------------------------

def test_metadata_rules():
    bad_name = cq()
    bad_name["metadata"]["name"] = "Team_A"
    p = only(problems(bad_name))
    assert (p.code, p.rule) == (codes.OBJECT_METADATA, "metadata.name.invalid")
    assert "a lowercase RFC 1123 subdomain" in p.message
    cluster_scoped = cq()
    cluster_scoped["metadata"]["namespace"] = "team-a"
    assert only(problems(cluster_scoped)).rule == "metadata.namespace.forbidden"
    lq = {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "Team.A"},
          "spec": {"clusterQueue": "q"}}
    assert only(problems(lq)).rule == "metadata.namespace.invalid"
    labelled = cq()
    labelled["metadata"]["labels"] = {"kueue-policy/team": "a" * 64}
    labelled["metadata"]["owner"] = "me"
    assert sorted((p.code, p.rule) for p in problems(labelled)) == [
        (codes.KUEUE_UNKNOWN_FIELD, "metadata.unknownField"), (codes.OBJECT_METADATA, "metadata.labels.value")]


def test_duplicate_objects():
    found = problems(cq(), cq())
    p = only(found)
    assert (p.index, p.code) == (1, codes.DUPLICATE_OBJECT)
    assert "is also object #0" in p.message


def test_unknown_kueue_kind_and_missing_kind():
    found = problems({"apiVersion": V2, "kind": "Workload", "metadata": {"name": "w", "namespace": "n"}},
                     {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Cohort", "metadata": {"name": "c"}},
                     {"metadata": {"name": "x"}}, ["not", "a", "mapping"])
    assert [(p.index, p.code, p.rule) for p in found] == [
        (0, codes.UNKNOWN_OBJECT_KIND, "kind.unknownKueue"), (1, codes.UNKNOWN_OBJECT_KIND, "kind.unknownKueue"),
        (2, codes.UNKNOWN_OBJECT_KIND, "kind.missing"), (3, codes.UNKNOWN_OBJECT_KIND, "kind.notAMapping")]


@pytest.mark.parametrize("kueue,api,kind,gated", [
    ("0.14", V2, "ClusterQueue", True), ("0.15", V2, "ClusterQueue", False), ("v0.19.2", V2, "Cohort", False),
    ("0.14", V1, "ClusterQueue", False), ("0.12", V1, "Cohort", True), ("0.13", V1, "Cohort", False),
])
def test_kueue_version_gates(kueue, api, kind, gated):
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x"}, "spec": {}}
    found = problems(obj, kueue=kueue)
    assert [p.code for p in found] == ([codes.VERSION_GATE] if gated else [])


def test_version_strings_are_checked():
    with pytest.raises(ValueError, match="not a version"):
        verify_objects([], "latest", "0.19")


def test_output_is_sorted_and_deterministic():
    objs = [cq(queueingStrategy="X"), cq(groups=[]), rf(topologyName="t")]
    objs[1]["metadata"]["name"] = "b"
    first = problems(*objs)
    assert first == problems(*objs)
    assert [p.index for p in first] == sorted(p.index for p in first)


def test_input_objects_are_not_modified():
    obj = cq(preemption={}, flavorFungibility={})
    before = copy.deepcopy(obj)
    verify_objects([obj], "1.34", "0.19")
    assert obj == before  # defaults are applied to a copy


def test_trailing_newline_is_not_a_valid_name():
    # Python's `$` matches before a final newline; the API server's (Go) does not.
    lq = {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "q\n", "namespace": "team-a\n"},
          "spec": {"clusterQueue": "team-a\n"}}
    assert sorted((p.field_path, p.rule) for p in problems(lq)) == [
        ("metadata.name", "metadata.name.invalid"), ("metadata.namespace", "metadata.namespace.invalid"),
        ("spec.clusterQueue", "schema.pattern")]
    obj = cq()
    gpu_quota(obj)["nominalQuota"] = "16\n"
    assert [p.rule for p in problems(obj)] == ["schema.pattern"]
