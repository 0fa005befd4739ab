"""`import` then `compile` gives the cluster back: on hand-written Kueue setups of the shapes the
docs and real installations use, and on the compiled output of every test policy in the repo."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kp_testing import REPO_ROOT, run_cli
from kp_testing.ceiling_policies import ceiling_policy
from kp_testing.live_policies import small_policy
from kp_testing.policies import CLUSTER, TEAM_A, write_policy

from compiler.importer.semantic import differences
from roundtrip_helpers import (FIXTURES, assert_same, compiled, configuration_of, documents, import_then_compile)

SETUPS = sorted(p.name for p in FIXTURES.glob("*.yaml"))


@pytest.mark.parametrize("fixture", SETUPS)
def test_hand_written_setup_round_trips(fixture: str, tmp_path: Path) -> None:
    export = FIXTURES / fixture
    recompiled, configuration, _ = import_then_compile([export], tmp_path)
    original = documents(export)
    assert_same(original, recompiled)
    wanted = configuration_of(original)
    if wanted is not None:
        # Every key of the manager's Configuration is what the compile ships.
        assert configuration is not None
        assert {k: v for k, v in configuration.items() if k in wanted} == wanted


def _policies(tmp: Path) -> dict[str, Path]:
    return {
        "example": REPO_ROOT / "policies",
        "nvl72-topology": REPO_ROOT / "tests" / "compiler" / "topology_policies" / "nvl72",
        "lab": write_policy(tmp / "lab", {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A}),
        "ceiling": ceiling_policy(tmp / "ceiling"),
        "small-device-plugin": small_policy(tmp / "dp"),
        "small-dra-claims": small_policy(tmp / "dra", access="dra-claims"),
        "small-flux-0.14": small_policy(tmp / "old", gitops="flux", kueue="0.14"),
    }


@pytest.mark.parametrize("name", ["example", "nvl72-topology", "lab", "ceiling", "small-device-plugin",
                                  "small-dra-claims", "small-flux-0.14"])
def test_compiled_test_policy_round_trips(name: str, tmp_path: Path) -> None:
    policy = _policies(tmp_path)[name]
    first, _ = compiled(policy, tmp_path / "first")
    (cluster,) = [p for p in (tmp_path / "first").iterdir() if (p / "kueue").is_dir()]
    exports = [cluster / "kueue"]
    patch = cluster / "kueue-config" / "kueue-manager-config.patch.yaml"
    if patch.exists():
        exports.append(patch)
    recompiled, _, _ = import_then_compile(exports, tmp_path)
    assert_same(first, recompiled)


def test_team_names_are_the_queue_names(tmp_path: Path) -> None:
    """`team-a-cq` stays `team-a-cq`: the compiler names a team's ClusterQueue after the team."""
    result = run_cli("import", str(FIXTURES / "flat-cohort.yaml"), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "p" / "teams").iterdir()) == [
        "shared-cq.yaml", "team-a-cq.yaml", "team-b-cq.yaml"]


def test_escape_hatch_compiles_to_the_same_fields(tmp_path: Path) -> None:
    """Admission checks, stop policies, limits and LocalQueue names go through `kueue` and come
    back as the same Kueue fields."""
    recompiled, _, stderr = import_then_compile([FIXTURES / "limits-and-checks.yaml"], tmp_path)
    team = (tmp_path / "imported" / "teams" / "alpha.yaml").read_text()
    assert "admissionChecksStrategy:" in team and "kueue:" in team
    queues = {d["metadata"]["name"]: d for d in recompiled if d["kind"] == "ClusterQueue"}
    assert queues["alpha"]["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["name"] == "dws-prov"
    assert queues["beta"]["spec"]["stopPolicy"] == "Hold"
    gpu = queues["alpha"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
    assert (gpu["borrowingLimit"], gpu["lendingLimit"]) == ("8", "4")
    (drained,) = [d for d in recompiled if d["kind"] == "LocalQueue" and d["metadata"]["namespace"] == "beta"]
    assert drained["spec"]["stopPolicy"] == "HoldAndDrain"
    assert "limits-and-checks.yaml:" in stderr and "KP941" in stderr


def test_a_changed_quota_is_a_difference(tmp_path: Path) -> None:
    """Positive control of the comparison: tampering with the imported quota is found, by path."""
    export = FIXTURES / "spot-on-demand.yaml"
    assert run_cli("import", str(export), "--out", str(tmp_path / "p")).returncode == 0
    team = tmp_path / "p" / "teams" / "training.yaml"
    team.write_text(team.read_text().replace("nominalQuota: '16'", "nominalQuota: '17'"))
    recompiled, _ = compiled(tmp_path / "p", tmp_path / "out")
    found = differences(documents(export), recompiled)
    assert [(d.kind, d.name, d.path) for d in found] == [
        ("ClusterQueue", "training", "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota")]


def test_quantities_compare_as_quantities() -> None:
    base = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"}}

    def cohort(memory: str) -> dict:
        return {**base, "spec": {"resourceGroups": [{"coveredResources": ["memory"], "flavors": [
            {"name": "f", "resources": [{"name": "memory", "nominalQuota": memory}]}]}]}}

    assert not differences([cohort("1Gi")], [cohort("1024Mi")])
    assert not differences([cohort("1073741824")], [cohort("1Gi")])
    assert differences([cohort("1Gi")], [cohort("1000Mi")])


def test_flavor_order_is_a_difference() -> None:
    """Kueue tries flavors in order: swapping two is a change, not key order."""
    def queue(order: list[str]) -> dict:
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
                "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": f, "resources": [{"name": "cpu", "nominalQuota": "1"}]} for f in order]}]}}

    assert differences([queue(["a", "b"])], [queue(["b", "a"])])


def test_import_is_deterministic(tmp_path: Path) -> None:
    export = FIXTURES / "hierarchical-fair-sharing.yaml"
    for name in ("one", "two"):
        assert run_cli("import", str(export), "--out", str(tmp_path / name)).returncode == 0
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert files and all((tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes() for f in files)
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file())
    shutil.rmtree(tmp_path / "two")


def test_pool_size_comes_from_the_nodes(tmp_path: Path) -> None:
    """With Nodes in the export, a pool is as many nodes as its flavor selects, each with their
    GPUs; without, the size is guessed and said so (KP943)."""
    import yaml

    with_nodes = run_cli("import", str(FIXTURES / "kueue-0.14-v1beta1.yaml"), "--out", str(tmp_path / "n"))
    assert with_nodes.returncode == 0 and "note[KP943]" not in with_nodes.stderr, with_nodes.stderr
    (pool,) = yaml.safe_load((tmp_path / "n" / "cluster.yaml").read_text())["spec"]["pools"]
    assert (pool["gpu"], pool["nodes"], pool["gpusPerNode"]) == ("NVIDIA-A100-SXM4-80GB", 2, 8)
    without = run_cli("import", str(FIXTURES / "flat-cohort.yaml"), "--out", str(tmp_path / "g"))
    assert "note[KP943]: ResourceFlavor default-flavor: no Nodes" in without.stderr


def test_configuration_differences_are_found() -> None:
    """Positive control of the Configuration comparison import runs before writing."""
    from compiler.importer.roundtrip import configuration_differences

    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
              "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}}
    assert configuration_differences(config, dict(config)) == []
    changed = configuration_differences(config, {**config, "fairSharing": {"preemptionStrategies": []}})
    assert [d.path for d in changed] == ["fairSharing.preemptionStrategies"]
    assert [d.path for d in configuration_differences(config, {**config, "extra": 1})] == ["extra"]
