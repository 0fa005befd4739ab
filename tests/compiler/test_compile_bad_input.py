"""Every kind of bad input: exit 1, `path:line:col: error[CODE]: message` naming the cause's line,
nothing written, never a traceback. Run through the real console script."""

from __future__ import annotations

import time

import pytest

from kp_testing.policies import CLUSTER, TEAM_A, snapshot, team, write_policy
from kp_testing import run_cli

CLUSTER_NO_COHORTS = CLUSTER.replace("  cohorts:\n    - name: research\n", "")

CASES = {
    "unknown field": (
        {"cluster.yaml": CLUSTER, "a.yaml": team("a", "namespaces: [a]\ngpu: {guaranteed: 8}")},
        [("KP204", "a.yaml:8:3", "unknown field 'gpu'")]),
    "unknown kind": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("kind: Team", "kind: Tenant")},
        [("KP203", "a.yaml:2:7", "unknown kind 'Tenant'")]),
    "wrong type": (
        {"cluster.yaml": CLUSTER.replace("nodes: 2,", "nodes: two,"), "a.yaml": TEAM_A},
        [("KP205", "cluster.yaml:10:", "spec.pools[0].nodes")]),
    "count given as a string": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("guaranteed: 8", 'guaranteed: "8"')},
        [("KP205", "a.yaml:8:", "spec.gpus.guaranteed")]),
    "wrong apiVersion": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("kueue-policy/v1alpha1", "kueue-policy/v1")},
        [("KP202", "a.yaml:1:13", "apiVersion must be 'kueue-policy/v1alpha1'")]),
    "negative number": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("guaranteed: 8", "guaranteed: -1")},
        [("KP205", "a.yaml:8:", "greater than or equal to 0")]),
    "absurd number": (
        {"cluster.yaml": CLUSTER.replace("nodes: 2,", "nodes: 50000000,"), "a.yaml": TEAM_A},
        [("KP205", "cluster.yaml:10:", "less than or equal to 100000")]),
    "absurd quantity": (
        {"cluster.yaml": CLUSTER.replace('cpu: "16"', 'cpu: "16Gx"'), "a.yaml": TEAM_A},
        [("KP208", "cluster.yaml:8:", "not a Kubernetes quantity")]),
    "version written as a number": (
        {"cluster.yaml": CLUSTER.replace('kubernetesVersion: "1.34"', "kubernetesVersion: 1.30"), "a.yaml": TEAM_A},
        [("KP205", "cluster.yaml:6:", "quoted string")]),
    "duplicate keys": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A + "  namespaces: [b]\n"},
        [("KP103", "a.yaml:9:3", "duplicate key 'namespaces'")]),
    "tab indentation": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("  namespaces", "\tnamespaces")},
        [("KP106", "a.yaml:7:1", "tab")]),
    "YAML syntax error": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("[a]", "[a")},
        [("KP101", "a.yaml:", "YAML syntax error")]),
    "explicit tag that does not convert": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("guaranteed: 8", "guaranteed: !!int eight")},
        [("KP101", "a.yaml:8:", "YAML syntax error")]),
    "control character": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("namespaces: [a]", "namespaces: [a\x01]")},
        [("KP101", "a.yaml:7:17", "U+0001 is not allowed in YAML")]),
    "non-UTF-8 file": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.encode() + b"# caf\xe9\n"},
        [("KP102", "a.yaml:9:6", "not valid UTF-8")]),
    "alias": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("namespaces: [a]", "namespaces: &ns [a]\n  models: *ns")},
        [("KP104", "a.yaml:7:15", "anchor 'ns'")]),
    "name with capitals and underscore": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("name: a", "name: Team_A")},
        [("KP207", "a.yaml:4:9", "not a DNS-1123 label")]),
    "name '..'": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("name: a", "name: '..'")},
        [("KP207", "a.yaml:4:9", "not a DNS-1123 label")]),
    "name with a slash": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("name: a", "name: a/b")},
        [("KP207", "a.yaml:4:9", "not a DNS-1123 label")]),
    "namespace that is not a label": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("[a]", "[a, ../etc]")},
        [("KP207", "a.yaml:7:", "spec.namespaces[1]")]),
    "name over 63 characters": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("name: a", "name: " + "a" * 64)},
        [("KP207", "a.yaml:4:9", "longer than 63")]),
    "duplicate teams": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A, "again.yaml": TEAM_A.replace("[a]", "[other]")},
        [("KP301", "again.yaml:4:9", "duplicate team name 'a'")]),
    "duplicate pools": (
        {"cluster.yaml": CLUSTER.replace("{name: spot,", "{name: od,"), "a.yaml": TEAM_A},
        [("KP301", "cluster.yaml:11:", "duplicate pool name 'od'")]),
    "duplicate cohorts": (
        {"cluster.yaml": CLUSTER.replace("    - name: research\n", "    - name: research\n    - name: research\n"),
         "a.yaml": TEAM_A},
        [("KP301", "cluster.yaml:14:", "duplicate cohort name 'research'")]),
    "namespace claimed twice": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A, "b.yaml": team("b", "namespaces: [b, a]")},
        [("KP302", "b.yaml:7:", "namespace 'a' is claimed by team 'b' and by team 'a'")]),
    "unknown cluster": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("cluster: lab", "cluster: nowhere")},
        [("KP303", "a.yaml:6:12", "unknown cluster 'nowhere'")]),
    "unknown cohort": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A + "  cohort: vision\n"},
        [("KP304", "a.yaml:9:11", "unknown cohort 'vision'")]),
    "unknown parent cohort": (
        {"cluster.yaml": CLUSTER.replace("    - name: research\n", "    - {name: research, parent: org}\n"),
         "a.yaml": TEAM_A},
        [("KP304", "cluster.yaml:13:", "unknown parent 'org'")]),
    "unknown priority": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A + "  priority: urgent\n"},
        [("KP305", "a.yaml:9:13", "unknown priority 'urgent'")]),
    "unknown workload priority": (
        {"cluster.yaml": CLUSTER,
         "a.yaml": TEAM_A + "  workloads:\n    - {name: w, gpus: 1, priority: urgent}\n"},
        [("KP305", "a.yaml:10:", "unknown priority 'urgent'")]),
    "unknown model": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A + "  models: [B200]\n"},
        [("KP306", "a.yaml:9:12", "no pool of cluster 'lab' has GPU model 'B200'")]),
    "unknown MIG profile": (
        {"cluster.yaml": CLUSTER + "    - {name: mig, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, mig: planned}\n"
                                   .replace("    - {name: mig", "    - {name: mig"),
         "a.yaml": TEAM_A + "  mig: {5g.50gb: 1}\n"},
        None),  # the cluster file above is malformed on purpose? no: see test below
    "cohort cycle": (
        {"cluster.yaml": CLUSTER.replace("    - name: research\n",
                                         "    - {name: research, parent: org}\n    - {name: org, parent: research}\n"),
         "a.yaml": TEAM_A},
        [("KP308", "cluster.yaml:", "cohort parents form a cycle")]),
    "guarantees over capacity": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("guaranteed: 8", "guaranteed: 20") + "  capacity: on-demand-only\n",
         "b.yaml": team("b", "namespaces: [b]\ngpus: {guaranteed: 4}\ncapacity: on-demand-only")},
        [("KP401", "a.yaml:8:", "pool od is short by 8 GPUs"), ("KP401", "b.yaml:8:", "pool od is short by 8 GPUs")]),
    "burst without a cohort": (
        {"cluster.yaml": CLUSTER_NO_COHORTS, "a.yaml": TEAM_A.replace("{guaranteed: 8}", "{guaranteed: 8, burst: 4}")},
        [("KP309", "a.yaml:8:", "gpus.burst but has no cohort")]),
    "lend without a cohort": (
        {"cluster.yaml": CLUSTER_NO_COHORTS, "a.yaml": TEAM_A.replace("{guaranteed: 8}", "{guaranteed: 8, lend: 4}")},
        [("KP309", "a.yaml:8:", "gpus.lend but has no cohort")]),
    "lend above guaranteed": (
        {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A.replace("{guaranteed: 8}", "{guaranteed: 8, lend: 9}")},
        [("KP310", "a.yaml:8:", "gpus.lend (9) is more than gpus.guaranteed (8)")]),
    "empty policy folder": ({}, [("KP105", "policies", "no *.yaml or *.yml policy files")]),
    "only empty files": ({"empty.yaml": ""}, [("KP105", "policies", "no policy documents")]),
}
# The MIG case needs a MIG pool in the pool list, not appended after priorities.
CASES["unknown MIG profile"] = (
    {"cluster.yaml": CLUSTER.replace(
        "    - {name: spot,", "    - {name: mig, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, mig: planned}\n    - {name: spot,"),
     "a.yaml": TEAM_A + "  mig: {5g.50gb: 1}\n"},
    [("KP307", "a.yaml:9:9", "MIG profile '5g.50gb' does not exist on H100-80GB")])
