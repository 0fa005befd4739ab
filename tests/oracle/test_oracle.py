"""kueue-oracle: Kueue's own scheduler, run offline on `evaluate`'s input (oracle/README.md).

The scenario files of the Python engine's tests carry the decisions Kueue takes; the oracle,
which is Kueue's code, must take them too. Fields the JSON contract does not carry (reasonCode)
are not compared."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from kp_testing import REPO_ROOT, run_cli

SCENARIO_DIR = REPO_ROOT / "tests" / "evaluator" / "scenarios"
FIXTURE_DIR = REPO_ROOT / "tests" / "evaluator" / "fixtures"
# What the oracle does not model (oracle/README.md, "Not done"): nothing among the scenarios.
NOT_MODELLED: dict[str, str] = {}
SCENARIOS = sorted(p for p in SCENARIO_DIR.glob("*.yaml") if p.stem not in NOT_MODELLED)
COMPARED = ("status", "clusterQueue", "assignment", "count", "borrowing", "reason", "preemptedBy")
# Where Kueue's words differ from the scenario's (the Python engine's): Kueue's value, and why.
# flavor-taints: flavorassigner formats the corev1.Taint value with %s, and Taint has no String()
# method, so Kueue prints the struct. invalid-workloads: the API server (Kueue's validating
# webhook) refuses these Workloads; the oracle reports the webhook's field errors.
# dra-claim-templates: the workload controller's DRA step writes its field errors, aggregated.
KUEUE_WORDS = {
    ("dra-claim-templates", "ns/unmapped", "reason"):
        'spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: '
        '"DeviceClass fpga.example.com is not mapped in DRA configuration for podset main"',
    ("flavor-taints", "ns/intolerant", "reason"):
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor on-demand, previously "
        "considered podsets requests (0) + current podset request (4) > maximum capacity (2), untolerated taint "
        "{spot true NoSchedule <nil>} in flavor spot",
    ("scan-position-rerecorded-is-resumed", "ns/scanning", "reason"):
        "couldn't assign flavors to pod set main: untolerated taint {dedicated  NoSchedule <nil>} in flavor tainted",
    ("invalid-workloads", "ns/negative", "reason"):
        'spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be '
        "greater than or equal to 0",
    ("invalid-workloads", "ns/two-mincounts", "reason"):
        "spec.podSets: Invalid value: 2: at most one podSet can use minCount",
    ("invalid-workloads", "ns/bad-quantity", "reason"):
        "Workload: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
}


def dump_all(objects: list, path: Path) -> Path:
    yaml = YAML()
    with path.open("w") as out:
        yaml.dump_all(objects, out)
    return path


def scenario_input(path: Path, tmp_path: Path) -> tuple[dict, Path]:
    scenario = YAML(typ="safe").load(path.read_text())
    objects = []
    for fixture in scenario.get("include", []):
        objects.extend(YAML(typ="safe").load((FIXTURE_DIR / fixture).read_text()))
    objects.extend(scenario["objects"])
    return scenario, dump_all(objects, tmp_path / f"{path.stem}.yaml")


def run_oracle(oracle_bin: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(oracle_bin), *args], input=stdin, capture_output=True, text=True,
                          timeout=300, check=False)


def outcomes(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    return {w["name"]: w for w in payload["workloads"]} | {
        "@" + cq["name"]: cq for cq in payload["clusterQueues"]}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_kueue_takes_the_scenario_decisions(oracle_bin, tmp_path, path):
    scenario, manifest = scenario_input(path, tmp_path)
    args = ["--cycles", str(scenario["cycles"])] if scenario.get("cycles") else []
    got = outcomes(run_oracle(oracle_bin, *args, str(manifest)))
    failures = []
    for name, expected in scenario["expect"].items():
        for field, wanted in expected.items():
            wanted = KUEUE_WORDS.get((path.stem, name, field), wanted)
            # Where Kueue itself answers more than one way (it ranges over a Go map), the scenario lists
            # the other answers under kueue_also and says why under kueue_also_why.
            also = scenario.get("kueue_also", {}).get(name, {}).get(field, [])
            if field in COMPARED and got[name][field] != wanted and got[name][field] not in also:
                failures.append(f"{name}.{field}: expected {wanted!r}, Kueue says {got[name][field]!r}")
    for cq, wanted in (scenario.get("usage") or {}).items():
        if got["@" + cq]["usage"] != wanted:
            failures.append(f"usage of {cq}: expected {wanted!r}, Kueue says {got['@' + cq]['usage']!r}")
    assert not failures, scenario["description"] + "\n" + "\n".join(failures)


REQUEUE_WORLD = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f1}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f2}
spec:
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: f1, resources: [{name: cpu, nominalQuota: "4"}]}
    - {name: f2, resources: [{name: cpu, nominalQuota: "3"}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: low, namespace: ns, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  queueName: lq
  priority: 0
  podSets:
  - name: main
    count: 1
    template:
      spec:
        tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
        containers: [{name: c, resources: {requests: {cpu: "3"}}}]
status:
  admission:
    clusterQueue: cq
    podSetAssignments: [{name: main, flavors: {cpu: f1}, resourceUsage: {cpu: "3"}, count: 1}]
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: "Quota reserved in ClusterQueue cq", lastTransitionTime: "2026-01-01T00:00:01Z"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: urgent, namespace: ns, uid: u-urgent, creationTimestamp: "2026-01-01T00:01:00Z"}
spec:
  queueName: lq
  priority: 100
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers: [{name: c, resources: {requests: {cpu: "3"}}}]
"""


