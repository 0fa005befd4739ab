"""The engine's fast paths decide exactly what its plain paths decide: the incremental
fair-sharing tournament against the tournament re-run on every pick, and the reusing engine
against the one that recomputes everything, on a churning world with fair sharing on and off."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

import pytest

from compiler.evaluator import load_manifests
from compiler.evaluator.drs import _share, share_of
from compiler.evaluator.fair_ordering import TargetOrdering, _almost, holding
from compiler.evaluator.fair_preemption import FairSharingPreemption
from compiler.evaluator.fair_tournament import FairTournament, _head_keys, pop_fair
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.preemption_common import PreemptionRequest, candidate_key, candidate_order
from compiler.evaluator.result import EvaluationResult
from compiler.evaluator.engine import Engine

FLAVORS = ("f0", "f1")


def _world(fair_sharing: bool, seed: int = 3, workloads: int = 160, queues: int = 8, even: bool = False,
           reclaim: tuple[str, ...] = ("Any", "LowerPriority", "Never")) -> list[dict]:
    """Two cohort trees (a root with two sub-cohorts, and a flat one), queues with lending and
    borrowing limits and fair weights, preempting in and across queues; more work than fits.
    `even`: every queue has the same quotas, and some sit right under the root next to its
    sub-cohorts, so that shares are often equal (the walks' ties)."""
    rnd = random.Random(seed)
    docs: list[dict] = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}}
                        for f in FLAVORS]
    if fair_sharing:
        docs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                     "fairSharing": {"enable": True}})
    for name, parent in (("root", None), ("a", "root"), ("b", "root"), ("flat", None)):
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name},
                     "spec": {"parentName": parent} if parent else {}})
    for i in range(queues):
        quotas = []
        for f in FLAVORS:
            cpu = {"name": "cpu", "nominalQuota": "4" if even else str(rnd.randint(2, 8))}
            if i % 3 == 1:
                cpu["lendingLimit"] = "1"
            if i % 4 == 2:
                cpu["borrowingLimit"] = "3"
            gpus = "1" if even else str(rnd.randint(0, 2))
            quotas.append({"name": f, "resources": [cpu, {"name": "gpu", "nominalQuota": gpus}]})
        cohort = "root" if even and i % 4 == 3 else ("a", "b", "flat")[i % 3]
        spec = {"cohortName": cohort, "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority",
                               "reclaimWithinCohort": reclaim[i % len(reclaim)]},
                "resourceGroups": [{"coveredResources": ["cpu", "gpu"], "flavors": quotas}]}
        if i % 2:
            spec["fairSharing"] = {"weight": str(rnd.choice([0, 1, 2]))}
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": f"cq{i}"},
                     "spec": spec})
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                     "metadata": {"name": "lq", "namespace": f"ns{i}"}, "spec": {"clusterQueue": f"cq{i}"}})
    for w in range(workloads):
        requests = {"cpu": str(rnd.choice([1, 2, 3, 5]))}
        if rnd.random() < 0.3:
            requests["gpu"] = "1"
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                     "metadata": {"name": f"w{w:03d}", "namespace": f"ns{rnd.randrange(queues)}",
                                  "creationTimestamp": f"2026-01-01T00:{w // 60:02d}:{w % 60:02d}Z"},
                     "spec": {"queueName": "lq", "priority": rnd.choice([0, 1, 5]), "podSets": [
                         {"name": "main", "count": rnd.choice([1, 2]), "template": {"spec": {"containers": [
                             {"name": "c", "resources": {"requests": requests}}]}}}]}})
    return docs


def _run(docs: list[dict], reuse: bool, cycles: int | None = None, engine_class: type[Engine] = Engine) -> Engine:
    engine = engine_class(load_manifests(docs), reuse=reuse)
    engine.journal = []
    engine.run(cycles)
    return engine


