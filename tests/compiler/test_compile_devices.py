"""The device side of a compile: DRA objects by gpuAccess, Kueue's deviceClassMappings, MIG plans."""

from __future__ import annotations

import json
import subprocess

from ruamel.yaml import YAML

from kp_testing.policies import CLUSTER, snapshot, team, write_policy
from kp_testing import run_cli

yaml = YAML(typ="safe", pure=True)
MIG_CLUSTER = CLUSTER.replace(
    "    - {name: spot,", "    - {name: mig, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, mig: planned}\n    - {name: spot,")
TEAM = team("a", "namespaces: [a]\ngpus: {guaranteed: 8}\nmig: {3g.40gb: 2}\n"
                 "workloads:\n  - {name: serve, replicas: 2, mig: 3g.40gb}")


def compile_ok(tmp_path, cluster: str, *teams: str):
    files = {"cluster.yaml": cluster}
    files.update({f"t{i}.yaml": text for i, text in enumerate(teams)})
    policies = write_policy(tmp_path, files)
    out = tmp_path / "out"
    result = run_cli("compile", str(policies), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out / "lab"


def test_dra_claims_emits_classes_claims_and_the_kueue_mapping(tmp_path):
    folder = compile_ok(tmp_path, MIG_CLUSTER.replace('kueueVersion: "0.19"', 'kueueVersion: "0.19"\n  gpuAccess: dra-claims'), TEAM)
    classes = sorted(p.name for p in (folder / "dra" / "deviceclasses").iterdir())
    # 3g.40gb for the team's guarantee; the spare GPUs' all-balanced layout adds 1g.10gb and 2g.20gb.
    assert classes == ["h100-80gb-1g-10gb.mig.kueue-policy.io.yaml", "h100-80gb-2g-20gb.mig.kueue-policy.io.yaml",
                       "h100-80gb-3g-40gb.mig.kueue-policy.io.yaml", "h100-80gb.gpu.kueue-policy.io.yaml"]
    template = yaml.load((folder / "dra" / "resourceclaimtemplates" / "a.h100-80gb-3g-40gb.yaml").read_text())
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request == {"deviceClassName": "h100-80gb-3g-40gb.mig.kueue-policy.io", "allocationMode": "ExactCount", "count": 1}
    patch = yaml.load((folder / "kueue-config" / "kueue-manager-config.patch.yaml").read_text())
    configuration = yaml.load(patch["data"]["controller_manager_config.yaml"])
    assert configuration["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["h100-80gb.gpu.kueue-policy.io"]},
        {"name": "nvidia.com/mig-1g.10gb", "deviceClassNames": ["h100-80gb-1g-10gb.mig.kueue-policy.io"]},
        {"name": "nvidia.com/mig-2g.20gb", "deviceClassNames": ["h100-80gb-2g-20gb.mig.kueue-policy.io"]},
        {"name": "nvidia.com/mig-3g.40gb", "deviceClassNames": ["h100-80gb-3g-40gb.mig.kueue-policy.io"]}]
    restart = yaml.load((folder / "kueue-config" / "kueue-controller-manager.patch.yaml").read_text())
    assert restart["spec"]["template"]["metadata"]["annotations"]["kueue-policy.io/manager-config-checksum"].startswith("sha256:")
    # The patches are for the Kueue installation, not resources of this cluster's kustomization.
    kustomization = yaml.load((folder / "kustomization.yaml").read_text())
    assert not any(r.startswith("kueue-config/") for r in kustomization["resources"])
    assert "dra/deviceclasses/h100-80gb.gpu.kueue-policy.io.yaml" in kustomization["resources"]
    built = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    # Quota names stay the ones people know, in every gpuAccess mode.
    cq = yaml.load((folder / "kueue" / "clusterqueues" / "a.yaml").read_text())
    assert "nvidia.com/mig-3g.40gb" in cq["spec"]["resourceGroups"][0]["coveredResources"]


def test_device_plugin_emits_no_dra_objects(tmp_path):
    folder = compile_ok(tmp_path, MIG_CLUSTER, TEAM)
    assert not (folder / "dra").exists()
    assert not (folder / "kueue-config").exists()  # no fair sharing, no mappings: Kueue's config untouched


def test_dra_needs_kubernetes_1_34(tmp_path):
    cluster = MIG_CLUSTER.replace('kubernetesVersion: "1.34"', 'kubernetesVersion: "1.33"').replace(
        'kueueVersion: "0.19"', 'kueueVersion: "0.19"\n  gpuAccess: dra-claims')
    policies = write_policy(tmp_path, {"cluster.yaml": cluster, "a.yaml": TEAM})
    result = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "cluster.yaml:8:14: error[KP706]" in result.stderr and "1.34" in result.stderr
    assert snapshot(tmp_path / "out") == {}


def test_extended_resource_needs_1_36_or_the_gate(tmp_path):
    cluster = MIG_CLUSTER.replace('kueueVersion: "0.19"', 'kueueVersion: "0.19"\n  gpuAccess: dra-extended-resource')
    policies = write_policy(tmp_path, {"cluster.yaml": cluster, "a.yaml": TEAM})
    refused = run_cli("validate", str(policies))
    assert refused.returncode == 1 and "DRAExtendedResource" in refused.stderr
    (policies / "cluster.yaml").write_text(cluster + "  featureGates: {DRAExtendedResource: true}\n")
    assert run_cli("validate", str(policies)).returncode == 0
    (policies / "cluster.yaml").write_text(cluster.replace('"1.34"', '"1.36"'))
    out = tmp_path / "out"
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    gpu_class = yaml.load((out / "lab" / "dra" / "deviceclasses" / "gpu.extended.kueue-policy.io.yaml").read_text())
    assert gpu_class["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    assert not (out / "lab" / "dra" / "resourceclaimtemplates").exists()


def test_planned_mig_pool_gets_a_layout_that_covers_the_guarantees(tmp_path):
    folder = compile_ok(tmp_path, MIG_CLUSTER, TEAM, team("b", "namespaces: [b]\nmig: {1g.10gb: 7}"))
    report = json.loads((folder / "report.json").read_text())
    plan = report["migPlan"][0]
    assert plan["pool"] == "mig" and plan["plannedGpus"] == 2 and plan["lowerBound"] == 2
    instances = {}
    for layout in plan["layouts"]:
        for profile, count in layout["profiles"].items():
            instances[profile] = instances.get(profile, 0) + count * layout["count"]
    assert instances["3g.40gb"] >= 2 and instances["1g.10gb"] >= 7
    assert sum(layout["count"] for layout in plan["layouts"]) == 8  # every GPU of the pool is cut
    assert sum(group["nodes"] for group in plan["nodeGroups"]) == 1
    configmap = yaml.load((folder / "mig" / "mig-parted-config.yaml").read_text())
    config = yaml.load(configmap["data"]["config.yaml"])
    assert plan["nodeGroups"][0]["config"] in config["mig-configs"]
    # Quota in MIG units flows into the ClusterQueues.
    cq = yaml.load((folder / "kueue" / "clusterqueues" / "b.yaml").read_text())
    mig_flavor = next(f for f in cq["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "mig")
    assert {"name": "nvidia.com/mig-1g.10gb", "nominalQuota": "7"} in mig_flavor["resources"]


def test_mig_demand_bigger_than_the_pool_is_refused(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": MIG_CLUSTER,
                                       "a.yaml": team("a", "namespaces: [a]\nmig: {3g.40gb: 17}")})
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    assert "error[KP705]" in result.stderr and "need 9 H100-80GB GPUs but the pool has 8" in result.stderr


def test_fixed_layout_that_cannot_be_placed_is_refused(tmp_path):
    cluster = CLUSTER.replace(
        "    - {name: spot,", "    - name: fixed\n      gpu: H100-80GB\n      nodes: 1\n      gpusPerNode: 8\n"
                             "      mig: {layout: {1g.10gb+me: 2}}\n    - {name: spot,")
    policies = write_policy(tmp_path, {"cluster.yaml": cluster, "a.yaml": team("a", "namespaces: [a]")})
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    assert "cluster.yaml:15:12: error[KP704]" in result.stderr, result.stderr


def test_gpu_memory_maps_to_the_smallest_profile_that_really_holds_it(tmp_path):
    # 1g.10gb holds under 10 GiB, so 12 GiB needs a 20gb-class instance: 1g.20gb (fewest slices).
    body = ("namespaces: [a]\nmig: {1g.20gb: 2}\n"
            "workloads:\n  - {name: small, replicas: 2, gpuMemory: 12Gi}\n  - {name: tiny, replicas: 1, gpuMemory: 8Gi}")
    folder = compile_ok(tmp_path, MIG_CLUSTER, team("a", body))
    report = json.loads((folder / "report.json").read_text())
    verdicts = {w["name"]: w for w in report["workloads"]}
    assert verdicts["small"]["verdict"] == "guaranteed" and verdicts["small"]["flavor"] == "mig"
    policies = write_policy(tmp_path / "big", {"cluster.yaml": MIG_CLUSTER, "a.yaml": team(
        "a", "namespaces: [a]\nworkloads:\n  - {name: huge, gpuMemory: 100Gi}")})
    result = run_cli("validate", str(policies))
    assert result.returncode == 1
    assert "a.yaml:9:" in result.stderr and "error[KP307]" in result.stderr and "100 GiB" in result.stderr


def test_gpu_memory_choice_uses_real_memory_not_the_name(tmp_path):
    from compiler.mig.catalogue import load_catalogue
    catalogue = load_catalogue()
    chosen = catalogue.smallest_profile_for_memory("H100-80GB", 12)
    assert chosen.name == "1g.20gb"
    # 10 GiB is more than a "1g.10gb" really has.
    assert catalogue.smallest_profile_for_memory("H100-80GB", 10).name != "1g.10gb"


def _slices_made(folder) -> set[str]:
    """Every MIG profile the emitted mig-parted config cuts some GPU into."""
    configmap = yaml.load((folder / "mig" / "mig-parted-config.yaml").read_text())
    config = yaml.load(configmap["data"]["config.yaml"])
    return {profile for layouts in config["mig-configs"].values() for layout in layouts
            for profile in (layout.get("mig-devices") or {})}


def test_every_slice_a_planned_layout_creates_can_be_claimed(tmp_path):
    """A planned pool fills its spare GPUs with all-balanced (2g.20gb on an H100-80GB) although
    no team declares that profile: each slice it cuts needs a DeviceClass, a deviceClassMappings
    entry, quota and a claim template in every namespace of the pool's teams, or it idles."""
    a40 = MIG_CLUSTER.replace("gpu: H100-80GB, nodes: 1, gpusPerNode: 8, mig: planned",
                              "gpu: A100-40GB, nodes: 1, gpusPerNode: 8, mig: planned")
    for cluster, model in ((MIG_CLUSTER, "h100-80gb"), (a40, "a100-40gb")):
        profile = "3g.40gb" if model == "h100-80gb" else "3g.20gb"
        team_a = team("a", f"namespaces: [a, a-eval]\ngpus: {{guaranteed: 8}}\nmig: {{{profile}: 2}}")
        folder = compile_ok(tmp_path / model, cluster.replace('kueueVersion: "0.19"',
                                                              'kueueVersion: "0.19"\n  gpuAccess: dra-claims'), team_a)
        made = _slices_made(folder)
        assert {"2g.10gb" if model == "a100-40gb" else "2g.20gb", profile} <= made  # all-balanced's 2g slice
        patch = yaml.load((folder / "kueue-config" / "kueue-manager-config.patch.yaml").read_text())
        mappings = {m["name"]: m["deviceClassNames"] for m in
                    yaml.load(patch["data"]["controller_manager_config.yaml"])["resources"]["deviceClassMappings"]}
        cq = yaml.load((folder / "kueue" / "clusterqueues" / "a.yaml").read_text())
        covered = set(cq["spec"]["resourceGroups"][0]["coveredResources"])
        for slice_profile in sorted(made):
            resource = f"nvidia.com/mig-{slice_profile}"
            class_name = f"{model}-{slice_profile.replace('.', '-')}.mig.kueue-policy.io"
            assert (folder / "dra" / "deviceclasses" / f"{class_name}.yaml").is_file(), class_name
            assert mappings.get(resource) == [class_name]
            assert resource in covered
            for namespace in ("a", "a-eval"):
                template = folder / "dra" / "resourceclaimtemplates" / f"{namespace}.{class_name.split('.')[0]}.yaml"
                assert template.is_file(), template
