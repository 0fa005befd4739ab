"""What `capacity` plans for and edits: only the searched cluster's pools and teams; the trace's
mistakes that no candidate can change refused before the search; jobs a Kueue export leaves
out said; a `--mig` no pool can take refused as the flag's mistake; every candidate's label its
own, and one point ringed as the answer."""

from __future__ import annotations

import collections
import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, LAB, lab_trace, one_team_policy
from kp_testing import run_cli

from compiler.capacity.candidate import Candidate, TeamQuota, apply
from compiler.capacity import targets as targets_module
from compiler.capacity.problem import prepare
from compiler.capacity.evaluate import Evaluation, evaluate
from compiler.capacity.report import _labels


EAST = """apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: east
spec:
  pools:
    - {name: a100, gpu: A100-80GB, nodes: 12, gpusPerNode: 4, cost: 2}
  cohorts:
    - name: all
"""
WEST = EAST.replace("east", "west").replace("nodes: 12", "nodes: 3")
TEAM = """apiVersion: kueue-policy/v1alpha1
kind: Team
metadata:
  name: {name}
spec:
  cluster: {cluster}
  cohort: all
  namespaces: [{namespace}]
  gpus: {{guaranteed: {guaranteed}}}
"""


def _two_clusters(root: Path) -> Path:
    """East and west, each with a pool `a100` and a team `team-a` (team-b in east only)."""
    (root / "teams").mkdir(parents=True)
    (root / "east.yaml").write_text(EAST)
    (root / "west.yaml").write_text(WEST)
    (root / "teams" / "east.yaml").write_text(
        TEAM.format(name="team-a", cluster="east", namespace="team-a", guaranteed=0) + "---\n"
        + TEAM.format(name="team-b", cluster="east", namespace="team-b", guaranteed=0))
    (root / "teams" / "west.yaml").write_text(TEAM.format(name="team-a", cluster="west", namespace="west-a",
                                                          guaranteed=4))
    return root


def test_write_edits_only_the_searched_cluster(tmp_path: Path) -> None:
    policy = _two_clusters(tmp_path / "policy")
    before = {path: path.read_bytes() for path in policy.rglob("*.yaml")}
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(policy), "--cluster", "east", "--trace", str(trace), "--target",
                   "p95-wait<=30m", "--write", "--workers", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert (policy / "west.yaml").read_bytes() == before[policy / "west.yaml"]
    assert (policy / "teams" / "west.yaml").read_bytes() == before[policy / "teams" / "west.yaml"]
    assert (policy / "east.yaml").read_bytes() != before[policy / "east.yaml"]   # (12 nodes is more than the trace needs)
    assert (policy / "teams" / "east.yaml").read_bytes() != before[policy / "teams" / "east.yaml"]
    written = json.loads(done.stdout)["written"]
    assert all("west" not in path for path in written), written


def test_a_team_the_policy_lacks_is_refused_before_the_search(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    trace.write_text(trace.read_text() + "ghost,g1,100,600,1,1\n")
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m", "--workers", "1")
    assert done.returncode == 1
    assert f"{trace}:62:1: error[KP314]: jobs[60]: unknown team 'ghost'" in done.stderr
    assert "KP922" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("error[") == 1


def _export(path: Path) -> Path:
    """A Kueue export (`kubectl get workloads -A -o yaml`): four finished workloads of team-a and
    two of a namespace no team has."""
    items = []
    for index, namespace in enumerate(["team-a", "ghost-ns", "team-a", "ghost-ns", "team-a", "team-a"]):
        minute = 10 * index
        items.append(f"""- apiVersion: kueue.x-k8s.io/v1beta1
  kind: Workload
  metadata: {{creationTimestamp: "2026-11-30T09:{minute:02d}:00Z", name: w{index}, namespace: {namespace}}}
  spec:
    podSets:
    - count: 1
      name: main
      template: {{spec: {{containers: [{{name: c, resources: {{requests: {{nvidia.com/gpu: "2"}}}}}}]}}}}
  status:
    conditions:
    - {{lastTransitionTime: "2026-11-30T09:{minute:02d}:30Z", status: "True", type: QuotaReserved}}
    - {{lastTransitionTime: "2026-11-30T10:{minute:02d}:30Z", status: "True", type: Finished}}""")
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + "\n".join(items) + "\n")
    return path