@pytest.mark.parametrize("fair_sharing", [False, True])
def test_fast_engine_decides_what_the_plain_engine_decides(fair_sharing: bool) -> None:
    fast, plain = _run(_world(fair_sharing), True), _run(_world(fair_sharing), False)
    assert fast.cycle > 3 and any(kind == "preempted" for kind, _, _ in fast.journal)
    assert [(kind, info.key, by) for kind, info, by in fast.journal] == \
        [(kind, info.key, by) for kind, info, by in plain.journal]
    assert json.dumps(EvaluationResult(fast).to_json()) == json.dumps(EvaluationResult(plain).to_json())
    assert (fast.cycle, fast.decisions) == (plain.cycle, plain.decisions)


@dataclass
class _Head:
    cq: str
    info: WorkloadInfo
    usage: dict = field(default_factory=dict)


@pytest.mark.parametrize("seed", range(24))
def test_incremental_tournament_follows_usage_changes(seed: int) -> None:
    """Between picks, usage is admitted below some cohorts (through lendingLimits that keep
    part of it from the parent), or nothing changes (a head that did not fit): the incremental
    tournament picks what a full re-run picks. Seeds from 12 on move small amounts, that a
    queue's lendingLimit often keeps from its parent entirely (the parent's version stays,
    while what a head there would pass up to it changes)."""
    rnd = random.Random(seed)
    still = seed % 3  # 0: usage changes after every pick; 1, 2: after some picks only
    engine = Engine(load_manifests(_world(True, seed=seed, workloads=0, queues=24)))
    infos = [WorkloadInfo(w) for w in load_manifests(_world(True, seed=seed, workloads=24, queues=24)).workloads]
    heads = {}
    for info, cq in zip(infos, sorted(engine.nodes)):
        heads[cq] = _Head(cq, info, {(rnd.choice(FLAVORS), "cpu"): 1000 * rnd.randint(1, 9)})
    tournament = FairTournament(engine.nodes, dict(heads))
    remaining = dict(heads)
    while remaining:
        expected = pop_fair(engine.nodes, remaining)
        assert tournament.pop() is expected
        if still and rnd.random() < 0.3 * still + 0.2:
            continue  # not admitted: no usage changes
        engine.nodes[expected.cq].add_all(expected.usage)  # admitted: its usage changes the shares
        # and usage moves elsewhere, as an eviction or a reservation would
        amount = rnd.choice([200, 500]) if seed >= 12 else 1000 * rnd.randint(2, 9)
        engine.nodes[rnd.choice(sorted(engine.nodes))].add_all({(rnd.choice(FLAVORS), "cpu"): amount})
    assert not tournament


def test_every_flavor_resource_pair_is_one_shared_object() -> None:
    """The pairs an admitted workload holds and the quota tree's usage keys are the tuple
    objects the tree's quotas are keyed by (models.flavor_resource), in every queue: the
    engine's pair-keyed lookups then return at the identity check instead of comparing
    equal tuples element by element."""
    engine = _run(_world(False), reuse=True)
    quota_keys = {id(fr) for node in engine.nodes.values() for fr in node.quotas}
    held = [fr for info in engine.infos.values() if info.holds_quota for fr in info.usage]
    used = [fr for node in engine.nodes.values() for fr in node.usage]
    assert held and used
    assert all(id(fr) in quota_keys for fr in held + used)