CASES["MIG profile of another model"] = (
    {"cluster.yaml": CLUSTER.replace(
        "    - {name: spot,", "    - {name: mig, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, mig: planned}\n    - {name: spot,"),
     "a.yaml": TEAM_A + "  mig: {1g.5gb: 1}\n"},
    [("KP307", "a.yaml:9:9", "it is a profile of A100-40GB")])


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_reported_at_its_line_and_nothing_is_written(tmp_path, case):
    files, expected = CASES[case]
    policies = write_policy(tmp_path, files)
    out = tmp_path / "out"
    (out / "lab").mkdir(parents=True)
    (out / "lab" / "keep.txt").write_text("a file the user put here\n")
    before = snapshot(out)
    result = run_cli("compile", str(policies), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    for code, where, words in expected:
        lines = [l for l in result.stderr.splitlines() if f"error[{code}]" in l]
        assert lines, f"no {code} in:\n{result.stderr}"
        assert any(where in l and words in l for l in lines), f"expected {where} ... {words} in:\n{result.stderr}"
        # Every diagnostic names a file and line: path:line:col: error[...]
        assert all(l.split(": error[")[0].count(":") >= 2 or l.startswith("policies") for l in lines)
    assert snapshot(out) == before


def test_independent_errors_are_reported_together(tmp_path):
    policies = write_policy(tmp_path, {
        "cluster.yaml": CLUSTER,
        "a.yaml": TEAM_A + "  priority: urgent\n",
        "b.yaml": team("b", "namespaces: [b]\ncohort: nowhere"),
        "c.yaml": team("c", "namespaces: [c]\nbogus: 1"),
    })
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    for code in ("KP305", "KP304", "KP204"):
        assert f"error[{code}]" in result.stderr


def test_empty_yaml_file_is_not_an_error(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A, "notes.yaml": "", "blank.yml": "\n# just a comment\n"})
    result = run_cli("validate", str(policies))
    assert result.returncode == 0, result.stderr


def test_alias_bomb_fails_fast(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 30):
        lines.append(f"{chr(97 + i % 26)}{i}: &x{i} [" + ",".join([f"*{'a' if i == 1 else 'x' + str(i - 1)}"] * 9) + "]")
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "bomb.yaml": "\n".join(lines) + "\n"})
    started = time.monotonic()
    result = run_cli("validate", str(policies))
    elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert "error[KP104]" in result.stderr
    # Not a benchmark: an expanded bomb would take hours and exhaust memory, not seconds.
    assert elapsed < 60


def test_usage_error_exits_2(tmp_path):
    result = run_cli("compile", "--format", "xml")
    assert result.returncode == 2


def test_explain_prints_the_long_form():
    result = run_cli("explain", "KP401")
    assert result.returncode == 0
    assert "nodes x gpusPerNode x overcommit" in result.stdout


def test_a_broken_cluster_file_is_not_echoed_as_errors_in_every_team_file(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER.replace("nodes: 2,", "nodes: -2,"), "a.yaml": TEAM_A,
                                       "b.yaml": team("b", "namespaces: [b]")})
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    errors = [l for l in result.stderr.splitlines() if ": error[" in l]
    assert len(errors) == 1 and "cluster.yaml:10:" in errors[0], result.stderr