def test_jobs_an_export_leaves_out_are_said(lab: Path, tmp_path: Path) -> None:
    export = _export(tmp_path / "workloads.yaml")
    done = run_cli("capacity", str(lab), "--trace", str(export), "--target", "p95-wait<=30m", "--workers", "1",
                   "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "2 job(s) of namespace 'ghost-ns' belong to no team of cluster 'lab'; left out" in done.stderr
    assert json.loads(done.stdout)["notes"]["unknownTeams"] == {"ghost-ns": 2}


def test_mig_on_a_model_mig_cannot_cut_is_the_flags_mistake(tmp_path: Path) -> None:
    policy = tmp_path / "lab"
    shutil.copytree(LAB, policy)
    cluster = policy / "cluster.yaml"
    cluster.write_text(cluster.read_text().replace("gpu: A100-80GB\n      nodes: 3\n      gpusPerNode: 4\n      "
                                                   "capacity: spot", "gpu: L40S\n      nodes: 3\n      gpusPerNode: "
                                                   "4\n      capacity: spot", 1))
    assert "L40S" in cluster.read_text()
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=30m", "--mig", "spot=planned")
    assert done.returncode == 1
    assert "--mig 'spot=planned': pool 'spot' has L40S, which MIG cannot cut" in done.stderr
    assert "KP920" in done.stderr and "KP922" not in done.stderr


def test_labels_alike_in_nodes_and_total_guarantee_are_told_apart() -> None:
    def evaluation(nodes, quotas):
        return Evaluation(Candidate(nodes, (), quotas), 1.0, {}, True)

    nodes = (("ondemand", 1), ("spot", 5))
    ours = (TeamQuota("team-a", 10), TeamQuota("team-b", 7))
    theirs = (TeamQuota("team-a", 7), TeamQuota("team-b", 10))
    labels = _labels([evaluation(nodes, ours), evaluation(nodes, theirs), evaluation((("ondemand", 2), ("spot", 5)),
                                                                                    ours)])
    assert len(set(labels.values())) == 3
    assert labels[Candidate(nodes, (), ours)] == "ondemand=1, spot=5; guaranteed 17 GPUs (team-a 10, team-b 7)"
    assert labels[Candidate((("ondemand", 2), ("spot", 5)), (), ours)] == "ondemand=2, spot=5; guaranteed 17 GPUs"
    many = tuple(TeamQuota(f"t{i:02d}", 1) for i in range(20))
    other = many[:-1] + (TeamQuota("t19", 0), TeamQuota("t20", 1))
    labels = _labels([evaluation(nodes, many), evaluation(nodes, other)])
    assert len(set(labels.values())) == 2 and all("(guarantees #" in label for label in labels.values())


def test_one_point_of_the_frontier_is_the_answer(tmp_path: Path) -> None:
    policy = tmp_path / "lab"
    shutil.copytree(LAB, policy)
    for name, guaranteed in (("team-a", 7), ("team-b", 10)):
        path = policy / "teams" / f"{name}.yaml"
        path.write_text(path.read_text().replace("guaranteed: 0", f"guaranteed: {guaranteed}"))
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=30m", "--workers", "1",
                   "--format", "json")
    data = json.loads(done.stdout)
    labels = [point["candidate"] for point in data["candidates"]]
    assert [label for label, count in collections.Counter(labels).items() if count > 1] == []
    answers = [point for point in data["candidates"] if point["answer"]]
    assert [point["candidate"] for point in answers] == [data["answer"]["candidate"]]