def test_head_keys_asked_level_by_level_are_the_keys_computed_afresh() -> None:
    """The tournament asks a head's key at its queue's cohort, then (for a cohort's winner)
    at the level above; a usage change that a lendingLimit keeps inside the queue leaves the
    cohort's version as it was, yet changes what the head would pass up to it: the key above
    must be computed again, not read from before."""
    engine = Engine(load_manifests(_world(True, seed=0, workloads=0, queues=8)))
    cq = engine.nodes["cq1"]  # (cpu lendingLimit 1: the rest of its quota stays with it)
    parent, root = cq.parent, cq.parent.parent
    assert root is not None and cq.local
    info = WorkloadInfo(load_manifests(_world(True, seed=0, workloads=1, queues=8)).workloads[0])
    head = _Head("cq1", info, {("f0", "cpu"): 40000})  # more than the tree has: every level borrows
    memo: dict = {}
    _head_keys(cq, head, memo, parent.name)
    _head_keys(cq, head, memo, root.name)
    version = parent.version
    cq.add_all({("f0", "cpu"): 500})
    assert parent.version == version  # kept below the parent
    _head_keys(cq, head, memo, parent.name)
    assert _head_keys(cq, head, memo, root.name) == _head_keys(cq, head, {})


@pytest.mark.parametrize("seed", range(4))
def test_share_with_extra_usage_is_the_share_computed_afresh(seed: int) -> None:
    """`share_of(node, extra)` starts from the node's own share and computes again only the
    pairs `extra` touches: it must equal the share computed from the node's whole usage with
    `extra` on top, whichever pairs the node borrows already or starts or stops borrowing."""
    engine, rnd = _walk_world(seed)
    compared = 0
    for name in sorted(engine.nodes):
        for node in engine.nodes[name].path_nodes():
            for _ in range(3):
                extra = {(rnd.choice(FLAVORS), res): rnd.randint(-2, 3) * 1000 for res in ("cpu", "gpu")}
                got, expected = share_of(node, extra), _share(node, extra)
                assert (got.rank, got.excess, got.borrowing) == (expected.rank, expected.excess, expected.borrowing)
                compared += bool(expected.excess)
    assert compared > 20


@pytest.mark.parametrize("seed", range(4))
def test_share_after_removal_is_the_share_of_the_tree_without_the_workload(seed: int) -> None:
    """A fair-sharing search judges a target's share after an eviction without touching the
    tree (through lendingLimits, only part of a removal reaches the parent): it must equal the
    share read off the tree with the workload really removed."""
    engine = Engine(load_manifests(_world(True, seed=seed, workloads=120, queues=12)))
    engine.run(3)
    admitted = [info for per_cq in engine.admitted.values() for info in per_cq.values()]
    assert admitted
    checked = 0
    for preemptor in sorted(engine.nodes):
        node = engine.nodes[preemptor]
        if node.parent is None:
            continue
        ordering = TargetOrdering(node, {}, None)
        for info in admitted:
            target = engine.nodes[info.cluster_queue]
            if target is node or target.root() is not node.root():
                continue
            computed = ordering.target_share_after_removal(target, info)
            target.remove_all(info.usage)
            lca = next(a for a in target.ancestors() if id(a) in ordering.ancestors)
            expected = _share(_almost(target, lca), None)
            target.add_all(info.usage)
            assert computed.rank == expected.rank and computed.borrowed_frs == expected.borrowed_frs
            checked += 1
    assert checked > 20


