"""Property tests: whatever the cluster, the engine never over-commits quota, its incremental
usage accounting equals a recount from scratch, and the input order does not matter."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.evaluator import evaluate, load_manifests
from compiler.evaluator.result import EvaluationResult
from compiler.evaluator.engine import Engine

FLAVORS = ["f0", "f1", "f2"]
RESOURCES = ["cpu", "gpu"]
POLICIES = ["Never", "LowerPriority", "Any"]


@st.composite
def clusters(draw) -> list[dict]:
    docs: list[dict] = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                         "metadata": {"name": f}} for f in FLAVORS]
    n_roots = draw(st.integers(1, 2))
    cohorts = []
    for r in range(n_roots):
        cohorts.append((f"root{r}", None))
        for c in range(draw(st.integers(0, 2))):
            cohorts.append((f"root{r}-c{c}", f"root{r}"))
    for name, parent in cohorts:
        spec: dict = {}
        if parent:
            spec["parentName"] = parent
            if draw(st.booleans()):
                spec["resourceGroups"] = [{"coveredResources": RESOURCES, "flavors": [
                    {"name": f, "resources": [
                        {"name": r, "nominalQuota": str(draw(st.integers(0, 4))),
                         **({"borrowingLimit": str(draw(st.integers(0, 6)))} if draw(st.booleans()) else {}),
                         **({"lendingLimit": str(draw(st.integers(0, 4)))} if draw(st.booleans()) else {})}
                        for r in RESOURCES]} for f in FLAVORS]}]
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name},
                     "spec": spec})
    n_cqs = draw(st.integers(1, 5))
    for i in range(n_cqs):
        flavors = draw(st.lists(st.sampled_from(FLAVORS), min_size=1, max_size=3, unique=True))
        resources = []
        for f in flavors:
            quotas = []
            for r in RESOURCES:
                nominal = draw(st.integers(0, 8))
                q = {"name": r, "nominalQuota": str(nominal)}
                if draw(st.booleans()):
                    q["borrowingLimit"] = str(draw(st.integers(0, 8)))
                if draw(st.booleans()):
                    q["lendingLimit"] = str(draw(st.integers(0, nominal)))
                quotas.append(q)
            resources.append({"name": f, "resources": quotas})
        spec = {"namespaceSelector": {}, "cohortName": draw(st.sampled_from([c for c, _ in cohorts])),
                "queueingStrategy": draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
                "preemption": {"withinClusterQueue": draw(st.sampled_from(["Never", "LowerPriority"])),
                               "reclaimWithinCohort": draw(st.sampled_from(POLICIES)),
                               "borrowWithinCohort": {"policy": draw(st.sampled_from(["Never", "LowerPriority"]))}},
                "flavorFungibility": {"whenCanBorrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
                                      "whenCanPreempt": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"]))},
                "resourceGroups": [{"coveredResources": RESOURCES, "flavors": resources}]}
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                     "metadata": {"name": f"cq{i}"}, "spec": spec})
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                     "metadata": {"name": "lq", "namespace": f"ns{i}"}, "spec": {"clusterQueue": f"cq{i}"}})
    for w in range(draw(st.integers(1, 14))):
        count = draw(st.integers(1, 4))
        podset = {"name": "main", "count": count, "template": {"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": str(draw(st.integers(0, 3))), "gpu": str(draw(st.integers(0, 2)))}}}]}}}
        if count > 1 and draw(st.booleans()):
            podset["minCount"] = draw(st.integers(1, count))
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                     "metadata": {"name": f"w{w}", "namespace": f"ns{draw(st.integers(0, n_cqs - 1))}",
                                  "creationTimestamp": f"2026-01-01T00:00:{draw(st.integers(0, 59)):02d}Z"},
                     "spec": {"queueName": "lq", "priority": draw(st.integers(0, 3)), "podSets": [podset]}})
    if draw(st.booleans()):
        docs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "fairSharing": {}})
    return docs


def _engine(docs: list[dict]) -> Engine:
    engine = Engine(load_manifests(docs))
    engine.run(None, limit=500)
    return engine


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_queue_or_cohort_exceeds_what_it_may_hold(docs: list[dict]) -> None:
    engine = _engine(docs)
    for name, node in engine.nodes.items():
        for fr, used in node.usage.items():
            assert used >= 0
            quota = node.quota(fr)
            if node.parent is None:
                assert used <= quota.nominal, (name, fr)
                continue
            # nominal + what it may borrow: never above its maximum capacity
            assert used <= node.potential_available(fr), (name, fr, used)
            if quota.borrowing_limit is not None:
                assert used <= quota.nominal + quota.borrowing_limit, (name, fr)
    for name, node in engine.cohort_nodes.items():
        for fr, used in node.usage.items():
            if node.parent is None:
                assert used <= node.subtree.get(fr, 0), (name, fr, used)
            else:
                limit = node.quota(fr).borrowing_limit
                if limit is not None:
                    assert used - node.local.get(fr, 0) <= node.subtree.get(fr, 0) - node.local.get(fr, 0) + limit


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_incremental_usage_equals_a_recount(docs: list[dict]) -> None:
    engine = _engine(docs)
    expected: dict[str, dict] = {name: {} for name in engine.nodes}
    for cq, workloads in engine.admitted.items():
        for info in workloads.values():
            for fr, value in info.usage.items():
                expected[cq][fr] = expected[cq].get(fr, 0) + value
    for name, node in engine.nodes.items():
        assert {k: v for k, v in node.usage.items() if v} == {k: v for k, v in expected[name].items() if v}
    # cohort usage = sum over children of the part that spills past their local quota
    def check(cohort) -> None:
        for child in cohort.child_cohorts:
            check(child)
        want: dict = {}
        for child in cohort.child_cohorts + cohort.child_cqs:
            for fr, used in child.usage.items():
                spill = max(0, used - child.local.get(fr, 0))
                if spill:
                    want[fr] = want.get(fr, 0) + spill
        assert {k: v for k, v in cohort.usage.items() if v} == want, cohort.name
    for cohort in engine.cohort_nodes.values():
        if cohort.parent is None:
            check(cohort)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_input_order(docs: list[dict], rnd: random.Random) -> None:
    first = json.dumps(evaluate(load_manifests(docs)).to_json(), sort_keys=True)
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    assert json.dumps(evaluate(load_manifests(shuffled)).to_json(), sort_keys=True) == first


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_every_workload_gets_an_outcome_with_a_reason(docs: list[dict]) -> None:
    result = evaluate(load_manifests(docs))
    names = {f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in docs if d["kind"] == "Workload"}
    assert set(result.outcomes) == names
    for outcome in result.outcomes.values():
        assert outcome.status in {"admitted", "running", "pending", "inadmissible", "preempted"}
        assert outcome.reason
        if outcome.status == "admitted":
            assert outcome.assignment and outcome.cluster_queue


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_reused_nominations_change_nothing(docs: list[dict]) -> None:
    """The engine reuses a nomination (and a preemption search) while nothing it read was
    committed; a run that recomputes everything ends in exactly the same state."""
    runs = []
    for reuse in (True, False):
        engine = Engine(load_manifests(docs), reuse=reuse)
        engine.run(None, limit=500)
        runs.append((engine.cycle, json.dumps(EvaluationResult(engine).to_json(), sort_keys=True)))
    assert runs[0] == runs[1]


def test_reuse_changes_nothing_on_a_churning_cluster() -> None:
    """A cluster that needs many cycles (preemption in and across queues of two cohorts),
    where reuse actually happens."""
    docs = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}}
            for f in ("f0", "f1")]
    docs += [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "root"}},
             {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "a"},
              "spec": {"parentName": "root"}},
             {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "b"},
              "spec": {"parentName": "root"}}]
    rnd = random.Random(5)
    for i in range(6):
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": f"cq{i}"},
                     "spec": {"cohortName": "ab"[i % 2], "namespaceSelector": {},
                              "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                              "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                  {"name": f, "resources": [{"name": "cpu", "nominalQuota": str(rnd.randint(2, 6))}]}
                                  for f in ("f0", "f1")]}]}})
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                     "metadata": {"name": "lq", "namespace": f"ns{i}"}, "spec": {"clusterQueue": f"cq{i}"}})
    for w in range(120):
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                     "metadata": {"name": f"w{w:03d}", "namespace": f"ns{rnd.randrange(6)}",
                                  "creationTimestamp": f"2026-01-01T00:{w // 60:02d}:{w % 60:02d}Z"},
                     "spec": {"queueName": "lq", "priority": rnd.choice([0, 1, 5]), "podSets": [
                         {"name": "main", "count": rnd.choice([1, 2]), "template": {"spec": {"containers": [
                             # 99 cpu never fits anywhere: decided by quotas alone, and reused
                             {"name": "c", "resources": {"requests": {"cpu": str(rnd.choice([1, 2, 3, 99]))}}}]}}}]}})
    engines = []
    for reuse in (True, False):
        engine = Engine(load_manifests(docs), reuse=reuse)
        engine.run(None)
        engines.append(engine)
    reused, plain = engines
    assert reused.reused > 0 and reused.cycle > 5
    assert json.dumps(EvaluationResult(reused).to_json()) == json.dumps(EvaluationResult(plain).to_json())
    assert (reused.cycle, reused.decisions) == (plain.cycle, plain.decisions)


def test_a_request_beyond_its_queues_limit_has_no_room_however_many_are_evicted() -> None:
    """The preemptor's shortcut (a request beyond its own queue's borrowingLimit, with all
    that queue's candidates gone, finds nothing, classical or fair) agrees with the full check
    it skips: with every candidate of every source removed at once, the request does not fit.
    Asked after every cycle of random clusters, for every pending workload and every pair its
    queue has quota for (the engine's own objects, unpatched: compiled, they cannot be), and
    the shortcut must have answered "beyond" some of those times."""
    from compiler.evaluator.classical import ClassicalPreemption
    from compiler.evaluator.preemption_common import PreemptionRequest

    beyond: list[str] = []

    def check(engine: Engine) -> None:
        snapshot = engine.preemptor.snapshot
        classical = ClassicalPreemption(snapshot)
        for info in engine.infos.values():
            node = engine.nodes.get(info.cluster_queue) if not info.holds_quota else None
            if node is None:
                continue
            for fr in node.quotas:
                amount = sum(ps.count * ps.per_pod.get(fr[1], 0) for ps in info.workload.podsets)
                request = PreemptionRequest(info, info.cluster_queue, frozenset([fr]), {fr: amount})
                if amount and snapshot.beyond_own_limit(request):
                    same, hierarchy, others = classical._sources(request, node)
                    assert not classical._may_fit(request, node, same + hierarchy + others)
                    beyond.append(info.cluster_queue)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(clusters())
    def shortcut_agrees(docs: list[dict]) -> None:
        Engine(load_manifests(docs), reuse=False).run(None, limit=500, after_cycle=check)

    shortcut_agrees()
    assert beyond