def test_write_changes_only_the_numbers_whatever_the_files_layout(tmp_path: Path) -> None:
    # kubectl's list style (no indent before `-`), a comment and `---` before the document, aligned
    # comments on the lines that change, CRLF line endings, a closing `...`.
    policy = tmp_path / "lab"
    shutil.copytree(LAB, policy)
    cluster = policy / "cluster.yaml"
    text = cluster.read_text().replace("\n    - ", "\n  - ").replace("\n      ", "\n    ")
    text = text.replace("nodes: 3\n", "nodes: 6        # racks 1-6\n", 1).replace("nodes: 3\n", "nodes: 6\n")
    text = "# the lab\n---\n" + text + "...\n"
    cluster.write_bytes(text.replace("\n", "\r\n").encode())
    team = policy / "teams" / "team-a.yaml"
    team.write_text(team.read_text().replace("gpus: {guaranteed: 0}", "gpus:\n    guaranteed: 5    # five for now"))
    before = {path: path.read_bytes() for path in policy.rglob("*.yaml")}
    trace = lab_trace(tmp_path / "trace.csv")
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=30m", "--write",
                   "--workers", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["written"]
    for path, old in before.items():
        new = path.read_bytes()
        old_lines, new_lines = old.split(b"\n"), new.split(b"\n")
        assert len(old_lines) == len(new_lines), path
        for old_line, new_line in zip(old_lines, new_lines):
            if old_line != new_line:   # the same line but for one number
                assert _without_digits(old_line) == _without_digits(new_line), (old_line, new_line)
    assert before[cluster] != cluster.read_bytes()
    assert b"        # racks 1-6\r\n" in cluster.read_bytes()


def _without_digits(line: bytes) -> bytes:
    return bytes(ch for ch in line if not chr(ch).isdigit())


def test_numbers_in_place_in_flow_and_block_mappings_of_every_document() -> None:
    files = {"teams.yaml": b"kind: Team\nmetadata: {name: ta}\nspec:\n  gpus: {guaranteed: 10, burst: 4, lend: 9}\n"
                           b"---\n# b\nkind: Team\nmetadata:\n  name: tb\nspec:\n  gpus:\n    guaranteed: 3   # three\n"
                           b"    burst: 2\n",
             "tc.yaml": b"kind: Team\nmetadata: {name: tc}\nspec:\n  cohort: x\n"}
    out = apply(files, Candidate((), (), (TeamQuota("ta", 6, (), 8), TeamQuota("tb", 12, (), 20),
                                          TeamQuota("tc", 2, (), None))))
    assert out["teams.yaml"] == (b"kind: Team\nmetadata: {name: ta}\nspec:\n  gpus: {guaranteed: 6, burst: 8, lend: 6}\n"
                                 b"---\n# b\nkind: Team\nmetadata:\n  name: tb\nspec:\n  gpus:\n    guaranteed: 12   # three\n"
                                 b"    burst: 20\n")
    # a block added is a change of structure: that file is emitted again, with the block
    assert out["tc.yaml"] == b"kind: Team\nmetadata: {name: tc}\nspec:\n  cohort: x\n  gpus:\n    guaranteed: 2\n"


def test_a_pod_larger_than_any_node_is_warned_about(lab: Path, tmp_path: Path) -> None:
    trace = lab_trace(tmp_path / "trace.csv")
    trace.write_text(trace.read_text() + "team-a,huge,100,600,1,16\n")   # the lab's nodes have 4 GPUs
    warning = ("1 job(s) of team 'team-a' ask pods of up to 16 GPUs, more than any node of its pools has (4): "
               "Kueue admits them on quota, but no node can run their pods")
    simulated = run_cli("simulate", str(lab), "--trace", str(trace), "--format", "json")
    assert simulated.returncode == 0, simulated.stderr
    assert any(warning in message for message in json.loads(simulated.stdout)["notes"]["warnings"])
    assert warning in run_cli("simulate", str(lab), "--trace", str(trace)).stderr   # (the text output's notes)
    done = run_cli("capacity", str(lab), "--trace", str(trace), "--target", "p95-wait<=30m", "--workers", "1",
                   "--format", "json")
    assert done.stderr.count(warning) == 1   # (printed once, with the trace's other notes)
    assert any(warning in message for message in json.loads(done.stdout)["notes"]["warnings"])
    fitting = lab_trace(tmp_path / "fitting.csv")
    assert "more than any node" not in run_cli("simulate", str(lab), "--trace", str(fitting), "--format", "json").stderr