def _capped_world() -> list[dict]:
    """cq-a is at its borrowingLimit with a workload it may not preempt; cq-b, in the same
    cohort, holds a workload on the same flavor and resource."""
    api = "kueue.x-k8s.io/v1beta2"
    docs: list[dict] = [{"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
                        {"apiVersion": api, "kind": "Cohort", "metadata": {"name": "co"}}]
    for name, limit in (("cq-a", "0"), ("cq-b", None)):
        cpu = {"name": "cpu", "nominalQuota": "2"}
        if limit is not None:
            cpu["borrowingLimit"] = limit
        docs.append({"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": name},
                     "spec": {"cohortName": "co", "namespaceSelector": {},
                              "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                              "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                  {"name": "f", "resources": [cpu]}]}]}})
        docs.append({"apiVersion": api, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": name},
                     "spec": {"clusterQueue": name}})
    for name, cq in (("held", "cq-a"), ("other", "cq-b")):
        docs.append({"apiVersion": api, "kind": "Workload",
                     "metadata": {"name": name, "namespace": cq, "creationTimestamp": "2026-01-01T00:00:00Z"},
                     "spec": {"queueName": "lq", "priority": 5, "podSets": [{"name": "main", "count": 1, "template": {
                         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}}]},
                     "status": {"admission": {"clusterQueue": cq, "podSetAssignments": [
                         {"name": "main", "flavors": {"cpu": "f"}, "count": 1, "resourceUsage": {"cpu": "2"}}]},
                                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    return docs


def test_a_request_over_its_own_borrowing_limit_is_not_searched_again_after_a_commit_elsewhere(monkeypatch) -> None:
    """Over cq-a's borrowingLimit with nothing of its own to preempt, no search can succeed,
    whatever the rest of the cohort does: after cq-b's workload finishes (a commit on the very
    pair asked for) the answer is still [] and comes without a new search."""
    engine = Engine(load_manifests(_capped_world()))
    pending = WorkloadInfo(engine.infos["cq-a/held"].workload)
    fr = ("f", "cpu")
    searches = []
    original = engine.preemptor.strategy.targets

    class Recording:  # (the strategy itself, compiled, cannot be patched)
        def targets(self, request):
            searches.append(request)
            return original(request)

    monkeypatch.setattr(engine.preemptor, "strategy", Recording())
    with engine.preemptor.at_commit():
        assert engine.preemptor.targets(pending, "cq-a", {fr}, {fr: 2}) == []
    engine.finish("cq-b/other")
    with engine.preemptor.at_commit():
        assert engine.preemptor.targets(pending, "cq-a", {fr}, {fr: 2}) == []
    assert searches == []  # answered from cq-a's own usage and workloads, both times
    assert original(PreemptionRequest(pending, "cq-a", frozenset({fr}), {fr: 2})) == []  # what a search answers now


def _walk(ordering: TargetOrdering, rnd: random.Random, snapshot) -> list[tuple[str, str]]:
    """The targets an ordering yields, taking one workload at each (and evicting it, as a
    search does, on a coin toss), and at times the queue's other workloads too (as a search
    sends them to the second chance) or pruning the queue (as the second pass does); the tree
    is as before on return."""
    seen, evicted = [], []
    for target in ordering:
        info = ordering.pop(target.name)
        seen.append((target.name, info.key))
        if rnd.random() < 0.5:
            snapshot.remove(info)
            evicted.append(info)
        choice = rnd.random()
        if choice < 0.25:
            seen.extend((target.name, rest.key) for rest in ordering.pop_rest(target.name))
        elif choice < 0.5:
            ordering.pruned_cqs.add(target.name)
    for info in evicted:
        snapshot.add(info)
    return seen


def _walk_world(seed: int) -> tuple[Engine, random.Random]:
    """A fair-sharing world a few cycles in (ties among shares with odd seeds)."""
    engine = Engine(load_manifests(_world(True, seed=seed, workloads=200, queues=12, even=seed % 2 == 1)))
    engine.run(4)
    return engine, random.Random(seed)


def _searches(engine: Engine, rnd: random.Random):
    """(preemptor's queue, targets as a search gives them to `TargetOrdering`) for every queue in a
    cohort, four times: random queues of its tree with random numbers of their workloads."""
    for name in sorted(engine.nodes) * 4:
        node = engine.nodes[name]
        if node.parent is None:
            continue
        targets = {}
        for other in sorted(engine.nodes):
            if engine.nodes[other].root() is node.root() and rnd.random() < 0.7:
                pairs = sorted(((candidate_key(info), info) for info in engine.admitted[other].values()),
                               key=lambda pair: pair[0])
                targets[other] = (pairs, rnd.randint(0, len(pairs)))
        yield node, targets


@pytest.mark.parametrize("seed", range(12))
def test_walk_over_the_children_holding_targets_yields_what_the_whole_walk_yields(seed: int) -> None:
    """The preemption walk given the tree's nodes compares only the children holding target
    queues with candidates; it must yield the same targets in the same order as the walk
    comparing every child, whichever queues have candidates and whatever is evicted (it keeps
    each cohort's children in order between evictions)."""
    engine, rnd = _walk_world(seed)
    snapshot = engine.preemptor.snapshot
    walked = 0
    for node, targets in _searches(engine, rnd):
        order_key = candidate_order(node.name)
        choice = rnd.random()
        whole = _walk(TargetOrdering(node, targets, order_key), random.Random(choice), snapshot)
        filtered = _walk(TargetOrdering(node, targets, order_key, holding(engine.nodes, targets)), random.Random(choice), snapshot)
        assert filtered == whole
        walked += bool(whole)
    assert walked > 5


@pytest.mark.parametrize("seed", range(12))
def test_queues_still_visited_are_those_the_rest_of_the_walk_visits(seed: int) -> None:
    """A first pass that finds every queue left below the preemptor stops there, and sends
    the workloads of the queues the rest of its walk would visit (`still_visited`) to the
    second chance. Whatever was visited, evicted or pruned before, the rest of the walk on a
    tree that no longer changes must visit exactly those queues."""
    engine, rnd = _walk_world(seed)
    snapshot = engine.preemptor.snapshot
    compared = 0
    for node, targets in _searches(engine, rnd):
        ordering = TargetOrdering(node, targets, candidate_order(node.name), holding(engine.nodes, targets))
        walk, evicted = iter(ordering), []
        for target in walk:  # the walk so far, with evictions (undone below)
            info = ordering.pop(target.name)
            if rnd.random() < 0.5:
                snapshot.remove(info)
                evicted.append(info)
            if rnd.random() < 0.3:
                ordering.pruned_cqs.add(target.name)
            if rnd.random() < 0.3:
                break
        expected = ordering.still_visited(engine.nodes)
        visited = []
        for target in walk:
            visited.append(target.name)
            ordering.pop_rest(target.name)
        assert sorted(visited) == sorted(expected)
        compared += bool(visited)
        for info in evicted:
            snapshot.add(info)
    assert compared > 5


@pytest.mark.parametrize("seed", range(8))
def test_available_without_is_available_after_the_removal(seed: int) -> None:
    """The fair-sharing search checks a fit with the preemptor's usage in place, taken off in
    the computation (`available_without`) instead of the tree: the answer must be what
    removing the usage and asking `available` gives, through lendingLimits (a queue keeps part
    of its usage from its parent) and borrowingLimits, for every workload holding quota."""
    engine, _ = _walk_world(seed)
    checked = 0
    for name in sorted(engine.admitted):
        node = engine.nodes[name]
        for info in engine.admitted[name].values():
            expected = {}
            node.remove_all(info.usage)
            for fr in info.usage:
                expected[fr] = node.available(fr)
            node.add_all(info.usage)
            assert {fr: node.available_without(fr, value) for fr, value in info.usage.items()} == expected
            checked += 1
    assert checked > 20


def test_a_search_answered_without_being_made_evicts_nothing_when_made() -> None:
    """A fair-sharing search whose preemptor would be above every queue with candidates is
    answered [] without being made (`_below_all`, from the usage the request would add, the
    tree untouched); the whole search, made on the tree with the usage added, must find no
    target either. Requests of every pending workload in every queue of a cohort, on either
    flavor, of random sizes, in eight worlds a few cycles in."""
    answered = 0
    for seed in range(8):
        engine, rnd = _walk_world(seed)
        fast = engine.preemptor.strategy
        whole = FairSharingPreemption(fast.snapshot, fast.strategies, incremental=False)
        with engine.preemptor.at_commit():
            for name in sorted(engine.nodes):
                node = engine.nodes[name]
                for info in sorted(engine.infos.values(), key=lambda info: info.key):
                    if node.parent is None or info.holds_quota:
                        continue
                    fr = (rnd.choice(FLAVORS), "cpu")
                    request = PreemptionRequest(info, name, frozenset({fr}), {fr: rnd.randint(1, 6)})
                    candidates, _ = fast._candidates(request, node)
                    holders = tuple([cq for cq, (_, end) in candidates.items() if end])
                    if holders and fast._below_all(request, node, holders):
                        answered += 1
                        assert whole.targets(request) == []
    assert answered > 100


@pytest.mark.parametrize("fair_sharing", [False, True])
def test_a_run_makes_no_reference_cycles(fair_sharing: bool) -> None:
    """Long runs let the cyclic garbage collector run rarely (compiler/runtime/garbage_collection.py): its passes
    only cost time, which is safe while a run leaves no cyclic garbage behind. Checked here on
    a churning world (a run with preemptions, fill-back and requeues)."""
    import gc
    engine = Engine(load_manifests(_world(fair_sharing, workloads=240)))
    engine.journal = []
    gc.collect()
    assert gc.isenabled()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        engine.run(None)
        found = gc.collect()
        kinds = sorted({type(obj).__name__ for obj in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert any(kind == "preempted" for kind, _, _ in engine.journal)
    assert found == 0 and not kinds, kinds  # (gc.garbage also keeps what a collection inside the run found)


@pytest.mark.parametrize("seed", range(8))
def test_fair_searches_cut_short_decide_what_the_whole_searches_decide(seed: int) -> None:
    """The fair-sharing search sends a target queue's workloads to the second chance without
    judging each when the preemptor's share is already above the queue's, and skips the second
    pass when no queue in it passes; the plain engine runs every search whole. Both must
    decide alike on churning worlds where most searches are cut short."""
    docs = _world(True, seed=seed, workloads=320, queues=12, even=seed % 2 == 1)
    fast, plain = _run(docs, True, 60), _run(docs, False, 60)
    assert any(kind == "preempted" for kind, _, _ in fast.journal)
    assert [(kind, info.key, by) for kind, info, by in fast.journal] == \
        [(kind, info.key, by) for kind, info, by in plain.journal]
    assert json.dumps(EvaluationResult(fast).to_json()) == json.dumps(EvaluationResult(plain).to_json())


@pytest.mark.parametrize("seed", range(6))
def test_a_cycle_where_one_head_at_most_acts_decides_without_the_tournament(seed: int, monkeypatch) -> None:
    """Under fair sharing a cycle whose heads all fail but one (no fit, or no candidates in a
    queue that reserves nothing) is processed in the heads' own order; with every head counted
    as acting, the tournament orders every cycle. Both decide alike, and the short way is taken."""
    from compiler.evaluator import scheduler

    docs = _world(True, seed=seed, workloads=(60, 120)[seed % 2], queues=(10, 12)[seed % 2], even=seed % 3 == 1,
                  reclaim=("Any", "Any", "Never"))
    tournaments = []

    class Counted(FairTournament):
        def __init__(self, *args, **kwargs) -> None:
            tournaments.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(scheduler, "FairTournament", Counted)
    short = _run(docs, True)
    short_tournaments = len(tournaments)
    class EveryHeadActs(Engine):  # (a subclass: the compiled Engine's type cannot be patched)
        def _inert(self, entry) -> bool:
            return False

    tournaments.clear()
    full = _run(docs, True, engine_class=EveryHeadActs)
    assert short_tournaments < len(tournaments)
    assert any(kind == "preempted" for kind, _, _ in short.journal)
    assert [(kind, info.key, by) for kind, info, by in short.journal] == \
        [(kind, info.key, by) for kind, info, by in full.journal]
    assert json.dumps(EvaluationResult(short).to_json()) == json.dumps(EvaluationResult(full).to_json())
    assert (short.cycle, short.decisions) == (full.cycle, full.decisions)
