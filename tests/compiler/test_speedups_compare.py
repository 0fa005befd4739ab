"""The compiled engine against the Python engine on `evaluate` (the benchmark's large world),
on circles of preemptions, and on values a C type would change: the same bytes, and each run
seen to have run the way it claims (kp_testing.compiled_runs)."""

from __future__ import annotations

import json
import sys

from kp_testing import REPO_ROOT
from kp_testing.compiled_runs import CLI, run_both

sys.path.insert(0, str(REPO_ROOT / "bench"))
from bench_evaluate import write_world  # noqa: E402

ENGINE = ("compiler.evaluator.tree", "compiler.evaluator.info", "compiler.evaluator.assigner",
          "compiler.evaluator.scheduler", "compiler.evaluator.engine")


def test_evaluate_on_the_benchmark_world_gives_the_same_bytes_compiled(tmp_path):
    world = tmp_path / "world.yaml"
    write_world(str(world), 10_000)  # (bench_evaluate's world: 500 queues in 50 cohorts)
    both = run_both(CLI, ["evaluate", str(world), "--format", "json"], ENGINE)
    assert both.compiled.returncode == both.python.returncode == 0, both.compiled.stderr + both.python.stderr
    assert both.compiled.stdout == both.python.stdout
    statuses = {w["status"] for w in json.loads(both.compiled.stdout)["workloads"]}
    assert {"admitted", "pending", "preempted"} <= statuses  # (the world admits, waits and preempts)


def test_a_circle_of_fair_sharing_preemptions_is_found_the_same_way_compiled(tmp_path):
    world = tmp_path / "world.yaml"
    write_world(str(world), 3_000, within="LowerPriority", reclaim="Any", fair_sharing=True, every_queue=True)
    both = run_both(CLI, ["evaluate", str(world), "--format", "json"], ENGINE + ("compiler.evaluator.circles",
                                                                                "compiler.evaluator.fair_preemption"))
    assert both.compiled.returncode == both.python.returncode == 0, both.compiled.stderr + both.python.stderr
    assert both.compiled.stdout == both.python.stdout
    assert both.compiled.stderr == both.python.stderr
    assert "preempting each other in a circle" in both.compiled.stderr


# tests/evaluator/test_circles.py's worlds, every one run with circles found: each answer, to
# each workload's explanation, and the circle found.
CIRCLE_WORLDS = """\
from compiler.evaluator import load_manifests
from compiler.evaluator.result import EvaluationResult
from compiler.evaluator.engine import Engine
from differential.worlds import world
for seed in range(2):
    for index in range(150):
        engine = Engine(load_manifests(world(seed, index)))
        engine.run(None, circles=True)
        result = EvaluationResult(engine)
        circle = None if engine.circle is None else repr(engine.circle)
        print(json.dumps({"world": [seed, index], "circle": circle, "cycles": result.cycles,
                          "result": result.to_json(), "decisions": engine.decisions,
                          "explained": [result.explain(key) for key in sorted(engine.infos)]}, sort_keys=True))
"""


def test_the_circle_worlds_give_the_same_answers_compiled():
    both = run_both(CIRCLE_WORLDS, [], ENGINE + ("compiler.evaluator.circles",))
    assert both.compiled.returncode == both.python.returncode == 0, both.compiled.stderr + both.python.stderr
    compiled = both.compiled.stdout.splitlines()
    assert compiled == both.python.stdout.splitlines()
    assert len(compiled) == 300
    assert sum(json.loads(line)["circle"] is not None for line in compiled) >= 5  # (worlds that go round)


# Values a C type would change (a C bool, a C double, a C integer): the engine's records keep
# what Python keeps, compiled too.
KEPT_VALUES = """\
from fractions import Fraction
from compiler.evaluator import load_manifests
from compiler.evaluator.preemption import Preemptor
from compiler.evaluator.engine import Engine
from compiler.evaluator.queue_manager import PendingQueue
from compiler.evaluator.tree import QuotaNode
half, big = QuotaNode("a", None, {}, Fraction(3, 2)), QuotaNode("b", 1, {}, 2**70)
preemptor = Preemptor({}, {}, {}, None, [], reuse=0)
print(repr([half.is_cq, half.weight, big.is_cq, big.weight, PendingQueue(0).strict, PendingQueue("yes").strict,
            Engine(load_manifests([]), reuse=0).reuse, preemptor.fair_sharing, preemptor.reuse]))
"""


def test_the_engines_records_keep_the_values_python_keeps_compiled():
    both = run_both(KEPT_VALUES, [], ("compiler.evaluator.tree", "compiler.evaluator.engine",
                                      "compiler.evaluator.queue_manager", "compiler.evaluator.preemption"))
    assert both.compiled.returncode == 0, both.compiled.stderr
    assert both.compiled.stdout == both.python.stdout == "[None, 1.5, 1, 1.1805916207174113e+21, 0, 'yes', 0, None, 0]\n"


def test_fractional_weights_and_quotas_beyond_64_bits_evaluate_the_same_compiled(tmp_path):
    """A fair-sharing weight of 1.5 and a quota of 2**70: where C types would round or overflow."""
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "big"}}
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
              "fairSharing": {"enable": True}}
    docs = [config, flavor, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "all"}}]
    for name, weight, quota in (("cq-a", "1.5", str(2**70)), ("cq-b", "0.5", "3"), ("cq-c", "2", "0")):
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
                     "spec": {"cohortName": "all", "namespaceSelector": {}, "fairSharing": {"weight": weight},
                              "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                              "resourceGroups": [{"coveredResources": ["example.com/units"], "flavors": [
                                  {"name": "big", "resources": [{"name": "example.com/units",
                                                                 "nominalQuota": quota}]}]}]}})
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                     "metadata": {"name": "q", "namespace": name}, "spec": {"clusterQueue": name}})
    for index, (queue, units) in enumerate([("cq-b", 2**69), ("cq-c", 2**68), ("cq-b", 5), ("cq-a", 2**70 - 7),
                                            ("cq-c", 3 * 2**67), ("cq-a", 2**68)]):
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                     "metadata": {"name": f"w{index}", "namespace": queue,
                                  "creationTimestamp": f"2026-01-01T00:00:{index:02d}Z"},
                     "spec": {"queueName": "q", "priority": index % 3, "podSets": [
                         {"name": "main", "count": 1, "template": {"spec": {"containers": [
                             {"name": "c", "resources": {"requests": {"example.com/units": str(units)}}}]}}}]}})
    import yaml

    world = tmp_path / "world.yaml"
    world.write_text(yaml.safe_dump_all(docs, sort_keys=True))
    both = run_both(CLI, ["evaluate", str(world), "--format", "json"], ENGINE)
    assert both.compiled.returncode == both.python.returncode == 0, both.compiled.stderr + both.python.stderr
    assert both.compiled.stdout == both.python.stdout
    result = json.loads(both.compiled.stdout)
    usage = {cq["name"]: cq["usage"] for cq in result["clusterQueues"]}
    assert any(int(amount) > 2**64 for flavors in usage.values() for r in flavors.values() for amount in r.values())
