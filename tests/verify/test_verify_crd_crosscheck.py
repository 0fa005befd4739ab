"""Cross-check: the verifier's own Kueue model agrees with Kueue's real CRDs (v0.19.2), for
both kueue.x-k8s.io/v1beta1 and v1beta2, on the model's structure, on a hand-written corpus and
on hypothesis-generated objects. The oracle (verify_crd_oracle.py) is built in the test from the
CRD files; the verifier never reads them."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.core import codes
from compiler.verify import kueue_spec, verify_objects
from kp_testing.verify_crd_oracle import CrdOracle, convert
from kp_testing.verify_strategies import BY_KIND, V1BETA1, V1BETA2, with_unknown_field

VERSIONS = (V1BETA1, V1BETA2)
KINDS = tuple(kueue_spec.KINDS)
SCHEMA_CODES = {codes.KUEUE_SCHEMA, codes.KUEUE_UNKNOWN_FIELD}


@pytest.fixture(scope="module")
def oracle(kueue_crd_dir) -> CrdOracle:
    return CrdOracle(kueue_crd_dir)


# --- 1. the model has the CRDs' structure -----------------------------------------------------

_COMPARED = ("type", "enum", "pattern", "maxLength", "minLength", "maxItems", "minItems", "maxProperties",
             "minimum", "maximum")


def _flatten(schema: dict, path: str, out: dict, *, ours: bool) -> dict:
    entry = {k: schema[k] for k in _COMPARED if k in schema}
    if "required" in schema:
        entry["required"] = sorted(schema["required"])
    if schema.get("additionalProperties") is False:
        entry["closed"] = True
    keys = schema.get("x-list-map-keys" if ours else "oracle-list-map-keys")
    if keys:
        entry["listMapKeys"] = keys
    if schema.get("x-list-set" if ours else "oracle-list-set"):
        entry["listSet"] = True
    out[path] = entry
    for name, sub in schema.get("properties", {}).items():
        _flatten(sub, f"{path}.{name}", out, ours=ours)
    if isinstance(schema.get("items"), dict):
        _flatten(schema["items"], f"{path}[]", out, ours=ours)
    if isinstance(schema.get("additionalProperties"), dict):
        _flatten(schema["additionalProperties"], f"{path}{{}}", out, ours=ours)
    return out


def _defaults(schema: dict, path: str, out: dict) -> dict:
    if "default" in schema:
        out[path] = schema["default"]
    for name, sub in schema.get("properties", {}).items():
        if not (path == "" and name == "status"):
            _defaults(sub, f"{path}.{name}", out)
    if isinstance(schema.get("items"), dict):
        _defaults(schema["items"], f"{path}[]", out)
    return out


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_model_has_the_crd_structure(oracle, kind, version):
    crd_raw = oracle.versions[(version, kind)].schema
    theirs = _flatten(convert(crd_raw, top=True), "", {}, ours=False)
    ours = _flatten(kueue_spec.schema_for(version, kind), "", {}, ours=True)
    assert sorted(ours) == sorted(theirs), "fields differ from the CRD"
    for path in theirs:
        assert ours[path] == theirs[path], f"{kind} {version} {path or '<root>'}"
    ours_defaults = _defaults(kueue_spec.schema_for(version, kind), "", {})
    assert ours_defaults == _defaults(crd_raw, "", {})


def test_oracle_skips_only_transition_rules(oracle):
    # The CRDs' update-only rules (oldSelf) are the only ones the verifier does not evaluate.
    assert oracle.versions[(V1BETA2, "ResourceFlavor")].transition_rules == 3
    assert oracle.versions[(V1BETA2, "LocalQueue")].transition_rules == 1
    assert len(oracle.versions[(V1BETA2, "ClusterQueue")].rules) == 4


# --- 2. verdicts agree ------------------------------------------------------------------------

def assert_agrees(oracle: CrdOracle, obj: dict) -> bool:
    """The verifier and the CRD oracle refuse the same fields for the same reasons.
    Returns the CRD's verdict (valid or not)."""
    verdict = oracle.check(obj)
    problems = verify_objects([copy.deepcopy(obj)], "1.34", "0.19")
    ours_schema = {p.field_path for p in problems if p.code in SCHEMA_CODES and not p.field_path.startswith("metadata")}
    assert ours_schema == verdict.schema_paths, (obj, [p.describe() for p in problems])
    ours_unknown = {p.field_path for p in problems if p.code == codes.KUEUE_UNKNOWN_FIELD}
    assert ours_unknown == verdict.unknown_paths
    if not verdict.schema_paths - verdict.unknown_paths:
        # Structurally sound: CEL rules ran on both sides.
        ours_cel = [(p.field_path, p.message) for p in problems if p.code == codes.KUEUE_CEL_RULE]
        assert {path for path, _ in ours_cel} == {path for path, _ in verdict.cel}, (obj, ours_cel, verdict.cel)
        for path, message in verdict.cel:
            assert any(p == path and message in m for p, m in ours_cel), (path, message, ours_cel)
    return verdict.valid


