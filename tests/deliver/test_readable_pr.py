"""A pull request a reviewer can read, and a gate CI can use: the plain sentence for `never`,
people's units, the quota tree as Mermaid, and `diff --exit-code` on a real repository."""

from __future__ import annotations

import json
import re

import pytest

from compiler.deliver.render import render_pull_request
from compiler.deliver.semantic_diff import CompiledSide, diff_sides
from compiler.stages.pipeline import PolicySource, compile_policy
from compiler.stages.quota_diagram import label_text, mermaid, node_id, outline
from kp_testing import mermaid as mermaid_cli
from kp_testing.git_repos import PolicyRepo, invoke

NODE = re.compile(r'^  ([A-Za-z0-9_]+)\["((?:[^"\[\]<>]|<br/>)*)"\]$')
EDGE = re.compile(r"^  ([A-Za-z0-9_]+) (-->|-\.->) ([A-Za-z0-9_]+)$")


def parse_flowchart(source: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """A structural reading of the flowchart: every line is a header, a node or an edge."""
    lines = source.rstrip("\n").split("\n")
    assert lines[0] == "flowchart TD"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    for line in lines[1:]:
        node, edge = NODE.match(line), EDGE.match(line)
        assert node or edge, f"not a node or an edge: {line!r}"
        if node:
            assert node[1] not in nodes, f"duplicate id {node[1]}"
            nodes[node[1]] = node[2]
        else:
            edges.append((edge[1], edge[3]))
    for parent, child in edges:
        assert parent in nodes and child in nodes
    children = [child for _, child in edges]
    assert len(children) == len(set(children)), "a node with two parents is not a tree"
    return nodes, edges


def _mermaid_blocks(markdown: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", markdown, flags=re.S)


def _side(label: str, folder) -> CompiledSide:
    result = compile_policy(PolicySource.from_directory(folder))
    return CompiledSide(label, result.reports, result.files)


def _lower_beta(repo: PolicyRepo) -> None:
    repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
    repo.edit_team("beta", "    - {name: notebook,", "    - {name: giant, replicas: 40, gpus: 8}\n    - {name: notebook,")


def test_report_md_draws_the_quota_tree(policy_repo: PolicyRepo) -> None:
    result = compile_policy(PolicySource.from_directory(policy_repo.work / "policies"))
    report_md = result.clusters["gpu-east"].files["REPORT.md"]
    (block,) = _mermaid_blocks(report_md)
    nodes, edges = parse_flowchart(block)
    assert nodes[node_id("t", "alpha")].startswith("team alpha<br/>h100-ondemand: 32 GPUs guaranteed, burst 16")
    assert (node_id("c", "nlp"), node_id("t", "alpha")) in edges
    assert (node_id("c", "research"), node_id("c", "nlp")) in edges
    assert "shared on h100-ondemand: 24 GPUs" in nodes[node_id("c", "gpu-east")]
    assert mermaid(result.reports["gpu-east"]) == block   # deterministic


def test_the_simulate_page_outline_is_the_mermaid_tree(policy_repo: PolicyRepo) -> None:
    """`simulate --html` draws `outline`; every node and line of it is a node and label of the
    Mermaid tree, and its depths follow the Mermaid edges, so the two pictures cannot drift."""
    result = compile_policy(PolicySource.from_directory(policy_repo.work / "policies"))
    flat = {"cluster": "lab", "cohorts": [{"name": "ml", "parent": None}, {"name": "cv", "parent": "ml"}],
            "teams": [{"name": "solo", "flavors": []},
                      {"name": "eye", "cohort": "cv", "flavors": [
                          {"flavor": "a100", "resource": "nvidia.com/gpu", "guaranteed": 2, "burst": None}]}],
            "pools": [{"name": "a100", "shared": 4}]}
    for report in (result.reports["gpu-east"], flat):
        _assert_outline_matches(report)
    alpha = next(n for n in outline(result.reports["gpu-east"]) if n["name"] == "alpha")
    assert "h100-ondemand: 32 GPUs guaranteed, burst 16" in alpha["lines"]
    assert [(n["kind"], n["name"], n["depth"]) for n in outline(flat)] == [
        ("cluster", "lab", 0), ("team", "solo", 1), ("cohort", "ml", 0), ("cohort", "cv", 1), ("team", "eye", 2)]


def _assert_outline_matches(report: dict) -> None:
    nodes, edges = parse_flowchart(mermaid(report))
    tree = outline(report)
    prefix = {"cohort": "c", "team": "t", "cluster": "k"}
    assert len(tree) == len(nodes)
    parents = {child: parent for parent, child in edges}
    stack: list[str] = []
    for node in tree:
        ident = node_id(prefix[node["kind"]], node["name"])
        label = nodes[ident].split("<br/>")
        assert label[0].startswith(f"{node['kind']} {node['name']}")
        assert label[1:] == [label_text(line) for line in node["lines"]]
        del stack[node["depth"]:]
        if stack:
            assert parents[ident] == stack[-1]
        else:
            assert ident not in parents
        stack.append(ident)


def test_ids_and_labels_are_safe_for_any_name() -> None:
    names = ["end", "a-b", "0123", "no", "graph", "x" * 63]
    report = {"cluster": "end", "rootCohort": "end",
              "cohorts": [{"name": n, "parent": "end"} for n in names[1:]],
              "teams": [{"name": n, "cohort": names[(i + 1) % len(names)],
                         "flavors": [{"flavor": "f-1", "resource": "nvidia.com/gpu", "guaranteed": 1, "burst": None}]}
                        for i, n in enumerate(names)],
              "pools": [{"name": "p", "shared": 3}]}
    nodes, edges = parse_flowchart(mermaid(report))
    assert len(nodes) == 2 * len(names) and all(re.fullmatch(r"[ct]_[A-Za-z0-9_]+", i) for i in nodes)
    assert node_id("c", "a-b") != node_id("c", "a_b") and node_id("c", "end") != "end"
    assert label_text('say "hi" <b>|#[x]{y}`') == "say #quot;hi#quot; #lt;b#gt;#124;#35;#91;x#93;#123;y#125;#96;"


def test_pr_body_leads_with_the_binding_limit_and_folds_kueue_s_message(policy_repo: PolicyRepo) -> None:
    before = _side("main", policy_repo.work / "policies")
    _lower_beta(policy_repo)
    after = _side("working tree", policy_repo.work / "policies")
    diff = diff_sides(before, after)
    text = render_pull_request(diff, scope="all", branch="kueue-policy/all", base_branch="main",
                               head_sha="0" * 40, gitops_tools="Argo CD", reports=after.reports)
    row = next(line for line in text.body.splitlines() if "`giant`" in line and "never" in line)
    lead, _, folded = row.partition("<details><summary>Kueue's message</summary>")
    assert "needs 320 GPUs at once; beta can reach" in lead
    assert "insufficient quota for nvidia.com/gpu" in folded and folded.rstrip(" |").endswith("</details>")
    assert "GPUs)" in folded and " TiB)" in folded
    assert not re.search(r"\(\d+m\)|\(\d+Mi\)|\(\d+Ti\)", row)
    # Nowhere a person reads the PR: Kueue's raw millicores and mebibytes (they are in report.json).
    assert "246888m" not in text.body and "2022284Mi" not in text.body and "246888m" not in text.comment
    assert "- ⚠️ Workload beta/giant gets worse: undeclared -> never: needs 320 GPUs at once" in text.body
    (block,) = _mermaid_blocks(text.body)
    nodes, _ = parse_flowchart(block)
    teams = {label.split("<br/>")[0] for label in nodes.values() if label.startswith("team ")}
    assert teams == {"team beta"}                   # the part of the tree the change touches
    assert "<details>" in text.comment or "giant" in text.comment


def test_diff_exit_code_fails_on_a_worse_change_only(policy_repo: PolicyRepo) -> None:
    policy_repo.edit_team("beta", "guaranteed: 16", "guaranteed: 24")
    policy_repo.commit_all("beta grows")
    code, out, err = invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", "--exit-code", subprocess_run=True)
    assert code == 0, err
    policy_repo.edit_team("beta", "guaranteed: 24", "guaranteed: 8")
    policy_repo.commit_all("beta shrinks")
    code, out, err = invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", "--exit-code", subprocess_run=True)
    assert code == 1
    assert "error[KP821]: gpu-east/beta: guaranteed nvidia.com/gpu goes down from 24 to 8" in err
    assert out.startswith("**Plan:**")                      # the diff itself is still printed
    code, out, err = invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", "--exit-code", "--format", "json",
                            subprocess_run=True)
    payload = json.loads(out)
    assert code == 1 and payload["ok"] is False and payload["diagnostics"][0]["code"] == "KP821"
    assert invoke(policy_repo.work, "diff", "HEAD~1", "HEAD", subprocess_run=True)[0] == 0   # no gate asked


def test_diff_exit_code_on_a_verdict_that_gets_worse(policy_repo: PolicyRepo) -> None:
    policy_repo.edit_team("beta", "    - {name: notebook,", "    - {name: wide, replicas: 2, gpus: 8}\n    - {name: notebook,")
    policy_repo.commit_all("beta declares wide")
    policy_repo.edit_team("beta", "guaranteed: 16", "guaranteed: 8")
    code, out, err = invoke(policy_repo.work, "diff", "--exit-code", "--format", "text", subprocess_run=True)
    assert code == 1
    assert re.search(r"gpu-east/beta/wide: guaranteed -> (borrowing|never)", err), err


@pytest.mark.skipif(mermaid_cli.missing() is not None, reason=str(mermaid_cli.missing()))
def test_mermaid_cli_renders_the_tree(policy_repo: PolicyRepo, tmp_path) -> None:
    result = compile_policy(PolicySource.from_directory(policy_repo.work / "policies"))
    done = mermaid_cli.render(mermaid(result.reports["gpu-east"]), tmp_path, "tree")
    assert done.returncode == 0, done.stderr
    svg = (tmp_path / "tree.svg").read_text()
    # The drawing holds every team and cohort as text, not an error diagram.
    assert "Syntax error" not in svg
    for name in ("alpha", "beta", "nlp", "research", "gpu-east"):
        assert name in svg
