"""Answer bounds under fair sharing: a head's "no candidates" answer is kept within its usage
ranges only when its own queue decides it (its request is beyond what its borrowingLimit allows
with its own candidates gone). Fair sharing's candidates depend on the shares of the other
queues, which a commit on a pair the head never reads can move: the head must then be asked
again, as Kueue asks it at every requeue.

The world: queues `a` (flavor f1 only) and `b` (f1, then f2) share f1; `d` lends f2. `b`
borrows f1 first, `a` then asks for more than is free on f1 while `b`'s share is no higher
than `a`'s would be: the oracle and the search find no candidates. `b` then borrows most of
f2: its share rises, on a pair `a`'s head never reads, and at the next moment `a` preempts
`b` on f1. (Both of the head's preemption readings must be found decided by its own queue
before it is bounded; the test fails when neither is asked under fair sharing.)"""

from __future__ import annotations

from compiler.evaluator import load_manifests
from compiler.evaluator.engine import Engine
from compiler.evaluator.layers import EngineLayers
from compiler.evaluator.models import Workload

API = "kueue.x-k8s.io/v1beta2"
PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def _queue(name: str, flavors: list[tuple[str, str]]) -> list[dict]:
    return [{"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
             "spec": {"cohortName": "c", "namespaceSelector": {}, "preemption": PREEMPTION,
                      "resourceGroups": [{"coveredResources": ["gpu"], "flavors": [
                          {"name": flavor, "resources": [{"name": "gpu", "nominalQuota": quota}]}
                          for flavor, quota in flavors]}]}},
            {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": name},
             "spec": {"clusterQueue": name}}]


def _base() -> list[dict]:
    docs = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": f}} for f in ("f1", "f2")]
    docs.append({"apiVersion": API, "kind": "Cohort", "metadata": {"name": "c"}, "spec": {}})
    docs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                 "fairSharing": {"enable": True}})
    return docs + _queue("a", [("f1", "4")]) + _queue("b", [("f1", "4"), ("f2", "0")]) + _queue("d", [("f2", "8")])


def _workload(name: str, queue: str, gpus: int, second: int) -> dict:
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": queue, "creationTimestamp": f"2026-01-01T00:00:{second:02d}Z"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"gpu": str(gpus)}}}]}}}]}}


# The moments: the jobs that arrive at each (each moment is then run to quiescence, as simulate
# runs it).
MOMENTS = [
    [_workload("b1", "b", 4, 0), _workload("b2", "b", 2, 1)],   # b: all its f1, and 2 of a's
    [_workload("a1", "a", 6, 2)],                               # a: 6 of f1, 2 free: no candidates
    [_workload("b3", "b", 6, 3)],                               # b borrows 6 of f2 from d
    [_workload("d1", "d", 1, 4)],                               # any event: a new moment
]


def _run(docs: list[dict], moments: list[list[dict]], layers: EngineLayers) -> tuple[list[list[tuple]], Engine]:
    """The moments through one engine, as simulate runs them: after each, every workload's
    status, reason and whether it holds quota."""
    workloads: dict[str, Workload] = {w.name: w for w in load_manifests(
        docs + [doc for moment in moments for doc in moment]).workloads}
    engine = Engine(load_manifests(docs), layers=layers)
    engine.journal = []
    seen = []
    for moment in moments:
        for doc in moment:
            engine.submit(workloads[doc["metadata"]["name"]])
        engine.run_moment(repeats=3)
        seen.append(sorted((key, str(info.status), info.reason, info.holds_quota)
                           for key, info in engine.infos.items()))
    return seen, engine


def test_a_share_moved_on_another_pair_is_asked_again() -> None:
    docs = _base()
    bounded, _ = _run(docs, MOMENTS, EngineLayers.only("answer_bounds"))
    plain, engine = _run(docs, MOMENTS, EngineLayers.none())
    assert bounded == plain
    # the world does what it is built for: a1 found no candidates, then preempted b on f1
    after_a1 = {key: holds for key, _, _, holds in plain[1]}
    assert not after_a1["a/a1"] and after_a1["b/b2"]
    assert {key: holds for key, _, _, holds in plain[2]}["a/a1"] is False
    final = {key: holds for key, _, _, holds in plain[-1]}
    assert final["a/a1"] and final["b/b3"]
    assert any(kind == "preempted" and info.cluster_queue == "b" for kind, info, _ in engine.journal)


def test_a_head_beyond_its_own_limit_is_bounded_under_fair_sharing() -> None:
    """The positive side: under fair sharing a head its own queue decides (a's borrowingLimit
    0, a request over its nominal quota) is kept within its bounds, answered without a
    retrace while d's admissions move the tree, and decides what the plain engine decides."""
    docs = _base()
    queue_a = next(d for d in docs if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == "a")
    queue_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "0"
    moments = [[_workload("a1", "a", 2, 0)], [_workload("a2", "a", 4, 1)]] + \
        [[_workload(f"d{i}", "d", 1, 2 + i)] for i in range(4)]
    bounded, engine = _run(docs, moments, EngineLayers.only("answer_bounds"))
    plain, _ = _run(docs, moments, EngineLayers.none())
    assert engine.fair_sharing and engine.bounded > 0
    assert bounded == plain