def test_a_team_with_kueues_own_quota_is_left_alone(tmp_path: Path) -> None:
    policy = tmp_path / "lab"
    shutil.copytree(LAB, policy)
    team = policy / "teams" / "team-a.yaml"
    team.write_text(team.read_text().replace("  gpus: {guaranteed: 0}\n", """  kueue:
    resourceGroups:
    - coveredResources: [nvidia.com/gpu, cpu, memory]
      flavors:
      - name: ondemand
        resources:
        - {name: nvidia.com/gpu, nominalQuota: "4"}
        - {name: cpu, nominalQuota: "64"}
        - {name: memory, nominalQuota: 512Gi}
"""))
    before = team.read_bytes()
    trace = lab_trace(tmp_path / "trace.csv")
    # its pool may not be sized without its quota: refused unless fixed
    refused = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=1h", "--workers", "1")
    assert refused.returncode == 1
    assert ("team-a.yaml:11:5: error[KP920]: team 'team-a' holds quota in Kueue's own form (kueue.resourceGroups) "
            "on ondemand, which the search would size without it: add --fixed ondemand") in refused.stderr
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=1h", "--write",
                   "--fixed", "ondemand", "--workers", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert team.read_bytes() == before
    assert all("does not compile" not in " ".join(point["misses"]) for point in data["candidates"])


@pytest.mark.parametrize("mig", [(), ("--mig", "a100=none")])
def test_a_policy_that_meets_the_targets_is_never_answered_with_a_costlier_one(tmp_path: Path, mig) -> None:
    # East's policy meets the target at 32/h; the descents from the largest candidates end at 36/h
    # (moving nodes between pools is not searched), so the policy as it is competes.
    # A `--mig` choice that is the pool's own cut changes nothing: the policy still competes.
    policy = tmp_path / "policy"
    shutil.copytree(FIXTURES / "meets-already", policy)
    before = (policy / "all.yaml").read_bytes()
    done = run_cli("capacity", str(policy), "--trace", str(FIXTURES / "meets-already.csv"), "--target", "p95-wait<=1h",
                   "--cluster", "east", "--workers", "1", "--write", "--format", "json", *mig)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["baseline"]["meets"]
    assert data["answer"]["costPerHour"] <= data["baseline"]["costPerHour"] == 32.0
    assert [cut["costPerHour"] for cut in data["cuts"]] == [data["answer"]["costPerHour"]]   # (the cuts agree)
    assert data["written"] == [] and (policy / "all.yaml").read_bytes() == before   # no change: nothing written


def test_a_tagged_number_crlf_comments_and_a_zero_guarantee() -> None:
    files = {"cluster.yaml": b"kind: Cluster\r\nmetadata: {name: c}\r\nspec:\r\n  pools:\r\n  # the only pool\r\n"
                             b"  - {name: a, gpu: A100-80GB, nodes: !!int 3, gpusPerNode: 4}\r\n",
             "team.yaml": b"kind: Team\nmetadata: {name: t}\nspec:\n  cohort: x\n"}
    out = apply(files, Candidate((("a", 6),), (), (TeamQuota("t", 0),)))
    # a tag where the number stands: the file is emitted again, with one CRLF a line
    assert b"\r\r" not in out["cluster.yaml"] and out["cluster.yaml"].count(b"\n") == out["cluster.yaml"].count(b"\r\n")
    from ruamel.yaml import YAML

    assert YAML(typ="safe").load(out["cluster.yaml"])["spec"]["pools"][0]["nodes"] == 6
    assert b"# the only pool\r\n" in out["cluster.yaml"]
    # no `gpus` is a guarantee of 0: nothing to add
    assert out["team.yaml"] == files["team.yaml"]


