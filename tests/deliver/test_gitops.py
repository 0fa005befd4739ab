"""GitOps wiring: the objects parse with kustomize, the Lua health check runs in a real Lua, the
Flux health expressions run in a real CEL engine, CODEOWNERS is well-formed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import cel
import lupa
import pytest
import yaml

from compiler.stages.gitops_wiring import (
    ARGOCD_APPLICATION_HEALTH_LUA,
    ARGOCD_CLUSTERQUEUE_HEALTH_LUA,
    GitopsCluster,
    codeowners,
    gitops_files,
)

EAST = GitopsCluster("gpu-east", "argocd", "out/gpu-east")
WEST = GitopsCluster("gpu-west", "argocd", "out/gpu-west")
LAB = GitopsCluster("lab", "flux", "out/lab", kueue_api_version="kueue.x-k8s.io/v1beta1")
PLAIN = GitopsCluster("edge", "kustomize", "out/edge")


def test_argocd_single_cluster_has_application_and_health_patch_but_no_applicationset() -> None:
    files = gitops_files([EAST], "https://git.example/acme/policy.git", "main")
    assert sorted(files) == ["argocd/argocd-cm.kueue-health.patch.yaml", "argocd/argocd-cm.kueue-health.values.yaml",
                             "argocd/gpu-east.application.yaml"]
    app = files["argocd/gpu-east.application.yaml"]
    assert app["kind"] == "Application" and app["apiVersion"] == "argoproj.io/v1alpha1"
    assert app["spec"]["source"] == {"repoURL": "https://git.example/acme/policy.git",
                                     "targetRevision": "main", "path": "out/gpu-east"}
    assert app["spec"]["destination"]["name"] == "gpu-east"
    assert "server" not in app["spec"]["destination"]            # Argo refuses name and server together
    assert "SkipDryRunOnMissingResource=true" in app["spec"]["syncPolicy"]["syncOptions"]
    assert int(app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) > 0


def test_several_argocd_clusters_get_an_applicationset_with_a_cluster_generator() -> None:
    files = gitops_files([WEST, EAST, LAB, PLAIN], None, "main")
    appset = files["argocd/clusters.applicationset.yaml"]
    generator = appset["spec"]["generators"][0]["clusters"]
    assert generator["selector"]["matchExpressions"][0]["values"] == ["gpu-east", "gpu-west"]
    template = appset["spec"]["template"]
    assert template["spec"]["destination"]["name"] == "{{.name}}"
    assert template["spec"]["source"]["path"] == 'out/{{index .metadata.labels "kueue-policy/cluster"}}'
    assert appset["spec"]["goTemplate"] is True
    # kustomize clusters get nothing extra; flux clusters get a source and a Kustomization
    assert not any("edge" in path for path in files)
    assert "flux/lab.kustomization.yaml" in files and "flux/kueue-policy.gitrepository.yaml" in files
    assert list(files) == sorted(files)


def test_flux_kustomization_depends_on_kueue_and_health_checks_queues() -> None:
    kustomization = gitops_files([LAB], "https://git.example/p.git", "main")["flux/lab.kustomization.yaml"]
    spec = kustomization["spec"]
    assert kustomization["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
    assert spec["dependsOn"] == [{"name": "kueue"}]
    assert spec["prune"] is True and spec["wait"] is True and spec["interval"]
    assert spec["path"] == "./out/lab"
    kinds = {(e["apiVersion"], e["kind"]) for e in spec["healthCheckExprs"]}
    assert kinds == {("kueue.x-k8s.io/v1beta1", "ClusterQueue"), ("kueue.x-k8s.io/v1beta1", "LocalQueue")}


def _queue(status: dict | None) -> dict:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "alpha"}}
    if status is not None:
        obj["status"] = status
    return obj


ACTIVE = {"conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads"}]}
INACTIVE = {"conditions": [{"type": "Active", "status": "False", "reason": "FlavorNotFound",
                            "message": "Can't admit new workloads: references missing ResourceFlavor(s): h100."}]}


@pytest.mark.parametrize("status, expected", [(ACTIVE, "Healthy"), (INACTIVE, "Degraded"), (None, "Progressing"),
                                              ({"conditions": []}, "Progressing")])
def test_argocd_lua_health_check_runs(status: dict | None, expected: str) -> None:
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)
    # Argo CD runs the script with the live object bound to `obj`.
    run = lua.eval(f"function(obj)\n{ARGOCD_CLUSTERQUEUE_HEALTH_LUA}\nend")
    result = run(_to_lua(lua, _queue(status)))
    assert result["status"] == expected
    if status is INACTIVE:
        assert "FlavorNotFound" in result["message"]


@pytest.mark.parametrize("status, expected", [({"health": {"status": "Healthy"}}, "Healthy"),
                                              ({"health": {"status": "Degraded", "message": "x"}}, "Degraded"),
                                              ({"health": {"status": "Progressing"}}, "Progressing"),
                                              (None, "Progressing"), ({}, "Progressing")])
def test_argocd_application_health_check_makes_app_of_apps_waves_wait(status, expected) -> None:
    """Kueue's own Application (a lower wave) must be Healthy, not merely created, before the
    queues' Application syncs: Argo CD >= 1.8 needs this check in argocd-cm for that."""
    files = gitops_files([EAST], None, "main")
    patch = files["argocd/argocd-cm.kueue-health.patch.yaml"]["data"]
    assert patch["resource.customizations.health.argoproj.io_Application"] == ARGOCD_APPLICATION_HEALTH_LUA
    assert files["argocd/argocd-cm.kueue-health.values.yaml"]["configs"]["cm"] == patch
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "kueue"}}
    if status is not None:
        app["status"] = status
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)
    result = lua.eval(f"function(obj)\n{ARGOCD_APPLICATION_HEALTH_LUA}\nend")(_to_lua(lua, app))
    assert result["status"] == expected