def test_a_preempted_workload_is_requeued_and_admitted_where_it_fits(oracle_bin, tmp_path):
    world = tmp_path / "requeue.yaml"
    world.write_text(REQUEUE_WORLD)
    first = outcomes(run_oracle(oracle_bin, "--cycles", "1", str(world)))
    # Cycle 1: Kueue evicts the victim; the preemptor waits for the eviction to complete.
    assert first["ns/low"]["status"] == "preempted"
    assert first["ns/low"]["preemptedBy"] == "ns/urgent"
    assert first["ns/low"]["reason"].startswith("Preempted to accommodate a workload (UID: u-urgent")
    assert first["ns/urgent"]["status"] == "pending"
    assert first["ns/urgent"]["reason"].endswith("Pending the preemption of 1 workload(s)")
    final = outcomes(run_oracle(oracle_bin, str(world)))
    # Until quiescent: the preemptor takes f1, the requeued victim comes back on the tainted f2.
    assert final["ns/urgent"]["status"] == "admitted"
    assert final["ns/urgent"]["assignment"] == {"main": {"cpu": "f1"}}
    assert final["ns/low"]["status"] == "admitted"
    assert final["ns/low"]["assignment"] == {"main": {"cpu": "f2"}}
    assert final["@cq"]["usage"] == {"f1": {"cpu": "3"}, "f2": {"cpu": "3"}}


def test_v1beta1_and_v1beta2_inputs_give_the_same_answer(oracle_bin, tmp_path):
    v2 = tmp_path / "v2.yaml"
    v2.write_text(REQUEUE_WORLD)
    # The same world in v1beta1: Kueue's conversion maps cohort/queueName/priority class fields.
    v1 = tmp_path / "v1.yaml"
    v1.write_text(REQUEUE_WORLD.replace("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"))
    a = run_oracle(oracle_bin, str(v2))
    b = run_oracle(oracle_bin, str(v1))
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout


def test_quiescence_is_the_state_no_further_cycle_changes(oracle_bin, tmp_path):
    world = tmp_path / "w.yaml"
    world.write_text(REQUEUE_WORLD)
    until_quiet = run_oracle(oracle_bin, str(world))
    two = run_oracle(oracle_bin, "--cycles", "2", str(world))
    many = run_oracle(oracle_bin, "--cycles", "20", str(world))
    assert until_quiet.stdout == many.stdout
    assert two.stdout != until_quiet.stdout  # the victim is not back yet after two cycles
    assert outcomes(two)["ns/urgent"]["status"] == "admitted"


def test_stdin_list_and_deterministic_bytes(oracle_bin, tmp_path):
    docs = list(YAML(typ="safe").load_all(REQUEUE_WORLD))
    as_list = tmp_path / "list.yaml"
    dump_all([{"apiVersion": "v1", "kind": "List", "items": docs}], as_list)
    from_list = run_oracle(oracle_bin, str(as_list))
    from_stdin = run_oracle(oracle_bin, "-", stdin=REQUEUE_WORLD)
    again = run_oracle(oracle_bin, "-", stdin=REQUEUE_WORLD)
    assert from_list.returncode == 0, from_list.stderr
    assert from_list.stdout == from_stdin.stdout == again.stdout


def test_bad_input_names_file_and_line(oracle_bin, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nkind: [unclosed\n")
    done = run_oracle(oracle_bin, str(bad))
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"{bad}:5: not valid YAML" in done.stderr
    assert "goroutine" not in done.stderr


def test_engine_kueue_through_the_cli(oracle_bin, tmp_path):
    world = tmp_path / "w.yaml"
    world.write_text(REQUEUE_WORLD)
    done = run_cli("evaluate", "--engine", "kueue", "--format", "json", str(world))
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_oracle(oracle_bin, str(world)).stdout
    table = run_cli("evaluate", "--engine", "kueue", "--cycles", "1", "-", input=REQUEUE_WORLD)
    assert table.returncode == 0, table.stderr
    assert "kueue-oracle" in table.stdout and "preempted" in table.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    refused = run_cli("evaluate", "--engine", "kueue", str(bad))
    assert refused.returncode == 1
    assert f"{bad}:1: not valid YAML" in refused.stderr


def test_batch_gives_each_world_the_single_world_answer(oracle_bin, tmp_path):
    # --batch runs many worlds in one process (the differential test's workers keep one): each
    # world's line carries exactly what the single-world command prints and exits with.
    worlds = {"requeue": REQUEUE_WORLD,
              "v1beta1": REQUEUE_WORLD.replace("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"),
              "bad": "kind: [unclosed\n",
              "roomy": REQUEUE_WORLD.replace('nominalQuota: "4"', 'nominalQuota: "6"')}
    paths = []
    for name, text in worlds.items():
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(text)
    singles = [run_oracle(oracle_bin, str(path)) for path in paths]
    from_files = run_oracle(oracle_bin, "--batch", *map(str, paths))
    stdin = "".join(json.dumps(text) + "\n" for text in worlds.values())
    from_stdin = run_oracle(oracle_bin, "--batch", stdin=stdin)
    for batch in (from_files, from_stdin):
        assert batch.returncode == 0, batch.stderr
        lines = [json.loads(line) for line in batch.stdout.splitlines()]
        assert len(lines) == len(worlds)
        for single, line in zip(singles, lines):
            assert line["exit"] == single.returncode
            assert line["result"] == (json.loads(single.stdout) if single.returncode == 0 else None)
    # the stdin form names no file; the file form names the file, as the single command does
    assert "not valid YAML" in json.loads(from_stdin.stdout.splitlines()[2])["stderr"]
    assert json.loads(from_files.stdout.splitlines()[2])["stderr"] == singles[2].stderr
    assert run_oracle(oracle_bin, "--batch", stdin="not json\n").returncode == 2
