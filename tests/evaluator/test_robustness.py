"""Malformed objects never crash the engine: whatever shape a manifest has, loading and
evaluating either works (skipping or flagging what is wrong) or raises the user-error type."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.core.errors import InputError
from compiler.evaluator import evaluate, load_manifests
from kp_testing import node_paths

KINDS = ["ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Workload"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(
    ["", "1", "-1", "12Gx", "500m", "1Gi", "cpu", "default", "Never", "Any", "main", "2026-01-01T00:00:00Z"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["name", "count", "nominalQuota", "resources", "flavors",
                                     "coveredResources", "requests", "containers", "template", "spec",
                                     "podSets", "queueName", "clusterQueue", "cohortName", "parentName",
                                     "resourceGroups", "namespaceSelector", "admission", "conditions",
                                     "status", "type", "minCount", "priority", "value"]), inner, max_size=4)),
    max_leaves=12)


@st.composite
def manifests(draw) -> list:
    docs = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(KINDS))
        doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
               "metadata": {"name": draw(st.sampled_from(["a", "b", "default"])), "namespace": "ns"}}
        for field in ("spec", "status", "value"):
            if draw(st.booleans()):
                doc[field] = draw(values)
        docs.append(doc if draw(st.integers(0, 9)) else draw(values))
    return docs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests())
def test_malformed_manifests_never_crash(docs: list) -> None:
    _load_evaluate_and_explain(docs)


def _replace(node, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        copy = dict(node)
        copy[head] = _replace(node[head], rest, new)
        return copy
    copy = list(node)
    copy[head] = _replace(node[head], rest, new)
    return copy


def _scenario_objects() -> list[list]:
    from pathlib import Path

    from ruamel.yaml import YAML
    here = Path(__file__).parent
    out = []
    for path in sorted((here / "scenarios").glob("*.yaml")):
        data = YAML(typ="safe").load(path.read_text())
        objects = []
        for fixture in data.get("include", []):
            objects.extend(YAML(typ="safe").load((here / "fixtures" / fixture).read_text()))
        objects.extend(data["objects"])
        out.append(objects)
    return out


SCENARIO_OBJECTS = _scenario_objects()


@st.composite
def mutated_scenarios(draw) -> list:
    objects = list(draw(st.sampled_from(SCENARIO_OBJECTS)))
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(objects) - 1))
        paths = list(node_paths(objects[index]))
        path = draw(st.sampled_from(paths[1:] or paths))
        objects[index] = _replace(objects[index], path, draw(values))
    return objects


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_scenarios())
def test_mutated_real_scenarios_never_crash(docs: list) -> None:
    _load_evaluate_and_explain(docs)


def _load_evaluate_and_explain(docs: list) -> None:
    """Unreadable input may raise InputError; anything else must evaluate, serialise and explain."""
    try:
        state = load_manifests(docs)
    except InputError:
        return
    result = evaluate(state)
    result.to_json()
    for name in result.outcomes:
        result.explain(name)


_FLAVOR = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}}


def _queue(name: str, cohort: str | None = None, flavor: str = "f", selector: object = None) -> dict:
    """ClusterQueue `name` with 4 cpu of `flavor`, for the namespaces `selector` selects (all by default)."""
    spec = {"namespaceSelector": {} if selector is None else selector, "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}
    if cohort is not None:
        spec["cohortName"] = cohort
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _submitted(cluster_queue: str, podsets: list | None = None) -> list:
    """LocalQueue ns/lq of `cluster_queue` and Workload ns/w in it (one pod asking 1 cpu by default)."""
    podsets = podsets or [{"name": "main", "count": 1, "template": {"spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]
    return [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
             "spec": {"clusterQueue": cluster_queue}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
             "spec": {"queueName": "lq", "podSets": podsets}}]


def test_a_selector_expression_with_a_non_string_key_selects_nothing() -> None:
    # found by the mutation test above: a matchExpressions key that is a list crashed the
    # namespace check (unhashable); the API server refuses it, so it selects no namespace
    docs = [_FLAVOR, _queue("cq", selector={"matchExpressions": [{"key": [], "operator": "In", "values": ["x"]}]}),
            *_submitted("cq")]
    outcome = evaluate(load_manifests(docs)).workload("ns/w")
    assert outcome.status == "inadmissible"
    assert "namespace doesn't match" in outcome.reason
    # `values` that is not a list (refused too) holds no value: `NotIn` it selects every namespace
    docs[1]["spec"]["namespaceSelector"] = {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": 5}]}
    assert evaluate(load_manifests(docs)).workload("ns/w").status == "admitted"


def test_a_selector_of_a_shape_the_api_server_refuses_skips_its_cluster_queue() -> None:
    """Found by fuzzing the CLI: `matchExpressions: 5` (or `matchLabels: [..]`) crashed the
    namespace check once a workload was nominated. Such a ClusterQueue cannot exist: skipped,
    with a warning naming the field, and the workload waits for it."""
    docs = [_FLAVOR, _queue("cq"), *_submitted("cq")]
    for selector, field in (({"matchExpressions": 5}, "matchExpressions"), ({"matchExpressions": [1.5]}, "matchExpressions"),
                            ({"matchLabels": ["a"]}, "matchLabels")):
        docs[1]["spec"]["namespaceSelector"] = selector
        state = load_manifests(docs)
        assert "cq" not in state.cluster_queues
        assert any(f"namespaceSelector.{field}" in w.message for w in state.warnings)
        assert evaluate(state).workload("ns/w").status != "admitted"


def test_a_list_whose_items_are_not_a_list_is_reported() -> None:
    state = load_manifests([{"apiVersion": "v1", "kind": "List", "items": 5}])
    assert [w.message for w in state.warnings] == ["List: items must be a list; skipped"]


def _flavors_and_workload(expression: dict) -> list:
    """Two flavors in zones z2 (a) and z1 (b), and a workload whose node affinity holds `expression`."""
    group = {"coveredResources": ["cpu"], "flavors": [{"name": f, "resources": [{"name": "cpu", "nominalQuota": "4"}]}
                                                     for f in ("a", "b")]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "a"},
         "spec": {"nodeLabels": {"zone": "z2"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "b"},
         "spec": {"nodeLabels": {"zone": "z1"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [group]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
         "spec": {"clusterQueue": "cq"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
         "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
             "affinity": affinity, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}},
    ]


def _placed(expression: dict) -> tuple:
    outcome = evaluate(load_manifests(_flavors_and_workload(expression))).workload("ns/w")
    return outcome.status, outcome.assignment


def test_a_node_affinity_expression_the_api_server_would_refuse_does_not_crash_the_flavor_scan() -> None:
    # found by the mutation test above: a key that is a list was looked up in a flavor's labels
    # (unhashable), and `values: 5` was iterated. Such an expression selects nothing: a term
    # without a key the flavors carry matches every flavor; `values` that is not a list holds
    # no value.
    assert _placed({"key": "zone", "operator": "In", "values": ["z1"]}) == ("admitted", {"main": {"cpu": "b"}})
    assert _placed({"key": ["zone"], "operator": "In", "values": ["z1"]}) == ("admitted", {"main": {"cpu": "a"}})
    assert _placed({"key": "zone", "operator": "In", "values": 5})[0] == "inadmissible"
    assert _placed({"key": "zone", "operator": "NotIn", "values": 5}) == ("admitted", {"main": {"cpu": "a"}})


def test_why_a_cluster_queue_is_inactive_is_said_at_its_cause() -> None:
    """Found by fuzzing the CLI: a cohort cycle or a missing flavor left only the workloads'
    reason "ClusterQueue ... is inactive"; the cause is now a KP907 warning, once per cycle."""
    cohort = lambda name, parent: {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",  # noqa: E731
                                   "metadata": {"name": name}, "spec": {"parentName": parent}}
    state = load_manifests([
        _FLAVOR, cohort("b", "c"), cohort("c", "a"), cohort("a", "b"), cohort("leaf", "a"), cohort("self", "self"),
        _queue("in-cycle", "leaf"), _queue("no-flavor", flavor="nosuch"), _queue("fine"), *_submitted("in-cycle")])
    messages = sorted(w.message for w in state.warnings if w.code == "KP907")
    assert messages == [
        "ClusterQueue no-flavor: ResourceFlavor nosuch does not exist; Kueue keeps the ClusterQueue inactive",
        "Cohort a: the parents of a -> b -> c -> a go round in a cycle; Kueue keeps every ClusterQueue under them "
        "inactive",
        "Cohort self: the parents of self -> self go round in a cycle; Kueue keeps every ClusterQueue under them "
        "inactive"]
    outcome = evaluate(state).workload("ns/w")
    assert outcome.status != "admitted" and "ClusterQueue in-cycle is inactive" in outcome.reason


def test_a_workload_naming_a_pod_set_twice_is_skipped_as_the_api_server_refuses_it() -> None:
    main = {"name": "main", "count": 1, "template": {"spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}
    state = load_manifests([_FLAVOR, _queue("cq"), *_submitted("cq", [main, main])])
    assert state.workloads == []
    assert any("spec.podSets names 'main' twice, which the API server refuses; skipped" in w.message for w in state.warnings)


def test_a_bad_count_is_one_problem_not_three() -> None:
    """Found by fuzzing the CLI: `count: "x!"` was followed by a count-0 warning (KP906) and a
    minCount one, both about the count that was already refused."""
    def workload(podset: dict) -> list:
        return [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
                 "spec": {"queueName": "lq", "podSets": [{"name": "main", "template": {"spec": {"containers": [
                     {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}, **podset}]}}]

    for count in ("x!", None, -1, 1.5, True):
        state = load_manifests(workload({"count": count, "minCount": 1}), ["w.yaml"])
        assert [(w.code, w.message.split(": ", 1)[1]) for w in state.warnings] == [
            ("KP904", f"pod set main: count must be a non-negative integer (got {count!r})")], count
        assert state.workloads[0].invalid is not None
    state = load_manifests(workload({"count": 4, "minCount": True}), ["w.yaml"])
    assert [w.message.split(": ", 1)[1] for w in state.warnings] == [
        "pod set main: minCount should be positive and less or equal to count"]
    state = load_manifests(workload({"count": 0}), ["w.yaml"])
    assert [w.code for w in state.warnings] == ["KP906"]  # a real count of 0 is still said


def test_a_bound_pod_with_a_bad_request_is_named_and_the_rest_is_read() -> None:
    """A pod outside TAS whose requests cannot be read: a KP904 warning names it and says its
    node usage is not counted; the node keeps its whole capacity and the other pod counts."""
    def pod(name: str, cpu: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "tools"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}

    state = load_manifests([pod("broken", "lots"), pod("fine", "2")], ["pods.yaml:1", "pods.yaml:2"])
    [warning] = [w for w in state.warnings if w.code == "KP904"]
    assert "Pod broken" in warning.message and "not counted" in warning.message and "lots" in warning.message
    assert state.node_usage == {"n1": {"cpu": 2000, "pods": 1}}
