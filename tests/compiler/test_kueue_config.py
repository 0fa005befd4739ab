"""Kueue's manager Configuration: the policy's settings merged into the user's own base (or
Kueue's default for the version), contradictions refused at the base's line, Helm values."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kp_testing.policies import CLUSTER, snapshot, team, write_policy
from kp_testing import run_cli

KUEUE_DEFAULT = Path("/root/go/pkg/mod/sigs.k8s.io/kueue@v0.19.2/config/components/manager/controller_manager_config.yaml")

DRA_CLUSTER = CLUSTER.replace('kueueVersion: "0.19"', 'kueueVersion: "0.19"\n  gpuAccess: dra-claims') + (
    "  fairSharing: {enabled: true}\n")
TEAM = team("a", "namespaces: [a]\ngpus: {guaranteed: 8}")

BASE = """\
# Our production Kueue settings (kept by kueue-policy)
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
  enableClusterQueueResources: true
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
clientConnection:
  qps: 123
  burst: 456
waitForPodsReady:
  timeout: 7m
  recoveryTimeout: 3m
  blockAdmission: true
  requeuingStrategy:
    timestamp: Creation
    backoffLimitCount: 5
    backoffBaseSeconds: 60
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector:
  matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}
integrations:
  frameworks:
    - batch/job
    - ray.io/rayjob
    - ray.io/raycluster
    - leaderworkerset.x-k8s.io/leaderworkerset
    - trainer.kubeflow.org/trainjob
    - pod
resources:
  excludeResourcePrefixes: [example.com/]
  deviceClassMappings:
    - {name: example.com/fpga, deviceClassNames: [fpga.example.com]}
objectRetentionPolicies:
  workloads:
    afterFinished: 1h
