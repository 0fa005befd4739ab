"""Verdicts for declared workloads: guaranteed, borrowing, never, and what `never` does."""

from __future__ import annotations

import json

from kp_testing.policies import CLUSTER, snapshot, team, write_policy
from kp_testing import run_cli

MIG_CLUSTER = CLUSTER.replace(
    "    - {name: spot,", "    - {name: mig, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, mig: planned}\n    - {name: spot,")


def verdicts(tmp_path, cluster: str, body: str, *others: tuple[str, str]) -> dict[str, dict]:
    files = {"cluster.yaml": cluster, "a.yaml": team("a", body)}
    for name, other in others:
        files[f"{name}.yaml"] = team(name, other)
    policies = write_policy(tmp_path, files)
    result = run_cli("check", str(policies), "--format", "json", "--allow-inadmissible")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    return {w["name"]: w for w in payload["workloads"] if w["team"] == "a"}


def test_guaranteed_borrowing_and_never(tmp_path):
    found = verdicts(tmp_path, CLUSTER, """
        namespaces: [a]
        gpus: {guaranteed: 8, burst: 4}
        workloads:
          - {name: fits, replicas: 1, gpus: 8}
          - {name: borrows, replicas: 3, gpus: 4}
          - {name: too-big, replicas: 2, gpus: 8}
          - {name: pod-bigger-than-node, replicas: 1, gpus: 16}
    """)
    assert found["fits"]["verdict"] == "guaranteed"
    assert found["borrows"]["verdict"] == "borrowing"
    assert found["too-big"]["verdict"] == "never"
    assert "16" in found["too-big"]["reason"]
    assert found["pod-bigger-than-node"]["verdict"] == "never"
    assert "node" in found["pod-bigger-than-node"]["reason"]


def test_without_a_cohort_there_is_no_borrowing(tmp_path):
    cluster = CLUSTER.replace("  cohorts:\n    - name: research\n", "")
    found = verdicts(tmp_path, cluster, """
        namespaces: [a]
        gpus: {guaranteed: 8}
        workloads:
          - {name: over, replicas: 3, gpus: 4}
    """)
    assert found["over"]["verdict"] == "never"


def test_borrowing_is_bounded_by_what_others_lend(tmp_path):
    # a: 8 guaranteed, may borrow without limit; b takes the other 8 of od and lends none.
    found = verdicts(tmp_path, CLUSTER, """
        namespaces: [a]
        gpus: {guaranteed: 8}
        capacity: on-demand-only
        workloads:
          - {name: sixteen, replicas: 2, gpus: 8}
    """, ("b", "namespaces: [b]\ngpus: {guaranteed: 8, lend: 0}\ncapacity: on-demand-only"))
    assert found["sixteen"]["verdict"] == "never"


def test_mig_workloads(tmp_path):
    found = verdicts(tmp_path, MIG_CLUSTER, """
        namespaces: [a]
        gpus: {guaranteed: 8}
        mig: {3g.40gb: 2}
        workloads:
          - {name: two-slices, replicas: 2, mig: 3g.40gb}
          - {name: gang-on-slices, replicas: 2, mig: 3g.40gb, gang: true}
    """)
    assert found["two-slices"]["verdict"] == "guaranteed"
    assert found["gang-on-slices"]["verdict"] == "never"
    assert "NVLink" in found["gang-on-slices"]["reason"]


def test_never_fails_compile_unless_allowed(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": team("a", """
        namespaces: [a]
        gpus: {guaranteed: 8}
        workloads:
          - {name: huge, replicas: 10, gpus: 8}
    """)})
    out = tmp_path / "out"
    result = run_cli("compile", str(policies), "--out", str(out))
    assert result.returncode == 1
    assert "error[KP601]" in result.stderr and "a.yaml:10:" in result.stderr and "'huge'" in result.stderr
    assert snapshot(out) == {}
    allowed = run_cli("compile", str(policies), "--out", str(out), "--allow-inadmissible")
    assert allowed.returncode == 0, allowed.stderr
    report = json.loads((out / "lab" / "report.json").read_text())
    assert report["workloads"][0]["verdict"] == "never"
    check = run_cli("check", str(policies), "--format", "json")
    assert check.returncode == 1
    payload = json.loads(check.stdout)
    assert payload["workloads"][0].keys() >= {"team", "name", "verdict", "reason"}
    assert payload["summary"]["never"] == 1
