"""`evaluate` reads Kueue's Configuration in every form the compiler emits and Kueue mounts: bare,
the ConfigMap (as kubectl prints it, and the kustomize patch file), the Helm values file. One it
cannot read stops the run (exit 1) with file, line and cause; stdout stays empty."""

from __future__ import annotations

import json

import pytest
from ruamel.yaml import YAML

from kp_testing import run_cli
from kp_testing.policies import CLUSTER, team, write_policy

yaml = YAML(typ="safe", pure=True)
DRA_CLUSTER = CLUSTER.replace('kueueVersion: "0.19"', 'kueueVersion: "0.19"\n  gpuAccess: dra-claims')
JOB = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": "train", "namespace": "a", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
       "spec": {"template": {"spec": {
           "restartPolicy": "Never",
           "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "h100-80gb-x8"}],
           "containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1"},
                                                                       "claims": [{"name": "gpus"}]}}]}}}}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("forms")
    policies = write_policy(root, {"cluster.yaml": DRA_CLUSTER,
                                   "a.yaml": team("a", "namespaces: [a]\ngpus: {guaranteed: 8}")})
    result = run_cli("compile", str(policies), "--out", str(root / "out"))
    assert result.returncode == 0, result.stderr
    folder = root / "out" / "lab"
    (root / "job.yaml").write_text(json.dumps(JOB))
    objects = [str(p) for p in sorted(folder.rglob("*.yaml"))
               if p.name != "kustomization.yaml" and "kueue-config" not in p.parts]
    return folder, objects + [str(root / "job.yaml")]


def _forms(folder, tmp_path) -> dict[str, str]:
    config_dir = folder / "kueue-config"
    patch = yaml.load((config_dir / "kueue-manager-config.patch.yaml").read_text())
    bare = tmp_path / "bare.yaml"
    bare.write_text(patch["data"]["controller_manager_config.yaml"])
    # As `kubectl get configmap kueue-manager-config -n kueue-system -o yaml` prints it.
    live = tmp_path / "live-configmap.yaml"
    live.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "kueue-manager-config", "namespace": "kueue-system", "resourceVersion": "12",
        "uid": "0b5e", "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": patch["data"]}))
    return {"bare": str(bare), "configmap": str(live),
            "kustomize-patch": str(config_dir / "kueue-manager-config.patch.yaml"),
            "helm-values": str(config_dir / "helm-values.yaml")}


def _evaluate(*files: str) -> dict:
    result = run_cli("evaluate", *files, "--format", "json")
    assert result.returncode == 0, result.stderr
    return {w["name"]: w for w in json.loads(result.stdout)["workloads"]}


@pytest.mark.parametrize("form", ["bare", "configmap", "kustomize-patch", "helm-values"])
def test_the_deviceclass_mapping_is_read_in_every_form(compiled, tmp_path, form):
    folder, files = compiled
    (workload,) = _evaluate(*files, _forms(folder, tmp_path)[form]).values()
    assert workload["status"] == "admitted", workload
    assert workload["assignment"]["main"]["nvidia.com/gpu"] == "od"   # 8 GPUs of one x8 claim, mapped


def test_without_the_configuration_the_claim_is_not_mapped(compiled):
    """The positive control: the same input without a Configuration is what users saw."""
    _, files = compiled
    (workload,) = _evaluate(*files).values()
    assert workload["status"] == "inadmissible" and "is not mapped" in workload["reason"], workload


BAD_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: kueue-manager-config
  namespace: kueue-system
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    resources: {deviceClassMappings: [
    fairSharing: {}
"""
BAD_HELM = """\
# Helm values
managerConfig:
  controllerManagerConfigYaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    fairSharing: {]
"""
NOT_A_CONFIGURATION = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data:
  controller_manager_config.yaml: |
    just: some settings
"""
WRONG_TYPE = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
resources:
  deviceClassMappings: {name: nvidia.com/gpu}
"""


@pytest.mark.parametrize("text, line, cause", [
    (BAD_CONFIGMAP, 11, "data.controller_manager_config.yaml is not a readable Kueue Configuration"),
    (BAD_HELM, 6, "managerConfig.controllerManagerConfigYaml is not a readable Kueue Configuration"),
    (NOT_A_CONFIGURATION, 1, "does not hold a Kueue Configuration"),
    (WRONG_TYPE, 1, "resources.deviceClassMappings must be a list"),
], ids=["configmap-yaml", "helm-yaml", "not-a-configuration", "wrong-type"])
def test_an_unreadable_configuration_stops_with_file_and_line(compiled, tmp_path, text, line, cause):
    _, files = compiled
    bad = tmp_path / "config.yaml"
    bad.write_text(text)
    result = run_cli("evaluate", *files, str(bad), "--format", "json")
    assert result.returncode == 1
    assert f"{bad}:{line}:" in result.stderr and cause in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads(result.stdout or "{}").get("workloads") is None
