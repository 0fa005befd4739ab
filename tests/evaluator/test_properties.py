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


def _pending_requests(engine: Engine):
    """(workload, its queue's node, pair, amount) for every pending workload and every pair its
    queue has quota for that it asks for: the requests the preemption properties ask about."""
    for info in engine.infos.values():
        node = engine.nodes.get(info.cluster_queue) if not info.holds_quota else None
        if node is None:
            continue
        for fr in node.quotas:
            amount = sum(ps.count * ps.per_pod.get(fr[1], 0) for ps in info.workload.podsets)
            if amount:
                yield info, node, fr, amount


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
        for info, node, fr, amount in _pending_requests(engine):
            request = PreemptionRequest(info, info.cluster_queue, frozenset([fr]), {fr: amount})
            if snapshot.beyond_own_limit(request):
                same, hierarchy, others = classical._sources(request, node)
                assert not classical._may_fit(request, node, same + hierarchy + others, True)
                beyond.append(info.cluster_queue)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(clusters())
    def shortcut_agrees(docs: list[dict]) -> None:
        Engine(load_manifests(docs), reuse=False).run(None, limit=500, after_cycle=check)

    shortcut_agrees()
    assert beyond



def _plain_classical_targets(classical, request, node) -> list:
    """Kueue's classical search as it reads, without the engine's shortcuts: every attempt
    its flavor of the policy calls for, over every candidate group, until one finds targets."""
    from compiler.evaluator.classical import _under_nominal

    policy = classical.snapshot.specs[request.cq].preemption
    same, hierarchy, others = classical._sources(request, node)
    groups = [hierarchy, others, same]
    in_hierarchy, in_others, in_same = [any(classical._offers(request, name) for name, _, _ in group)
                                         for group in groups]
    forbidden = policy.borrow_within_cohort == "Never"
    no_other = not in_hierarchy and not in_others
    if no_other and not in_same:
        return []
    if no_other or (forbidden and not _under_nominal(node, request.frs)):
        attempts = [True]
    elif forbidden and not in_hierarchy:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for allow_borrowing in attempts:
        found = classical._attempt(request, node, groups, allow_borrowing)
        if found:
            return found
    return []


def _shortcut_check(seen: dict[str, int]):
    """An `after_cycle` that compares the classical search with `_plain_classical_targets` for
    every pending workload and pair, counting searches that found targets and that did not."""
    from compiler.evaluator.classical import ClassicalPreemption
    from compiler.evaluator.preemption_common import PreemptionRequest

    def check(engine: Engine) -> None:
        snapshot = engine.preemptor.snapshot
        classical = ClassicalPreemption(snapshot)
        for info, node, fr, amount in _pending_requests(engine):
            request = PreemptionRequest(info, info.cluster_queue, frozenset([fr]), {fr: amount})
            plain = [target.info.key for target in _plain_classical_targets(classical, request, node)]
            assert [target.info.key for target in classical.targets(request)] == plain, (info.key, fr)
            seen["found" if plain else "none"] += 1

    return check


def test_the_classical_searchs_shortcuts_find_the_plain_searchs_targets() -> None:
    """The classical search's shortcuts (an attempt ruled out when the request does not fit
    with every candidate it may take removed, own usage first; a borrowing attempt under
    borrowWithinCohort Never that leaves out the other queues' candidates it would skip) find
    the same targets, in the same order, as the plain search over every group. Asked after
    every cycle of random clusters, for every pending workload and pair; some searches must
    have found targets and some not."""
    seen = {"found": 0, "none": 0}
    check = _shortcut_check(seen)

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(clusters())
    def shortcuts_agree(docs: list[dict]) -> None:
        Engine(load_manifests(docs), reuse=False).run(None, limit=500, after_cycle=check)

    shortcuts_agree()
    assert all(seen.values()), seen


def _admitted(name: str, cq: str, gpus: int, priority: int) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ns-" + cq, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"queueName": "lq", "priority": priority, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"gpu": str(gpus)}}}]}}}]},
            "status": {"admission": {"clusterQueue": cq, "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"gpu": "f0"}, "resourceUsage": {"gpu": str(gpus)}}]},
                "conditions": [{"type": t, "status": "True", "reason": t, "message": "running",
                                "lastTransitionTime": "2026-01-01T00:00:00Z"} for t in ("QuotaReserved", "Admitted")]}}


def test_a_search_that_must_not_borrow_takes_a_lender_back_as_well_as_its_own() -> None:
    """A queue under nominal whose request would borrow, in a full cohort, under
    borrowWithinCohort Never: the attempt without borrowing must evict one of its own (to stay
    within nominal) and the other queue's borrowed workload (to free the cohort); the pre-check
    that rules that attempt out must count the queue's own candidates, or the borrowing attempt
    answers with two of its own instead."""
    def queue(name: str, nominal: int) -> list[dict]:
        return [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
                 "spec": {"namespaceSelector": {}, "cohortName": "root",
                          "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                         "borrowWithinCohort": {"policy": "Never"}},
                          "resourceGroups": [{"coveredResources": ["gpu"], "flavors": [
                              {"name": "f0", "resources": [{"name": "gpu", "nominalQuota": str(nominal)}]}]}]}},
                {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": "lq", "namespace": "ns-" + name}, "spec": {"clusterQueue": name}}]

    docs = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f0"}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "root"}, "spec": {}},
            *queue("cq0", 8), *queue("cq1", 2),
            *(_admitted(f"a{i}", "cq0", 2, 0) for i in range(3)), _admitted("b0", "cq1", 4, 0)]
    pending = _admitted("p", "cq0", 4, 5)
    del pending["status"]
    docs.append(pending)
    seen = {"found": 0, "none": 0}
    engine = Engine(load_manifests(docs), reuse=False)
    _shortcut_check(seen)(engine)
    assert seen["found"] == 1, seen
    from compiler.evaluator.classical import ClassicalPreemption
    from compiler.evaluator.preemption_common import PreemptionRequest

    info = engine.infos["ns-cq0/p"]
    fr = ("f0", "gpu")
    request = PreemptionRequest(info, "cq0", frozenset([fr]), {fr: 4})
    found = ClassicalPreemption(engine.preemptor.snapshot).targets(request)
    assert sorted(target.info.key for target in found) == ["ns-cq0/a0", "ns-cq1/b0"], found