"""


def compile_with(tmp_path: Path, cluster: str, base: str | None = None, *extra: str) -> subprocess.CompletedProcess:
    files = {"cluster.yaml": cluster, "teams/a.yaml": TEAM}
    if base is not None:
        files["kueue/controller_manager_config.yaml"] = base
    policies = write_policy(tmp_path, files)
    return run_cli("compile", str(policies), "--out", str(tmp_path / "out"), *extra)


def emitted(tmp_path: Path) -> tuple[dict, dict]:
    folder = tmp_path / "out" / "lab" / "kueue-config"
    patch = yaml.safe_load((folder / "kueue-manager-config.patch.yaml").read_text())
    helm = yaml.safe_load((folder / "helm-values.yaml").read_text())
    return yaml.safe_load(patch["data"]["controller_manager_config.yaml"]), helm


def line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


WITH_BASE = DRA_CLUSTER + "  kueueConfig: {base: kueue/controller_manager_config.yaml}\n"


def test_base_settings_are_kept_value_for_value_and_the_policy_is_merged_in(tmp_path):
    result = compile_with(tmp_path, WITH_BASE, BASE)
    assert result.returncode == 0, result.stderr
    configuration, helm = emitted(tmp_path)
    base = yaml.safe_load(BASE)
    added_mappings = configuration["resources"].pop("deviceClassMappings")
    base_mappings = base["resources"].pop("deviceClassMappings")
    # The user's mapping first, exactly; then the policy's.
    assert added_mappings[0] == base_mappings[0]
    assert added_mappings[1:] == [{"name": "nvidia.com/gpu", "deviceClassNames": ["h100-80gb.gpu.kueue-policy.io"]}]
    assert configuration.pop("fairSharing") == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    assert configuration == base   # every other key, value for value (waitForPodsReady, ray, lws, trainjob...)
    # Helm installs get the same Configuration under the key Kueue's chart reads.
    assert yaml.safe_load(helm["managerConfig"]["controllerManagerConfigYaml"]) == emitted(tmp_path)[0]
    # The base is not mistaken for a policy document, and is not copied anywhere else.
    assert not any("controller_manager_config" in p for p in snapshot(tmp_path / "out"))


def test_without_a_base_kueue_s_own_default_for_the_version_is_the_start(tmp_path):
    assert compile_with(tmp_path, DRA_CLUSTER).returncode == 0
    configuration, _ = emitted(tmp_path)
    frameworks = configuration["integrations"]["frameworks"]
    assert {"ray.io/rayjob", "leaderworkerset.x-k8s.io/leaderworkerset", "trainer.kubeflow.org/trainjob",
            "kubeflow.org/mpijob", "deployment", "statefulset"} <= set(frameworks)
    if KUEUE_DEFAULT.exists():  # cross-check with the Kueue release the project builds against
        kueue = yaml.safe_load(KUEUE_DEFAULT.read_text())
        for key in ("resources", "fairSharing"):
            configuration.pop(key)
        assert configuration == kueue


@pytest.mark.parametrize("edit, line, words", [
    (lambda b: b.replace("apiVersion: config.kueue.x-k8s.io/v1beta2", "apiVersion: config.kueue.x-k8s.io/v1beta1")
     + "fairSharing:\n  enable: false\n", "enable: false", "turns fair sharing off"),
    (lambda b: b.replace("deviceClassNames: [fpga.example.com]", "deviceClassNames: [h100-80gb.gpu.kueue-policy.io]"),
     "{name: example.com/fpga", "maps DeviceClass h100-80gb.gpu.kueue-policy.io to example.com/fpga"),
    (lambda b: b.replace("excludeResourcePrefixes: [example.com/]", "excludeResourcePrefixes: [nvidia.com/]"),
     "excludeResourcePrefixes: [nvidia.com/]", "excludes nvidia.com/gpu"),
])
def test_a_base_that_contradicts_the_policy_is_refused_at_its_line(tmp_path, edit, line, words):
    base = edit(BASE)
    line = line_of(base, line)
    result = compile_with(tmp_path, WITH_BASE, base)
    assert result.returncode == 1
    assert f"policies/kueue/controller_manager_config.yaml:{line}:" in result.stderr, result.stderr
    assert "error[KP521]" in result.stderr and words in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(tmp_path / "out") == {}


def test_fair_sharing_in_the_base_needs_it_in_the_policy(tmp_path):
    cluster = WITH_BASE.replace("  fairSharing: {enabled: true}\n", "")
    base = BASE + "fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n"
    result = compile_with(tmp_path, cluster, base)
    assert result.returncode == 1 and f"controller_manager_config.yaml:{line_of(base, 'fairSharing:')}:" in result.stderr
    assert "enables fair sharing" in result.stderr


def test_a_missing_base_is_named_at_the_policy_line(tmp_path):
    result = compile_with(tmp_path, WITH_BASE.replace("kueue/controller_manager_config.yaml", "kueue/nope.yaml"), BASE)
    assert result.returncode == 1
    assert "policies/cluster.yaml:" in result.stderr and "error[KP520]" in result.stderr
    assert "policies/kueue/nope.yaml" in result.stderr


FAIR_SHARING_CLUSTER = CLUSTER + "  fairSharing: {enabled: true}\n"


@pytest.mark.parametrize("version", ["0.14", "0.15", "0.16", "0.17", "0.18"])
def test_without_a_base_each_version_starts_from_its_own_kueue_default(tmp_path, version):
    result = compile_with(tmp_path, FAIR_SHARING_CLUSTER.replace('kueueVersion: "0.19"', f'kueueVersion: "{version}"'))
    assert result.returncode == 0, result.stderr
    config, _ = emitted(tmp_path)
    shipped = Path(__file__).resolve().parents[2] / "compiler" / "kueue_defaults" / f"{version}.yaml"
    default = yaml.safe_load(shipped.read_text())
    assert config["integrations"] == default["integrations"] and config["apiVersion"] == default["apiVersion"]
    assert "fairSharing" in config


def test_a_version_without_a_shipped_default_asks_for_a_base(tmp_path):
    result = compile_with(tmp_path, FAIR_SHARING_CLUSTER.replace('kueueVersion: "0.19"', 'kueueVersion: "0.13"'))
    assert result.returncode == 1 and "error[KP522]" in result.stderr and "0.13" in result.stderr


def test_the_component_applies_to_a_kueue_install_with_kubectl_kustomize(tmp_path):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    assert compile_with(tmp_path, WITH_BASE, BASE).returncode == 0
    install = tmp_path / "kueue-install"
    install.mkdir()
    (install / "kueue.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\n"
        "data: {controller_manager_config.yaml: 'apiVersion: config.kueue.x-k8s.io/v1beta2'}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kueue-controller-manager, namespace: kueue-system}\n"
        "spec:\n  selector: {matchLabels: {app: kueue}}\n  template:\n    metadata: {labels: {app: kueue}}\n"
        "    spec: {containers: [{name: manager, image: kueue}]}\n")
    (install / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [kueue.yaml]\n"
        "components: [../out/lab/kueue-config]\n")
    built = subprocess.run(["kubectl", "kustomize", str(install)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    docs = {d["kind"]: d for d in yaml.safe_load_all(built.stdout)}
    configuration = yaml.safe_load(docs["ConfigMap"]["data"]["controller_manager_config.yaml"])
    assert configuration["waitForPodsReady"]["timeout"] == "7m"
    annotations = docs["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue-policy.io/manager-config-checksum"].startswith("sha256:")
    cluster = subprocess.run(["kubectl", "kustomize", str(tmp_path / "out" / "lab")], capture_output=True, text=True,
                             timeout=120)
    assert cluster.returncode == 0, cluster.stderr


KUEUE_CHART_VALUES = KUEUE_DEFAULT.parents[3] / "charts" / "kueue" / "values.yaml"


def test_helm_values_use_the_key_kueue_s_chart_reads():
    from compiler.stages.kueue_config import helm_values
    if not KUEUE_CHART_VALUES.exists():
        pytest.skip("Kueue's chart is not in the Go module cache on this machine")
    chart = yaml.safe_load(KUEUE_CHART_VALUES.read_text())
    ours = helm_values("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")
    assert set(ours) <= set(chart) and set(ours["managerConfig"]) <= set(chart["managerConfig"])
    assert isinstance(chart["managerConfig"]["controllerManagerConfigYaml"], str)


def test_a_v1beta1_base_gets_fair_sharing_in_its_own_form(tmp_path):
    base = BASE.replace("config.kueue.x-k8s.io/v1beta2", "config.kueue.x-k8s.io/v1beta1")
    assert compile_with(tmp_path, WITH_BASE, base).returncode == 0
    configuration, _ = emitted(tmp_path)
    assert configuration["apiVersion"] == "config.kueue.x-k8s.io/v1beta1"
    assert configuration["fairSharing"] == {"enable": True, "preemptionStrategies": [
        "LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    old_cluster = WITH_BASE.replace('kueueVersion: "0.19"', 'kueueVersion: "0.14"').replace("  gpuAccess: dra-claims\n", "")
    old = compile_with(tmp_path / "old", old_cluster, BASE)
    assert old.returncode == 1 and "does not serve" in old.stderr   # v1beta2 on a Kueue that predates it


def test_kueue_s_own_shipped_file_with_comments_is_a_base(tmp_path):
    if not KUEUE_DEFAULT.exists():
        pytest.skip("Kueue's controller_manager_config.yaml is not in the Go module cache on this machine")
    base = KUEUE_DEFAULT.read_text() + "waitForPodsReady:\n  timeout: 10m\n  blockAdmission: true\n"
    assert compile_with(tmp_path, WITH_BASE, base).returncode == 0
    configuration, _ = emitted(tmp_path)
    expected = yaml.safe_load(base)
    assert configuration.pop("resources") == {"deviceClassMappings": [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["h100-80gb.gpu.kueue-policy.io"]}]}
    assert configuration.pop("fairSharing")["preemptionStrategies"]
    assert configuration == expected