def _to_lua(lua, value):
    if isinstance(value, dict):
        return lua.table_from({k: _to_lua(lua, v) for k, v in value.items()})
    if isinstance(value, list):
        return lua.table_from([_to_lua(lua, v) for v in value])
    return value


@pytest.mark.parametrize("status, current, failed", [(ACTIVE, True, False), (INACTIVE, False, True),
                                                     (None, False, False)])
def test_flux_health_expressions_evaluate(status: dict | None, current: bool, failed: bool) -> None:
    spec = gitops_files([LAB], None, "main")["flux/lab.kustomization.yaml"]["spec"]
    expression = spec["healthCheckExprs"][0]
    # Flux's CEL (cel-go) has optional field selection; the Python engine does not, so the
    # `status.?conditions.orValue([])` prefix is rewritten to its has() equivalent here.
    def portable(text: str) -> str:
        assert text.startswith("status.?conditions.orValue([])")
        return text.replace("status.?conditions.orValue([])",
                            "(has(obj.status) && has(obj.status.conditions) ? obj.status.conditions : [])")
    obj = _queue(status)
    assert cel.evaluate(portable(expression["current"]), {"obj": obj}) is current
    assert cel.evaluate(portable(expression["failed"]), {"obj": obj}) is failed


def test_kustomize_builds_the_wiring(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.fail("kubectl is needed for this check (it is installed on the project's machines)")
    files = gitops_files([EAST, WEST, LAB], "https://git.example/p.git", "main")
    for folder in ("argocd", "flux"):
        root = tmp_path / folder
        root.mkdir()
        names = []
        for path, obj in files.items():
            if path.startswith(folder + "/") and ".kueue-health." not in path:
                (tmp_path / path).write_text(yaml.safe_dump(obj, sort_keys=False))
                names.append(path.split("/", 1)[1])
        (root / "kustomization.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": sorted(names)}))
        built = subprocess.run(["kubectl", "kustomize", str(root)], capture_output=True, text=True, timeout=60)
        assert built.returncode == 0, built.stderr
        kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(built.stdout))
        expected = {"argocd": ["Application", "Application", "ApplicationSet"],
                    "flux": ["GitRepository", "Kustomization"]}[folder]
        assert kinds == expected


def test_codeowners_maps_each_policy_file_to_its_team() -> None:
    text = codeowners({
        "alpha": ("policies/teams/alpha.yaml", ["@acme/alpha"]),
        "beta": ("policies/teams/beta.yaml", ["@acme/beta", "lead@acme.example"]),
        "gamma": ("policies/teams/shared.yaml", ["@acme/gamma"]),
        "delta": ("policies/teams/shared.yaml", ["@acme/delta"]),
        "orphan": ("policies/teams/orphan team.yaml", []),
    })
    rules = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert rules == [
        "/policies/teams/alpha.yaml @acme/alpha",
        "/policies/teams/beta.yaml @acme/beta lead@acme.example",
        "/policies/teams/shared.yaml @acme/delta @acme/gamma",
    ]
    assert re.search(r"^# /policies/teams/orphan\\ team.yaml: team orphan declares no owners$", text, re.M)
    assert text.startswith("# Code generated by kueue-policy; DO NOT EDIT.")


def test_codeowners_refuses_an_owner_that_is_not_one() -> None:
    with pytest.raises(ValueError, match="acme team"):
        codeowners({"alpha": ("policies/alpha.yaml", ["acme team"])})