def test_write_keeps_a_symlinked_file_a_link_and_its_permissions(tmp_path: Path) -> None:
    from compiler.capacity.candidate import write_policy_files

    shared = tmp_path / "shared" / "team.yaml"
    shared.parent.mkdir()
    shared.write_bytes(b"old\n")
    shared.chmod(0o640)
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "team.yaml").symlink_to(shared)
    assert write_policy_files(policy, {"team.yaml": b"old\n"}, {"team.yaml": b"new\n"}) == [str(policy / "team.yaml")]
    assert (policy / "team.yaml").is_symlink() and shared.read_bytes() == b"new\n"
    assert shared.stat().st_mode & 0o777 == 0o640


def test_a_write_that_fails_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    from compiler.capacity.candidate import write_policy_files
    from compiler.core.errors import EnvironmentFailure

    policy = tmp_path / "policy"
    (policy / "teams").mkdir(parents=True)
    (policy / "a.yaml").write_bytes(b"nodes: 3\n")
    (policy / "teams" / "t.yaml").write_bytes(b"guaranteed: 4\n")
    (policy / "teams" / ".t.yaml.capacity").mkdir()   # (the second file's temporary cannot be written)
    with pytest.raises(EnvironmentFailure, match=r"\.t\.yaml\.capacity .*nothing was written"):
        write_policy_files(policy, {"a.yaml": b"nodes: 3\n", "teams/t.yaml": b"guaranteed: 4\n"},
               {"a.yaml": b"nodes: 5\n", "teams/t.yaml": b"guaranteed: 2\n"})
    assert (policy / "a.yaml").read_bytes() == b"nodes: 3\n"
    assert sorted(p.name for p in policy.rglob("*")) == [".t.yaml.capacity", "a.yaml", "t.yaml", "teams"]


