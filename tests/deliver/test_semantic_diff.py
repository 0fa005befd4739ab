"""The report-to-report diff and its three renderings, on hand-written report.json data."""

from __future__ import annotations

import copy
import json

from compiler.deliver.render import comment_marker, render_comment, render_diff, render_pull_request
from compiler.deliver.semantic_diff import CompiledSide, diff_sides


def _report() -> dict:
    return {
        "cluster": "gpu-east", "kubernetesVersion": "1.34", "kueueVersion": "0.19",
        "gpuAccess": "device-plugin", "gitops": "argocd",
        "pools": [{"name": "h100", "gpu": "H100-80GB", "capacity": "on-demand", "gpus": 64, "guaranteed": 40, "mig": None},
                  {"name": "h100-spot", "gpu": "H100-80GB", "capacity": "spot", "gpus": 32, "guaranteed": 0, "mig": None}],
        "cohorts": [{"name": "research", "parent": None, "weight": None}],
        "priorities": [{"name": "standard", "value": 100, "default": True}],
        "teams": [
            {"name": "alpha", "cohort": "research", "namespaces": ["alpha-train", "alpha-eval"], "priority": "standard",
             "weight": 1, "capacity": "on-demand-first", "policyFile": "policies/alpha.yaml",
             "flavors": [{"flavor": "h100", "resource": "nvidia.com/gpu", "guaranteed": 16, "burst": 8, "lend": None},
                         {"flavor": "h100-spot", "resource": "nvidia.com/gpu", "guaranteed": 0, "burst": None, "lend": None}]},
            {"name": "beta", "cohort": "research", "namespaces": ["beta"], "priority": "standard", "weight": 1,
             "capacity": "on-demand-first", "policyFile": "policies/beta.yaml",
             "flavors": [{"flavor": "h100", "resource": "nvidia.com/gpu", "guaranteed": 24, "burst": None, "lend": 8}]},
        ],
        "workloads": [
            {"team": "alpha", "name": "finetune", "verdict": "guaranteed", "reason": "fits nominal quota"},
            {"team": "alpha", "name": "pretrain", "verdict": "borrowing", "reason": "needs 24 > 16 nominal"},
            {"team": "beta", "name": "eval", "verdict": "guaranteed", "reason": ""},
        ],
        "migPlan": None,
    }


def _side(label: str, report: dict, files: dict[str, str] | None = None) -> CompiledSide:
    return CompiledSide(label, {"gpu-east": report}, files or {"gpu-east/kueue/clusterqueues/alpha.yaml": "a"})


def test_identical_sides_have_no_changes() -> None:
    diff = diff_sides(_side("HEAD", _report()), _side("working tree", _report()))
    assert not diff.has_changes
    assert diff.to_dict()["clusters"] == []
    assert render_diff(diff, "markdown").startswith("**No changes.**")
    assert render_diff(diff, "text").startswith("No changes")