def test_output_is_deterministic() -> None:
    one = gitops_files([WEST, LAB, EAST], "u", "main")
    two = gitops_files([LAB, EAST, WEST], "u", "main")
    assert yaml.safe_dump(one) == yaml.safe_dump(two)


def test_argocd_health_check_is_a_patch_that_keeps_the_rest_of_argocd_cm(tmp_path: Path) -> None:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    files = gitops_files([EAST], None, "main")
    (tmp_path / "argocd-cm.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {"url": "https://argocd.example", "timeout.reconciliation": "180s"}}))
    (tmp_path / "health.patch.yaml").write_text(yaml.safe_dump(files["argocd/argocd-cm.kueue-health.patch.yaml"]))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["argocd-cm.yaml"], "patches": [{"path": "health.patch.yaml"}]}))
    built = subprocess.run(["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stderr
    data = yaml.safe_load(built.stdout)["data"]
    assert data["url"] == "https://argocd.example" and data["timeout.reconciliation"] == "180s"
    assert data["resource.customizations.health.kueue.x-k8s.io_ClusterQueue"] == ARGOCD_CLUSTERQUEUE_HEALTH_LUA
    values = files["argocd/argocd-cm.kueue-health.values.yaml"]
    assert values["configs"]["cm"]["resource.customizations.health.kueue.x-k8s.io_LocalQueue"].startswith("-- kueue-policy")


GITOPS_CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata: {name: NAME}
spec:
  pools: [{name: od, gpu: H100-80GB, nodes: 1, gpusPerNode: 8}]
  repository: {url: "https://git.example/acme/gpu-policy.git", revision: release}
  gitops: GITOPS
"""


def test_gitops_settings_come_from_the_policy(tmp_path: Path) -> None:
    from kp_testing import run_cli

    def write_policy(root: Path, files: dict[str, str]) -> Path:
        (root / "policies").mkdir(parents=True)
        for name, text in files.items():
            (root / "policies" / name).write_text(text)
        return root / "policies"
    argo = ("{tool: argocd, project: ml-platform, namespace: gitops, "
            "destination: {server: 'https://10.0.0.1:6443', namespace: queues}}")
    flux = "{tool: flux, namespace: flux-queues, dependsOn: [kueue-controller, cert-manager]}"
    policies = write_policy(tmp_path, {"east.yaml": GITOPS_CLUSTER.replace("NAME", "east").replace("GITOPS", argo),
                                       "lab.yaml": GITOPS_CLUSTER.replace("NAME", "lab").replace("GITOPS", flux),
                                       "old.yaml": GITOPS_CLUSTER.replace("NAME", "old").replace("GITOPS", "argocd")})
    out = tmp_path / "out"
    result = run_cli("compile", str(policies), "--out", str(out))
    assert result.returncode == 0, result.stderr
    app = yaml.safe_load((out / "argocd" / "east.application.yaml").read_text())
    assert app["metadata"]["namespace"] == "gitops" and app["spec"]["project"] == "ml-platform"
    assert app["spec"]["destination"] == {"server": "https://10.0.0.1:6443", "namespace": "queues"}
    assert app["spec"]["source"]["repoURL"] == "https://git.example/acme/gpu-policy.git"
    assert app["spec"]["source"]["targetRevision"] == "release"
    old = yaml.safe_load((out / "argocd" / "old.application.yaml").read_text())   # the short form still works
    assert old["spec"]["destination"] == {"name": "old", "namespace": "kueue-system"}
    assert old["spec"]["project"] == "default" and old["metadata"]["namespace"] == "argocd"
    kustomization = yaml.safe_load((out / "flux" / "lab.kustomization.yaml").read_text())
    assert kustomization["metadata"]["namespace"] == "flux-queues"
    assert kustomization["spec"]["dependsOn"] == [{"name": "kueue-controller"}, {"name": "cert-manager"}]
    source = yaml.safe_load((out / "flux" / "kueue-policy.gitrepository.yaml").read_text())
    assert source["metadata"]["namespace"] == "flux-queues"
    assert source["spec"]["url"] == "https://git.example/acme/gpu-policy.git" and source["spec"]["ref"] == {"branch": "release"}
    bad = write_policy(tmp_path / "bad", {"c.yaml": GITOPS_CLUSTER.replace("NAME", "c").replace(
        "GITOPS", "{tool: argocd, destination: {server: x, name: y}}")})
    refused = run_cli("validate", str(bad))
    assert refused.returncode == 1 and "c.yaml:7:" in refused.stderr and "server or its name" in refused.stderr