def test_a_block_added_re_emits_only_its_document_at_its_indentation() -> None:
    # A directive, a header comment, four-space indentation, an end marker and a comment after it,
    # a comment about the next document below the last key: only the team's document is re-emitted.
    files = {"all.yaml": b"%YAML 1.2\n# The platform's cluster and teams, one file.\n---\n"
                         b"kind: Cluster\nmetadata:\n    name: lab\nspec:\n    pools:\n"
                         b"        -   name: ondemand\n            gpu: A100-80GB\n            nodes: 3    # racks\n"
                         b"---\n# Research: no guarantee yet.\nkind: Team\nmetadata:\n    name: research\nspec:\n"
                         b"    cohort: all   # shares\n    namespaces:\n    - research\n# about the next one\n"
                         b"...\n# the end\n---\nkind: Team\nmetadata: {name: other}\nspec:\n    gpus: {guaranteed: 1}\n"}
    out = apply(files, Candidate((("ondemand", 5),), (), (TeamQuota("research", 4, (), 6),
                                                          TeamQuota("other", 2, (), None))))
    assert out["all.yaml"] == (
        b"%YAML 1.2\n# The platform's cluster and teams, one file.\n---\n"
        b"kind: Cluster\nmetadata:\n    name: lab\nspec:\n    pools:\n"
        b"        -   name: ondemand\n            gpu: A100-80GB\n            nodes: 5    # racks\n"
        b"---\n# Research: no guarantee yet.\nkind: Team\nmetadata:\n    name: research\nspec:\n"
        b"    cohort: all   # shares\n    namespaces:\n    - research\n    gpus:\n        guaranteed: 4\n"
        b"        burst: 6\n# about the next one\n"
        b"...\n# the end\n---\nkind: Team\nmetadata: {name: other}\nspec:\n    gpus: {guaranteed: 2}\n")
    # Comments below the last key with a blank line between them: once, below the added keys.
    spaced = {"s.yaml": b"kind: Team\nmetadata: {name: s}\nspec:\n  cohort: all\n  # one\n\n  # two\n---\nkind: X\n"}
    out = apply(spaced, Candidate((), (), (TeamQuota("s", 4, (), None),)))
    assert out["s.yaml"] == (b"kind: Team\nmetadata: {name: s}\nspec:\n  cohort: all\n  gpus:\n    guaranteed: 4\n"
                             b"  # one\n\n  # two\n---\nkind: X\n")
    # An empty document (a `---` with nothing in it) before and after: kept as written.
    empty = {"e.yaml": b"---\n# nothing yet\n---\nkind: Team\nmetadata: {name: e}\nspec:\n  cohort: all\n---\n"}
    out = apply(empty, Candidate((), (), (TeamQuota("e", 3, (), None),)))
    assert out["e.yaml"] == (b"---\n# nothing yet\n---\nkind: Team\nmetadata: {name: e}\nspec:\n  cohort: all\n"
                             b"  gpus:\n    guaranteed: 3\n---\n")
    crlf = {"c.yaml": b"# header\r\n---\r\nkind: Team\r\nmetadata: {name: c}\r\nspec:\r\n   cohort: all\r\n"}
    out = apply(crlf, Candidate((), (), (TeamQuota("c", 2, (("1g.10gb", 2),), None),)))
    assert out["c.yaml"] == (b"# header\r\n---\r\nkind: Team\r\nmetadata: {name: c}\r\nspec:\r\n   cohort: all\r\n"
                             b"   gpus:\r\n      guaranteed: 2\r\n   mig: {1g.10gb: 2}\r\n")
    # Documents that begin on their `---` line: the one given a block is re-emitted there (still
    # on its marker line), the other keeps its bytes but for the number, and so does a literal.
    inline = {"i.yaml": b"# head\nkind: Note\ntext: x\n--- {kind: Team, metadata: {name: i},\n"
                        b"     spec: {cohort: all}}\n# about j\n---   {kind: Team, metadata: {name: j}, "
                        b"spec: {gpus: {guaranteed: 3}}}\n--- |\n  free text\n"}
    out = apply(inline, Candidate((), (), (TeamQuota("i", 4, (), None), TeamQuota("j", 2, (), None))))
    assert out["i.yaml"] == (b"# head\nkind: Note\ntext: x\n--- {kind: Team, metadata: {name: i}, spec: {cohort: all, "
                             b"gpus: {guaranteed: 4}}}\n# about j\n---   {kind: Team, metadata: {name: j}, "
                             b"spec: {gpus: {guaranteed: 2}}}\n--- |\n  free text\n")


def test_the_answer_keeps_every_declared_workload_admissible(tmp_path: Path) -> None:
    # team-b never borrows and has no job in the trace: demand would guarantee it nothing, and its
    # declared workload would never be admitted, which `compile` refuses.
    policy = tmp_path / "lab"
    shutil.copytree(LAB, policy)
    team = policy / "teams" / "team-b.yaml"
    team.write_text(team.read_text().replace("gpus: {guaranteed: 0}", "gpus: {guaranteed: 2, burst: 0}\n"
                                             "  workloads:\n    - {name: serve, replicas: 1, gpus: 2}"))
    assert run_cli("compile", str(policy), "--out", str(tmp_path / "before")).returncode == 0
    trace = tmp_path / "trace.csv"
    trace.write_text("team,name,at,duration,replicas,gpus\nteam-a,only,0,600,1,4\n")
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=1h", "--workers", "1",
                   "--write", "--format", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["answer"]
    rows = {row["team"]: row for row in answer["teams"]}
    assert rows["team-b"]["guaranteed"] >= 2   # (demand's guarantee leaves room for the declared workload)
    assert answer["guarantees"].startswith("guarantees from each team's mean")
    compiled = run_cli("compile", str(policy), "--out", str(tmp_path / "after"))
    assert compiled.returncode == 0, compiled.stderr
    # A policy `compile` already refuses: said, and the answer is not held to those workloads.
    broken = tmp_path / "broken"
    shutil.copytree(policy, broken)
    team_b = broken / "teams" / "team-b.yaml"
    team_b.write_text(team_b.read_text().replace("gpus: 2}", "gpus: 64}"))
    said = run_cli("capacity", str(broken), "--trace", str(trace), "--target", "p95-wait<=1h", "--workers", "1")
    assert "the policy as it is has 1 declared workload(s) that would never be admitted (team-b/serve)" in said.stderr
    # A candidate that would leave it inadmissible anyway is refused, as `compile` refuses it.
    requirements = targets_module.from_flags(("p95-wait<=1h",), (), ())
    problem, _, _ = prepare(policy, trace, None, requirements, (), "keep", False)
    refused = evaluate(problem, Candidate((("ondemand", 1), ("spot", 1)), (), (TeamQuota("team-a", 0),
                                                                              TeamQuota("team-b", 0, (), 0))))
    assert not refused.meets and "workload 'serve' of team 'team-b' would never be admitted" in refused.misses[0]


