"""`kueue-policy evaluate` as users run it: the real console script in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML

from kp_testing import run_cli

SCENARIOS = Path(__file__).parent / "scenarios"
FIXTURES = Path(__file__).parent / "fixtures"


def write_manifests(tmp_path: Path, scenario: str) -> Path:
    """Turn a scenario into a plain multi-document manifest file, as `kubectl get -o yaml` would."""
    data = YAML(typ="safe").load((SCENARIOS / scenario).read_text())
    objects = []
    for fixture in data.get("include", []):
        objects.extend(YAML(typ="safe").load((FIXTURES / fixture).read_text()))
    objects.extend(data["objects"])
    path = tmp_path / "cluster.yaml"
    yaml = YAML()
    with path.open("w") as out:
        yaml.dump_all(objects, out)
    return path


def test_json_output_matches_the_contract(tmp_path: Path) -> None:
    path = write_manifests(tmp_path, "reclaim-within-cohort.yaml")
    proc = run_cli("evaluate", str(path), "--cycles", "1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"workloads", "clusterQueues"}
    by_name = {w["name"]: w for w in out["workloads"]}
    for w in out["workloads"]:
        assert {"name", "clusterQueue", "status", "assignment", "count", "borrowing", "reason",
                "preemptedBy"} == set(w)
    for cq in out["clusterQueues"]:
        assert set(cq) == {"name", "usage", "borrowed"}
    assert by_name["own/mine"]["status"] == "pending"
    assert by_name["bor/new"]["status"] == "preempted"
    assert by_name["bor/new"]["preemptedBy"] == "own/mine"
    cqs = {c["name"]: c for c in out["clusterQueues"]}
    assert cqs["borrower"]["usage"] == {"default": {"cpu": "4"}}
    assert cqs["borrower"]["borrowed"] == {"default": {"cpu": "2"}}


def test_same_input_same_bytes(tmp_path: Path) -> None:
    path = write_manifests(tmp_path, "fair-sharing-lowest-share-first.yaml")
    first = run_cli("evaluate", str(path), "--format", "json")
    second = run_cli("evaluate", str(path), "--format", "json")
    assert first.returncode == 0 and first.stdout == second.stdout


def test_kind_list_and_stdin(tmp_path: Path) -> None:
    data = YAML(typ="safe").load((SCENARIOS / "partial-admission.yaml").read_text())
    listing = {"apiVersion": "v1", "kind": "List", "items": data["objects"]}
    text = json.dumps(listing)  # JSON is YAML too
    proc = run_cli("evaluate", "-", "--format", "json", input=text)
    assert proc.returncode == 0, proc.stderr
    (w,) = json.loads(proc.stdout)["workloads"]
    assert w["status"] == "admitted" and w["count"] == {"main": 25}


def test_table_and_explain(tmp_path: Path) -> None:
    path = write_manifests(tmp_path, "flavor-taints.yaml")
    # The table is as wide as the terminal says (COLUMNS); a narrow one would fold the names.
    table = run_cli("evaluate", str(path), env={"COLUMNS": "200"})
    assert table.returncode == 0
    assert "ns/tolerant" in table.stdout and "admitted" in table.stdout
    explain = run_cli("evaluate", str(path), "--explain", "ns/intolerant")
    assert explain.returncode == 0, explain.stderr
    assert "untolerated taint spot=true:NoSchedule in flavor spot" in explain.stdout
    assert "maximum capacity (2)" in explain.stdout
    assert "what it would take" in explain.stdout
    missing = run_cli("evaluate", str(path), "--explain", "ns/nope")
    assert missing.returncode == 1
    assert "no workload ns/nope" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_explain_names_the_classmate_that_set_an_untried_workload_aside(tmp_path: Path) -> None:
    # The twin keeps Kueue's reason ("Waiting to be scheduled"); --explain says why it waits.
    path = write_manifests(tmp_path, "equivalent-workload-not-tried.yaml")
    twin = run_cli("evaluate", str(path), "--explain", "ns/twin")
    assert twin.returncode == 0, twin.stderr
    assert "reason [Pending]: Waiting to be scheduled" in twin.stdout
    assert ("not tried: set aside with its equivalence class, since ns/first failed "
            "(couldn't assign flavors to pod set main: insufficient quota for cpu") in twin.stdout
    first = run_cli("evaluate", str(path), "--explain", "ns/first")
    assert first.returncode == 0 and "not tried" not in first.stdout


def test_pending_workloads_are_an_answer_not_an_error(tmp_path: Path) -> None:
    path = write_manifests(tmp_path, "strict-fifo-blocks.yaml")
    proc = run_cli("evaluate", str(path), "--format", "json")
    assert proc.returncode == 0
    assert any(w["status"] == "pending" for w in json.loads(proc.stdout)["workloads"])


def test_unreadable_input_exits_1_with_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a\n")
    proc = run_cli("evaluate", str(broken))
    assert proc.returncode == 1
    assert f"{broken}:" in proc.stderr and "KP901" in proc.stderr
    assert "Traceback" not in proc.stderr
    missing = run_cli("evaluate", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 1 and "KP901" in missing.stderr and "absent.yaml" in missing.stderr
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00kind")
    proc = run_cli("evaluate", str(binary))
    assert proc.returncode == 1 and "not UTF-8" in proc.stderr
    dup = tmp_path / "dupkey.yaml"
    dup.write_text("kind: Namespace\nkind: Namespace\n")
    proc = run_cli("evaluate", str(dup))
    assert proc.returncode == 1 and "KP901" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_objects_are_skipped_with_warnings_naming_file_and_object(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text("""\
apiVersion: v1
kind: Service
metadata: {name: web}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [memory]
    flavors: [{name: default, resources: [{name: memory, nominalQuota: 12Gx}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
- just a list
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: ns}
spec: {clusterQueue: broken}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  queueName: lq
  podSets:
  - {name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {memory: 1Gi}}}]}}}
""")
    proc = run_cli("evaluate", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert f"{path}:1:1: warning[KP903]: unknown kind Service" in err
    assert f"{path}:9:1: warning[KP904]: ClusterQueue broken: flavor default resource memory nominalQuota: '12Gx' is not a Kubernetes quantity" in err
    assert f"{path}:18:1: warning[KP905]: duplicate ResourceFlavor default" in err
    assert "KP902" in err
    assert "Traceback" not in err
    (w,) = json.loads(proc.stdout)["workloads"]
    assert w["status"] == "inadmissible"
    assert w["reason"] == "ClusterQueue broken doesn't exist"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli("evaluate").returncode == 2
    path = write_manifests(tmp_path, "partial-admission.yaml")
    assert run_cli("evaluate", str(path), "--cycles", "0").returncode == 2


def test_evaluate_loads_only_what_it_runs(tmp_path: Path) -> None:
    """Each command is imported when it runs: `evaluate` on a cluster export does not pay for
    the compiler's templates and schemas or for GitPython at every start."""
    import subprocess
    import sys

    manifests = write_manifests(tmp_path, sorted(p.name for p in SCENARIOS.glob("*.yaml"))[0])
    probe = ("import sys\nfrom compiler.cli import main\n"
             f"try:\n    main(['evaluate', {str(manifests)!r}, '--format', 'json'])\n"
             "except SystemExit as stop:\n    assert not stop.code, stop.code\n"
             "print(sorted(m for m in ('git', 'compiler.stages.build', 'compiler.stages.pipeline', 'jinja2') if m in sys.modules),"
             " file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(result.stdout)["workloads"]