def _cq(version: str, **spec) -> dict:
    return {"apiVersion": version, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec}


def _gpu_group(**quota) -> dict:
    return {"coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8", **quota}]}]}


def corpus(version: str) -> list[tuple[str, dict, bool]]:
    """(label, object, valid per the CRD) for one API version."""
    cohort_field = "cohortName" if version == V1BETA2 else "cohort"
    rf = {"apiVersion": version, "kind": "ResourceFlavor", "metadata": {"name": "h100"}}
    lq = {"apiVersion": version, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "ns"}}
    wpc = {"apiVersion": version, "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}}
    co = {"apiVersion": version, "kind": "Cohort", "metadata": {"name": "c"}}
    cases = [
        ("cq minimal", _cq(version), True),
        ("cq full", _cq(version, **{cohort_field: "org"}, namespaceSelector={}, queueingStrategy="StrictFIFO",
                        resourceGroups=[_gpu_group(borrowingLimit="4", lendingLimit="2")],
                        flavorFungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                                           "preference": "BorrowingOverPreemption"},
                        preemption={"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
                        fairSharing={"weight": "2"}, stopPolicy="Hold"), True),
        ("cq bad enum", _cq(version, queueingStrategy="FIFO"), False),
        ("cq unknown field", _cq(version, cohortname="x"), False),
        ("cq borrowingLimit without cohort", _cq(version, resourceGroups=[_gpu_group(borrowingLimit="4")]), False),
        ("cq lendingLimit without cohort (webhook only)", _cq(version, resourceGroups=[_gpu_group(lendingLimit="4")]),
         True),
        ("cq preference without TryNextFlavor", _cq(version, flavorFungibility={"preference": "PreemptionOverBorrowing"}),
         False),
        ("cq reclaim Never with borrowWithinCohort", _cq(version, preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}),
         False),
        ("cq flavor resources shorter than covered", _cq(version, resourceGroups=[
            {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "d", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}]),
         False),
        ("cq duplicate flavor in a group", _cq(version, resourceGroups=[
            {"coveredResources": ["cpu"], "flavors": [{"name": "d", "resources": [{"name": "cpu", "nominalQuota": 1}]},
                                                     {"name": "d", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]),
         False),
        ("cq bad quantity", _cq(version, resourceGroups=[_gpu_group(lendingLimit="lots")]), False),
        ("cq float quantity", _cq(version, resourceGroups=[{"coveredResources": ["cpu"], "flavors": [
            {"name": "d", "resources": [{"name": "cpu", "nominalQuota": 1.5}]}]}]), False),
        ("cq 17 resource groups", _cq(version, resourceGroups=[_gpu_group() for _ in range(17)]), False),
        ("cq empty coveredResources", _cq(version, resourceGroups=[{"coveredResources": [], "flavors": []}]), False),
        ("cq maxPriorityThreshold over int32", _cq(version, preemption={
            "reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 2**31}}),
         False),
        ("cq uppercase cohort", _cq(version, **{cohort_field: "Org"}), False),
        ("rf full", {**rf, "spec": {"nodeLabels": {"a": "b"}, "nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
                                    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                                    "topologyName": "topo"}}, True),
        ("rf topology without labels", {**rf, "spec": {"topologyName": "topo"}}, False),
        ("rf topology with empty labels", {**rf, "spec": {"topologyName": "topo", "nodeLabels": {}}}, False),
        ("rf 9 labels", {**rf, "spec": {"nodeLabels": {f"k{i}": "v" for i in range(9)}}}, False),
        ("rf taint bad effect", {**rf, "spec": {"nodeTaints": [{"key": "k", "effect": "Always"}]}}, False),
        ("rf taint without effect", {**rf, "spec": {"nodeTaints": [{"key": "k"}]}}, False),
        ("rf toleration empty key with Equal", {**rf, "spec": {"tolerations": [{"operator": "Equal"}]}}, False),
        ("rf toleration seconds with NoSchedule", {**rf, "spec": {"tolerations": [
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]}}, False),
        ("rf toleration Exists with value", {**rf, "spec": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}},
         False),
        ("lq", {**lq, "spec": {"clusterQueue": "team-a", "stopPolicy": "None"}}, True),
        ("lq bad stopPolicy", {**lq, "spec": {"clusterQueue": "team-a", "stopPolicy": "Drain"}}, False),
        ("wpc", {**wpc, "value": 1000, "description": "prod"}, True),
        ("wpc without value", {**wpc, "description": "prod"}, False),
        ("wpc value as string", {**wpc, "value": "1000"}, False),
        ("wpc spec", {**wpc, "value": 1, "spec": {}}, False),
        ("cohort with limits", {**co, "spec": {"parentName": "org", "resourceGroups": [_gpu_group(lendingLimit="99")]}}, True),
        ("topology block rack host", {"apiVersion": version, "kind": "Topology", "metadata": {"name": "t"}, "spec": {
            "levels": [{"nodeLabel": "example.com/block"}, {"nodeLabel": "example.com/rack"},
                       {"nodeLabel": "kubernetes.io/hostname"}]}}, True),
        ("topology hostname not last", {"apiVersion": version, "kind": "Topology", "metadata": {"name": "t"}, "spec": {
            "levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "example.com/rack"}]}}, False),
        ("topology duplicate level", {"apiVersion": version, "kind": "Topology", "metadata": {"name": "t"}, "spec": {
            "levels": [{"nodeLabel": "example.com/rack"}, {"nodeLabel": "example.com/rack"}]}}, False),
        ("topology 17 levels", {"apiVersion": version, "kind": "Topology", "metadata": {"name": "t"}, "spec": {
            "levels": [{"nodeLabel": f"example.com/l{i}"} for i in range(17)]}}, False),
        ("topology without levels", {"apiVersion": version, "kind": "Topology", "metadata": {"name": "t"},
                                     "spec": {}}, False),
        ("cohort mismatched resources", {**co, "spec": {"resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "d", "resources": []}]}]}}, False),
    ]
    if version == V1BETA2:
        cases += [
            ("wpc long description", {**wpc, "value": 1, "description": "x" * 2049}, False),
            ("cq v1beta1 fungibility value in v1beta2", _cq(version, flavorFungibility={"whenCanBorrow": "Borrow"}), False),
            ("cq v1beta1 cohort field in v1beta2", _cq(version, cohort="org"), False),
            ("cq admission check onFlavors duplicate", _cq(version, admissionChecksStrategy={
                "admissionChecks": [{"name": "prov", "onFlavors": ["a", "a"]}]}), False),
        ]
    else:
        cases += [
            ("wpc long description (no limit in v1beta1)", {**wpc, "value": 1, "description": "x" * 2049}, True),
            ("cq deprecated Borrow", _cq(version, flavorFungibility={"whenCanBorrow": "Borrow"}), True),
            ("cq v1beta2 cohortName in v1beta1", _cq(version, cohortName="org"), False),
        ]
    return cases


CORPUS = [(version, label, obj, valid) for version in VERSIONS for label, obj, valid in corpus(version)]


@pytest.mark.parametrize("version,label,obj,valid", CORPUS, ids=[f"{v.rsplit('/', 1)[1]}-{lbl}" for v, lbl, _, _ in CORPUS])
def test_corpus_agrees_with_crd(oracle, version, label, obj, valid):
    assert assert_agrees(oracle, obj) is valid


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_objects_agree_with_crd(oracle, kind, version, data):
    obj = data.draw(with_unknown_field(BY_KIND[kind](version)))
    assert_agrees(oracle, obj)