def test_team_quota_flavor_order_namespaces_and_verdicts() -> None:
    before = _report()
    after = copy.deepcopy(before)
    alpha = after["teams"][0]
    alpha["flavors"] = [
        {"flavor": "h100-spot", "resource": "nvidia.com/gpu", "guaranteed": 0, "burst": None, "lend": None},
        {"flavor": "h100", "resource": "nvidia.com/gpu", "guaranteed": 24, "burst": 8, "lend": 4},
    ]
    alpha["namespaces"] = ["alpha-train", "alpha-serve"]
    after["workloads"][1] = {"team": "alpha", "name": "pretrain", "verdict": "guaranteed", "reason": "fits"}
    after["workloads"][2] = {"team": "beta", "name": "eval", "verdict": "never", "reason": "ExceedsMaxQuota"}
    after["teams"].append({"name": "gamma", "cohort": None, "namespaces": ["gamma"], "priority": "standard",
                           "weight": 1, "capacity": "spot-only", "policyFile": "policies/gamma.yaml", "flavors": []})
    after["priorities"].append({"name": "critical", "value": 1000, "default": False})
    after["pools"][0]["guaranteed"] = 48
    diff = diff_sides(_side("main", before), _side("HEAD", after, {"gpu-east/kueue/clusterqueues/alpha.yaml": "b"}))

    assert diff.summary.teams_added == 1 and diff.summary.teams_changed == 2
    assert diff.summary.verdicts_changed == 2 and diff.summary.verdicts_regressed == 1
    assert diff.summary.files_changed == 1
    cluster = diff.clusters[0]
    teams = {t.name: t for t in cluster.teams}
    alpha_diff = teams["alpha"]
    assert [(q.flavor, q.before["guaranteed"], q.after["guaranteed"], q.after["lend"]) for q in alpha_diff.quotas] == \
        [("h100", 16, 24, 4)]
    assert alpha_diff.flavor_order.before == ["h100", "h100-spot"]
    assert alpha_diff.flavor_order.after == ["h100-spot", "h100"]
    assert alpha_diff.namespaces_added == ["alpha-serve"] and alpha_diff.namespaces_removed == ["alpha-eval"]
    assert [(w.name, w.before, w.after) for w in alpha_diff.workloads] == [("pretrain", "borrowing", "guaranteed")]
    assert [(w.name, w.before, w.after, w.regressed) for w in teams["beta"].workloads] == [("eval", "guaranteed", "never", True)]
    assert teams["gamma"].status == "added"
    assert [p.name for p in cluster.priorities] == ["critical"]
    assert [(p.name, p.fields[0].field) for p in cluster.pools] == [("h100", "guaranteed")]
    warnings = "\n".join(cluster.warnings)
    assert "alpha-eval" in warnings and "flavor order" in warnings and "beta/eval gets worse" in warnings

    markdown = render_diff(diff, "markdown")
    assert markdown.startswith("**Plan:** 1 team(s) to add, 2 to change, 0 to remove")
    assert "<details><summary>~ team <b>alpha</b>" in markdown
    assert "| `h100` | `nvidia.com/gpu` | 16 → **24** | 8 | all → **4** |" in markdown
    assert "h100 > h100-spot → **h100-spot > h100**" in markdown
    assert "guaranteed → **never** ⚠️" in markdown
    assert "+ team <b>gamma</b> (added)" in markdown
    text = render_diff(diff, "text")
    assert "workload eval: guaranteed -> never (ExceedsMaxQuota)" in text
    payload = json.loads(render_diff(diff, "json"))
    assert payload["summary"]["teams_added"] == 1
    assert payload["clusters"][0]["teams"][0]["name"] == "alpha"
    assert render_diff(diff, "json") == render_diff(diff_sides(_side("main", before), _side(
        "HEAD", after, {"gpu-east/kueue/clusterqueues/alpha.yaml": "b"})), "json")


def test_device_class_mappings_change_warns_about_kueue_restart_and_mig_plan() -> None:
    before, after = _report(), _report()
    after["gpuAccess"] = "dra-claims"
    after["migPlan"] = {"h100-mig": {"layout": {"3g.40gb": 2}}}
    before["migPlan"] = {"h100-mig": {"layout": {"1g.10gb": 7}}}
    diff = diff_sides(
        _side("a", before, {"gpu-east/config/kueue-manager-config.yaml": "x: 1\n", "gpu-east/report.json": "{}"}),
        _side("b", after, {"gpu-east/config/kueue-manager-config.yaml": "deviceClassMappings:\n- name: gpu\n",
                           "gpu-east/report.json": '{"deviceClassMappings": 1}'}))
    warnings = "\n".join(diff.clusters[0].warnings)
    assert "restart the kueue-controller-manager" in warnings and warnings.count("deviceClassMappings change") == 1
    assert "kueue-manager-config.yaml" in warnings and "report.json" not in warnings and "gpuAccess changes" in warnings and "MIG plan changes" in warnings
    assert diff.clusters[0].mig_plan.after == {"h100-mig": {"layout": {"3g.40gb": 2}}}


def test_added_and_removed_clusters() -> None:
    diff = diff_sides(CompiledSide("empty", {}, {}), _side("HEAD", _report()))
    assert diff.clusters[0].status == "added" and diff.summary.teams_added == 2
    gone = diff_sides(_side("HEAD", _report()), CompiledSide("empty", {}, {}))
    assert gone.clusters[0].status == "removed" and gone.summary.teams_removed == 2
    assert "Team alpha is removed" in "\n".join(gone.clusters[0].warnings)


def test_pull_request_text_has_markers_capacity_and_admissibility() -> None:
    after = _report()
    after["teams"][0]["flavors"][0]["guaranteed"] = 20
    after["pools"][0]["guaranteed"] = 44
    diff = diff_sides(_side("main:out", _report()), _side("kueue-policy/all:out", after))
    text = render_pull_request(diff, scope="all", branch="kueue-policy/all", base_branch="main",
                               head_sha="0123456789abcdef", gitops_tools="Argo CD")
    assert text.body.startswith("<!-- kueue-policy:pr scope=all -->")
    assert text.comment.startswith(comment_marker("all"))
    assert "| `gpu-east` | `h100` | 64 | 40 → **44** |" in text.body
    assert "| `gpu-east` | alpha | `finetune` | guaranteed |" in text.body
    assert "Argo CD will sync it" in text.body
    assert "1 changed" in text.title
    assert render_comment(diff, scope="all", head_sha="0123456789abcdef").startswith(comment_marker("all"))


