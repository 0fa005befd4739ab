"""A team's `priority` reaches its jobs: the tree carries a MutatingAdmissionPolicy per team that
labels unlabelled jobs of the kinds Kueue integrates, in the team's namespaces, with the team's
WorkloadPriorityClass, in the admissionregistration version the cluster's Kubernetes serves."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from compiler.cel.engine import evaluate
from compiler.verify import verify_objects
from kp_testing import run_cli
from kp_testing.policies import CLUSTER, team, write_policy

yaml = YAML(typ="safe", pure=True)
TEAMS = {"a.yaml": team("a", "namespaces: [a-train, a-eval]\ngpus: {guaranteed: 8}\npriority: high"),
         "b.yaml": team("b", "namespaces: [b]\ngpus: {guaranteed: 4}")}   # the cluster default: low


def _compile(tmp_path, cluster: str, extra: dict[str, str] | None = None):
    policies = write_policy(tmp_path, {"cluster.yaml": cluster, **TEAMS, **(extra or {})})
    result = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "lab"


def _policies(folder):
    found = {}
    for kind in ("mutatingadmissionpolicies", "mutatingadmissionpolicybindings"):
        for path in sorted((folder / "admission" / kind).glob("*.yaml")) if (folder / "admission").exists() else []:
            obj = yaml.load(path.read_text())
            found[(obj["kind"], obj["metadata"]["name"])] = obj
    return found


def test_kubernetes_1_36_gets_a_v1_policy_and_binding_per_team(tmp_path):
    folder = _compile(tmp_path, CLUSTER.replace('"1.34"', '"1.36"'))
    found = _policies(folder)
    assert sorted(found) == [("MutatingAdmissionPolicy", "kueue-policy-priority-a"),
                             ("MutatingAdmissionPolicy", "kueue-policy-priority-b"),
                             ("MutatingAdmissionPolicyBinding", "kueue-policy-priority-a"),
                             ("MutatingAdmissionPolicyBinding", "kueue-policy-priority-b")]
    assert {o["apiVersion"] for o in found.values()} == {"admissionregistration.k8s.io/v1"}
    policy = found[("MutatingAdmissionPolicy", "kueue-policy-priority-a")]
    spec = policy["spec"]
    (selector,) = spec["matchConstraints"]["namespaceSelector"]["matchExpressions"]
    assert selector == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a-eval", "a-train"]}
    rules = {(rule["apiGroups"][0], resource) for rule in spec["matchConstraints"]["resourceRules"]
             for resource in rule["resources"]}
    assert {("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"), ("", "pods")} <= rules
    assert all(rule["operations"] == ["CREATE"] for rule in spec["matchConstraints"]["resourceRules"])
    (mutation,) = spec["mutations"]
    assert mutation["patchType"] == "ApplyConfiguration"
    assert '"kueue.x-k8s.io/priority-class": "high"' in mutation["applyConfiguration"]["expression"]
    assert '"low"' in found[("MutatingAdmissionPolicy", "kueue-policy-priority-b")]["spec"]["mutations"][0][
        "applyConfiguration"]["expression"]
    assert found[("MutatingAdmissionPolicyBinding", "kueue-policy-priority-a")]["spec"] == {
        "policyName": "kueue-policy-priority-a"}
    kustomization = yaml.load((folder / "kustomization.yaml").read_text())["resources"]
    assert "admission/mutatingadmissionpolicies/kueue-policy-priority-a.yaml" in kustomization


def _request(resource: str, labels: dict | None) -> dict:
    obj = {"metadata": {"name": "x"}}
    if labels is not None:
        obj["metadata"]["labels"] = labels
    return {"object": obj, "request": {"resource": {"group": "", "version": "v1", "resource": resource}}}


@pytest.mark.parametrize("resource, labels, mutated", [
    ("jobs", None, True),                                                       # no labels at all
    ("jobs", {"kueue.x-k8s.io/queue-name": "default"}, True),
    ("jobs", {"kueue.x-k8s.io/priority-class": "critical"}, False),             # the job's own wins
    ("pods", {"kueue.x-k8s.io/queue-name": "default"}, True),                   # a plain Pod Kueue manages
    ("pods", {"app": "x"}, False),                                              # not Kueue's: a Job's pod
    ("pods", None, False),
])
def test_the_match_conditions_select_unlabelled_jobs_only(tmp_path, resource, labels, mutated):
    folder = _compile(tmp_path, CLUSTER.replace('"1.34"', '"1.36"'))
    conditions = _policies(folder)[("MutatingAdmissionPolicy", "kueue-policy-priority-a")]["spec"]["matchConditions"]
    assert all(evaluate(c["expression"], _request(resource, labels)) for c in conditions) is mutated


def test_pods_are_matched_only_with_the_pod_integration(tmp_path):
    base = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            "integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]\n")
    cluster = CLUSTER.replace('"1.34"', '"1.36"') + "  fairSharing: {enabled: true}\n" \
        "  kueueConfig: {base: kueue/config.yaml}\n"
    folder = _compile(tmp_path, cluster, {"kueue/config.yaml": base})
    spec = _policies(folder)[("MutatingAdmissionPolicy", "kueue-policy-priority-a")]["spec"]
    rules = sorted(r["apiGroups"][0] for r in spec["matchConstraints"]["resourceRules"])
    assert rules == ["batch", "jobset.x-k8s.io"]
    assert [c["name"] for c in spec["matchConditions"]] == ["no-priority-class-label"]


def test_before_1_36_v1beta1_only_with_the_feature_gate_else_none(tmp_path):
    assert _policies(_compile(tmp_path / "plain", CLUSTER)) == {}  # 1.34: not served by default
    gated = CLUSTER + "  featureGates: {MutatingAdmissionPolicy: true}\n"
    found = _policies(_compile(tmp_path / "gated", gated))
    assert found and {o["apiVersion"] for o in found.values()} == {"admissionregistration.k8s.io/v1beta1"}


def _emitted(tmp_path):
    folder = _compile(tmp_path, CLUSTER.replace('"1.34"', '"1.36"'))
    found = _policies(folder)
    return found[("MutatingAdmissionPolicy", "kueue-policy-priority-a")], \
        found[("MutatingAdmissionPolicyBinding", "kueue-policy-priority-a")]


def test_the_emitted_objects_pass_the_api_servers_checks(tmp_path):
    policy, binding = _emitted(tmp_path)
    assert verify_objects([policy, binding], "1.36", "0.19") == []


@pytest.mark.parametrize("break_it, field, words", [
    (lambda p: p["spec"].pop("reinvocationPolicy"), "spec.reinvocationPolicy", "Required value"),
    (lambda p: p["spec"].update(mutations=[]), "spec.mutations", "at least one"),
    (lambda p: p["spec"]["matchConstraints"]["resourceRules"][0].update(operations=["DELETE"]),
     "spec.matchConstraints.resourceRules.operations", "Unsupported value"),
    (lambda p: p["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0].update(values=[]),
     "spec.matchConstraints.namespaceSelector.matchExpressions[0].values", "Required value"),
    (lambda p: p["spec"]["matchConditions"][0].update(expression="object.metadata.("),
     "spec.matchConditions[0].expression", "compilation failed"),
    (lambda p: p["spec"]["matchConditions"].append(dict(p["spec"]["matchConditions"][0])),
     "spec.matchConditions[2].name", "Duplicate value"),
    (lambda p: p["spec"]["mutations"][0].update(patchType="JSONPatch"),
     "spec.mutations[0].jsonPatch", "must be specified when patchType is JSONPatch"),
    (lambda p: p["spec"].pop("matchConstraints"), "spec.matchConstraints", "Required value"),
    # Found by the live mutation test: a wildcard stands alone, and a rule needs its operations.
    (lambda p: p["spec"]["matchConstraints"]["resourceRules"][0]["apiVersions"].append("*"),
     "spec.matchConstraints.resourceRules[0].apiVersions", "if '*' is present"),
    (lambda p: p["spec"]["matchConstraints"]["resourceRules"][0].pop("operations"),
     "spec.matchConstraints.resourceRules[0].operations", "Required value"),
])
def test_what_the_api_server_refuses_is_refused(tmp_path, break_it, field, words):
    policy, binding = _emitted(tmp_path)
    break_it(policy)
    problems = verify_objects([policy, binding], "1.36", "0.19")
    assert any(p.field_path == field and words in p.message for p in problems), problems


def test_a_binding_without_its_policy_is_refused(tmp_path):
    _, binding = _emitted(tmp_path)
    (problem,) = verify_objects([binding], "1.36", "0.19")
    assert problem.field_path == "spec.policyName" and "applies nothing" in problem.message
    # and the kind needs 1.36 at v1 (1.34 serves v1beta1 only)
    assert any(p.rule == "version.kubernetesTooOld" for p in verify_objects([binding], "1.34", "0.19"))