def _rack_trace(path: Path, jobs: int = 120, seed: int = 3) -> Path:
    rng = random.Random(seed)
    rows, at = [], 0
    for index in range(jobs):
        at += rng.randint(60, 1200)
        rows.append(f"  - {{name: j{index}, team: {rng.choice('ab')}, at: {at}, duration: {rng.randint(600, 6000)}, "
                    f"replicas: {rng.choice([1, 2, 4])}, gpus: 8, topology: {{required: example.com/rack}}}}")
    path.write_text("jobs:\n" + "\n".join(rows) + "\n")
    return path


def test_a_pool_with_a_topology_moves_in_whole_top_level_domains(tmp_path: Path) -> None:
    trace = _rack_trace(tmp_path / "racks.yaml")
    done = run_cli("capacity", str(FIXTURES / "topology"), "--trace", str(trace), "--target", "p95-wait<=1h",
                   "--workers", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert not [p for p in data["candidates"] if any("does not compile" in m for m in p["misses"])]
    nodes = [int(p["candidate"].split("h100=")[1].split(";")[0]) for p in data["candidates"]]
    assert nodes and all(n % 8 == 0 for n in nodes), nodes
    assert [p["candidate"].split(";")[0] for p in data["proof"]] == [f"h100={data['answer']['pools'][0]['nodes'] - 8}"]
    refused = run_cli("capacity", str(FIXTURES / "topology"), "--trace", str(trace), "--target", "p95-wait<=1h",
                      "--nodes", "h100=1..7")
    assert refused.returncode == 1
    assert "pool 'h100' has whole top-level domains of 8 nodes, and its bound (1..7) holds no multiple of 8" in refused.stderr


def test_a_pool_of_listed_nodes_is_kept_as_listed(tmp_path: Path) -> None:
    policy = tmp_path / "listed"
    (policy / "nodes").mkdir(parents=True)
    (policy / "cluster.yaml").write_text(
        "kind: Cluster\napiVersion: kueue-policy/v1alpha1\nmetadata: {name: listed}\nspec:\n  pools:\n"
        "    - name: p\n      gpu: H100-80GB\n      nodes: 2\n      gpusPerNode: 8\n      topology:\n"
        "        levels: [{nodeLabel: example.com/rack}, {nodeLabel: kubernetes.io/hostname}]\n"
        "        nodesFrom: nodes/p.yaml\n"
        "    - {name: q, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: spot}\n  cohorts: [{name: all}]\n"
        "---\nkind: Team\napiVersion: kueue-policy/v1alpha1\nmetadata: {name: x}\n"
        "spec: {cohort: all, namespaces: [x], gpus: {guaranteed: 8}}\n")
    (policy / "nodes" / "p.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(
        f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n{i}\n    labels: {{kueue-policy.io/pool: p, "
        f"example.com/rack: r0, kubernetes.io/hostname: n{i}}}\n  status:\n    allocatable: {{cpu: '128', "
        f"memory: 1Ti, nvidia.com/gpu: '8'}}\n    conditions: [{{type: Ready, status: 'True'}}]\n" for i in range(2)))
    trace = tmp_path / "trace.csv"
    trace.write_text("team,name,at,duration,replicas,gpus\n" + "".join(f"x,j{i},{i * 600},3000,1,8\n" for i in range(20)))
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=2h", "--workers", "1",
                   "--format", "json")
    assert done.returncode == 0, done.stderr
    pools = {p["pool"]: p for p in json.loads(done.stdout)["answer"]["pools"]}
    assert pools["p"]["nodes"] == 2 and pools["p"]["fixed"]
    refused = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=2h", "--nodes", "p=1..4")
    assert refused.returncode == 1
    assert "pool 'p' takes its nodes from nodes/p.yaml: the search cannot add or remove them; give --fixed p" in refused.stderr


def _two_shapes(tmp_path: Path) -> Path:
    """One team over a pool of one 8-GPU node and a pool of eight 1-GPU nodes, one cohort."""
    return one_team_policy(tmp_path / "shapes", ["{name: big, gpu: V100, nodes: 1, gpusPerNode: 8}",
                                                 "{name: small, gpu: V100, nodes: 8, gpusPerNode: 1}"], 16)


def test_jobs_on_a_pool_whose_nodes_cannot_hold_their_pods_are_no_answer(tmp_path: Path) -> None:
    # Kueue admits an 8-GPU pod on the pool of 1-GPU nodes when the 8-GPU pool is full: on a
    # cluster it would wait Pending there. `simulate` says so; `capacity` answers only with
    # candidates where no job depends on it.
    policy = _two_shapes(tmp_path)
    trace = tmp_path / "trace.csv"
    trace.write_text("team,name,at,duration,replicas,gpus\n" + "".join(f"a,j{i},{i * 900},3600,1,8\n" for i in range(40)))
    simulated = run_cli("simulate", str(policy), "--trace", str(trace), "--format", "json")
    assert simulated.returncode == 0, simulated.stderr
    assert any("ran on pool 'small' with pods of up to 8 GPUs, more than its nodes have (1)" in warning
               for warning in json.loads(simulated.stdout)["notes"]["warnings"])
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=10m", "--nodes", "big=1..6",
                   "--workers", "1", "--write", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert any("run on pool small with pods of 8 GPUs" in miss for p in data["candidates"] for miss in p["misses"])
    assert data["answer"]["pools"][0]["nodes"] >= 4   # (4 jobs of 8 GPUs at once: 32 GPUs on 8-GPU nodes)
    written = run_cli("simulate", str(policy), "--trace", str(trace), "--format", "json")
    assert not any("more than its nodes have" in w for w in json.loads(written.stdout)["notes"]["warnings"])


def test_below_a_largest_candidate_that_misses_only_what_grows_with_the_pools(tmp_path: Path) -> None:
    # The largest candidate has the most 1-GPU nodes, and Kueue puts 8-GPU jobs there once the
    # 8-GPU pool is full: a miss that a smaller candidate need not have. The search goes below it.
    policy = _two_shapes(tmp_path)
    trace = tmp_path / "trace.csv"
    trace.write_text("team,name,at,duration,replicas,gpus\n" + "".join(f"a,j{i},{i * 300},1800,1,8\n" for i in range(10)))
    done = run_cli("capacity", str(policy), "--trace", str(trace), "--target", "p95-wait<=2h", "--nodes", "big=1..3",
                   "--workers", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    largest = [p for p in data["candidates"] if p["candidate"].startswith("big=3, small=16")]
    assert largest and not any(p["meets"] for p in largest)
    assert "found below a largest candidate" in data["answer"]["guarantees"]
    nodes = {p["pool"]: p["nodes"] for p in data["answer"]["pools"]}
    assert nodes["small"] < 16 and data["answer"]["costPerHour"] < 8 * 3 + 16