def test_long_text_is_cut_without_breaking_markdown() -> None:
    from compiler.deliver.render import fit_for_forge

    text = "head\n<details><summary>x</summary>\n\n```diff\n" + "+ out/file.yaml\n" * 10_000 + "```\n</details>\n"
    cut = fit_for_forge(text, limit=5_000)
    assert len(cut) < 5_400 and cut.startswith("head\n")
    assert cut.count("```") % 2 == 0 and cut.count("<details>") == cut.count("</details>")
    assert "Truncated" in cut
    assert fit_for_forge("short") == "short"


def test_a_thousand_team_change_fits_in_one_pull_request_body() -> None:
    before, after = _report(), _report()
    for index in range(1000):
        team = copy.deepcopy(before["teams"][1])
        team["name"] = f"team-{index:04d}"
        before["teams"].append(team)
        changed = copy.deepcopy(team)
        changed["flavors"][0]["guaranteed"] = 1
        after["teams"].append(changed)
        after["workloads"].append({"team": team["name"], "name": "w", "verdict": "never", "reason": "too big"})
    diff = diff_sides(_side("main", before), _side("HEAD", after))
    assert diff.summary.teams_changed == 1000
    text = render_pull_request(diff, scope="all", branch="b", base_branch="main", head_sha="0" * 40,
                               gitops_tools="Argo CD")
    assert len(text.body) <= 61_000 and len(text.comment) <= 61_000
    assert text.body.count("<details>") == text.body.count("</details>")


def test_gitops_wiring_outside_cluster_folders_is_listed() -> None:
    before = CompiledSide("a", {"gpu-east": _report()}, {"gpu-east/x.yaml": "1"})
    after = CompiledSide("b", {"gpu-east": _report()}, {"gpu-east/x.yaml": "1",
                                                        "argocd/gpu-east.application.yaml": "app"})
    diff = diff_sides(before, after)
    assert diff.has_changes and diff.other_files.added == ["argocd/gpu-east.application.yaml"]
    assert "+ out/argocd/gpu-east.application.yaml" in render_diff(diff, "markdown")
    assert json.loads(render_diff(diff, "json"))["otherFiles"]["added"] == ["argocd/gpu-east.application.yaml"]


from hypothesis import given, settings, strategies as st  # noqa: E402

_names = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"])
_quota = st.fixed_dictionaries({"guaranteed": st.integers(0, 64), "burst": st.none() | st.integers(0, 64),
                                "lend": st.none() | st.integers(0, 64)})
_team = st.builds(
    lambda name, flavors, namespaces, verdicts: (
        {"name": name, "cohort": "research", "namespaces": sorted(namespaces), "priority": "standard",
         "weight": 1, "capacity": "on-demand-first", "policyFile": f"policies/{name}.yaml",
         "flavors": [{"flavor": f, "resource": "nvidia.com/gpu", **q} for f, q in flavors]},
        [{"team": name, "name": w, "verdict": v, "reason": ""} for w, v in verdicts.items()]),
    _names,
    st.lists(st.tuples(st.sampled_from(["h100", "h100-spot", "l40s"]), _quota), max_size=3,
             unique_by=lambda item: item[0]),
    st.sets(st.sampled_from(["ns-a", "ns-b", "ns-c"]), max_size=3),
    st.dictionaries(st.sampled_from(["train", "eval"]), st.sampled_from(["guaranteed", "borrowing", "never"])),
)
_reports = st.lists(_team, max_size=4, unique_by=lambda t: t[0]["name"]).map(
    lambda teams: {**_report(), "teams": [t for t, _ in teams], "workloads": [w for _, ws in teams for w in ws]})


@settings(max_examples=60, deadline=None)
@given(_reports, _reports)
def test_diff_properties(one: dict, two: dict) -> None:
    assert not diff_sides(_side("a", one), _side("b", one)).has_changes
    forward = diff_sides(_side("a", one), _side("b", two))
    backward = diff_sides(_side("b", two), _side("a", one))
    assert forward.summary.teams_added == backward.summary.teams_removed
    assert forward.summary.teams_changed == backward.summary.teams_changed
    assert forward.summary.verdicts_changed == backward.summary.verdicts_changed
    teams_one = {t["name"] for t in one["teams"]}
    teams_two = {t["name"] for t in two["teams"]}
    assert forward.summary.teams_added == len(teams_two - teams_one)
    for team in (forward.clusters[0].teams if forward.clusters else []):
        for quota in team.quotas:
            assert quota.before != quota.after
    # every rendering works and is deterministic
    for output_format in ("markdown", "json", "text"):
        assert render_diff(forward, output_format) == render_diff(diff_sides(_side("a", one), _side("b", two)),
                                                                  output_format)
