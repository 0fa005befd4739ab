"""DeviceClasses, claim templates and Kueue's mapping: built, validated against the Kubernetes
schema, and every selector evaluated against NVIDIA-driver-shaped ResourceSlices."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest

from compiler.cel import compile_expression
from compiler.dra.check import check_devices
from compiler.dra.classes import (build_dra_objects, check_dra_version, claim_template,
                                  device_class_mappings, extended_resource_device_classes,
                                  gpu_class_name, gpu_device_class, kueue_config_patch,
                                  mig_class_name, mig_device_class)
from compiler.dra.inventory import DeviceClassSpec, Manifests, Selector, load_inventory
from compiler.core.errors import PolicyError, SourcePosition
from compiler.mig.catalogue import load_catalogue

INVENTORY = Path(__file__).parent / "data" / "inventory-nvidia.yaml"


@pytest.fixture(scope="module")
def devices():
    return load_inventory([INVENTORY])


def _count(device_class: dict, devices) -> int:
    spec = DeviceClassSpec(device_class["metadata"]["name"],
                           tuple(Selector(s["cel"]["expression"], SourcePosition("x")) for s in
                                 device_class["spec"]["selectors"]),
                           device_class["spec"].get("extendedResourceName"), SourcePosition("x"))
    report = check_devices(Manifests([spec], []), devices)
    assert all(c.evaluation_errors == 0 for c in report.classes)
    return report.classes[0].matching


def test_names():
    assert gpu_class_name("H100-80GB") == "h100-80gb.gpu.kueue-policy.io"
    assert mig_class_name("H100-80GB", "1g.10gb+me") == "h100-80gb-1g-10gb-me.mig.kueue-policy.io"
    for model in load_catalogue().models.values():
        for profile in model.profiles:
            assert len(mig_class_name(model.name, profile)) <= 63


def test_gpu_class_selects_whole_gpus_of_the_model(devices):
    h100 = gpu_device_class("H100-80GB")
    assert h100["apiVersion"] == "resource.k8s.io/v1" and h100["kind"] == "DeviceClass"
    assert _count(h100, devices) == 16          # not the MIG devices, not the A100, not the channel
    assert _count(gpu_device_class("A100-80GB"), devices) == 0
    assert _count(gpu_device_class("L40S"), devices) == 4     # non-catalogue name: productName match
    assert _count(gpu_device_class("L4"), devices) == 0       # whole words: L4 is not L40S
    assert _count(gpu_device_class("Ada-L40S-48GB"), devices) == 0   # every word must appear


def test_mig_class_selects_profile_and_model(devices):
    assert _count(mig_device_class("H100-80GB", "3g.40gb"), devices) == 3
    assert _count(mig_device_class("A100-80GB", "3g.40gb"), devices) == 2   # same name, other model
    assert _count(mig_device_class("H100-80GB", "1g.10gb"), devices) == 2
    assert _count(mig_device_class("H100-80GB", "2g.20gb"), devices) == 1
    assert _count(mig_device_class("H100-80GB", "4g.40gb"), devices) == 0


def test_every_emitted_selector_compiles():
    catalogue = load_catalogue()
    for model in catalogue.models.values():
        compile_expression(gpu_device_class(model.name)["spec"]["selectors"][0]["cel"]["expression"])
        for profile in model.profiles:
            compile_expression(mig_device_class(model.name, profile)["spec"]["selectors"][0]["cel"]["expression"])


def test_unknown_profile_and_profile_of_another_model():
    with pytest.raises(PolicyError) as error:
        mig_device_class("H100-80GB", "3g.20gb")
    assert error.value.diagnostics[0].code == "KP702"
    assert "A100-40GB" in error.value.diagnostics[0].message
    with pytest.raises(PolicyError) as error:
        mig_device_class("L40S", "1g.10gb")
    assert error.value.diagnostics[0].code == "KP701"


def test_extended_resource_classes_one_per_name(devices):
    classes = extended_resource_device_classes(["H100-80GB"], [("H100-80GB", "3g.40gb"), ("A100-80GB", "3g.40gb"),
                                                              ("H100-80GB", "1g.10gb+me")])
    by_resource = {c["spec"]["extendedResourceName"]: c for c in classes}
    assert sorted(by_resource) == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-3g.40gb"]
    assert _count(by_resource["nvidia.com/mig-3g.40gb"], devices) == 5      # both models
    assert _count(by_resource["nvidia.com/gpu"], devices) == 16


def test_objects_pass_kubernetes_schema():
    objects = build_dra_objects("dra-claims", "1.34", {"team-a": [("H100-80GB", None), ("H100-80GB", "3g.40gb")]})
    # The Deployment patch is a strategic-merge patch (partial by design), so it is not validated.
    for obj in objects.device_classes + objects.claim_templates + [objects.kueue_configmap_patch]:
        kubernetes_validate.validate(obj, "1.34", strict=True)
    for obj in extended_resource_device_classes(["H100-80GB"], [("H100-80GB", "3g.40gb")]):
        kubernetes_validate.validate(obj, "1.34", strict=True)


def test_claim_template_shape():
    template = claim_template("team-a", "h100-80gb-3g-40gb.mig.kueue-policy.io", count=2)
    assert template["metadata"] == {"name": "h100-80gb-3g-40gb-x2", "namespace": "team-a",
                                    "labels": {"app.kubernetes.io/managed-by": "kueue-policy"}}
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request == {"name": "mig", "exactly": {"deviceClassName": "h100-80gb-3g-40gb.mig.kueue-policy.io",
                                                  "allocationMode": "ExactCount", "count": 2}}


def test_mapping_fragment_and_limits():
    fragment = device_class_mappings({"nvidia.com/gpu": ["b.gpu.kueue-policy.io", "a.gpu.kueue-policy.io"]})
    assert fragment == {"resources": {"deviceClassMappings": [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["a.gpu.kueue-policy.io", "b.gpu.kueue-policy.io"]}]}}
    with pytest.raises(PolicyError, match="at most 8"):
        device_class_mappings({"nvidia.com/gpu": [f"c{i}.x.io" for i in range(9)]})
    with pytest.raises(PolicyError, match="at most 16"):
        device_class_mappings({f"x.io/r{i}": [f"c{i}.x.io"] for i in range(17)})
    with pytest.raises(PolicyError, match="mapped to both"):
        device_class_mappings({"x.io/a": ["c.x.io"], "x.io/b": ["c.x.io"]})


def test_config_patch_and_restart_trigger():
    fragment = device_class_mappings({"nvidia.com/gpu": ["h100-80gb.gpu.kueue-policy.io"]})
    configmap, deployment = kueue_config_patch(fragment)
    assert configmap["metadata"]["name"] == "kueue-manager-config"
    assert configmap["metadata"]["namespace"] == "kueue-system"
    text = configmap["data"]["controller_manager_config.yaml"]
    assert "deviceClassMappings:" in text and "kind: Configuration" in text
    assert "start-up" in configmap["metadata"]["annotations"]["kueue-policy.io/note"]
    checksum = deployment["spec"]["template"]["metadata"]["annotations"]["kueue-policy.io/manager-config-checksum"]
    assert deployment["metadata"]["name"] == "kueue-controller-manager" and checksum.startswith("sha256:")
    # Same input, same checksum; a changed mapping changes it (and so restarts Kueue).
    assert kueue_config_patch(fragment)[1] == deployment
    other = device_class_mappings({"nvidia.com/gpu": ["a100-80gb.gpu.kueue-policy.io"]})
    assert kueue_config_patch(other)[1] != deployment
    # A base Configuration given by the cluster is kept, the mapping merged in.
    base = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "resources": {"excludeResourcePrefixes": ["example.com/"]}}
    merged = kueue_config_patch(fragment, base)[0]["data"]["controller_manager_config.yaml"]
    assert "excludeResourcePrefixes" in merged and "deviceClassMappings" in merged


@pytest.mark.parametrize("access, version, gates, ok", [
    ("device-plugin", "1.30", [], True),
    ("dra-claims", "1.33", [], False),
    ("dra-claims", "1.34", [], True),
    ("dra-extended-resource", "1.34", [], False),
    ("dra-extended-resource", "1.35", ["DRAExtendedResource"], True),
    ("dra-extended-resource", "1.36", [], True),
    ("dra-extended-resource", "1.33", ["DRAExtendedResource"], False),
])
def test_version_gates(access, version, gates, ok):
    problems = check_dra_version(access, version, gates)
    assert (problems == []) is ok
    if not ok:
        assert problems[0].code == "KP706"


def test_build_by_gpu_access():
    devices = {"team-a": [("H100-80GB", None), ("H100-80GB", "3g.40gb")], "team-b": [("H100-80GB", "3g.40gb")]}
    assert build_dra_objects("device-plugin", "1.30", devices).all_objects() == []
    claims = build_dra_objects("dra-claims", "1.34", devices)
    assert [c["metadata"]["name"] for c in claims.device_classes] == [
        "h100-80gb-3g-40gb.mig.kueue-policy.io", "h100-80gb.gpu.kueue-policy.io"]
    assert sorted((t["metadata"]["namespace"], t["metadata"]["name"]) for t in claims.claim_templates) == [
        ("team-a", "h100-80gb"), ("team-a", "h100-80gb-3g-40gb"), ("team-b", "h100-80gb-3g-40gb")]
    assert claims.resource_classes == {"nvidia.com/gpu": ["h100-80gb.gpu.kueue-policy.io"],
                                       "nvidia.com/mig-3g.40gb": ["h100-80gb-3g-40gb.mig.kueue-policy.io"]}
    extended = build_dra_objects("dra-extended-resource", "1.36", devices)
    assert extended.claim_templates == [] and extended.mapping_fragment is None
    assert all("extendedResourceName" in c["spec"] for c in extended.device_classes)
    with pytest.raises(PolicyError) as error:
        build_dra_objects("dra-claims", "1.33", devices)
    assert error.value.diagnostics[0].code == "KP706"


def test_same_input_same_objects():
    devices = {"b": [("H100-80GB", "3g.40gb"), ("H100-80GB", None)], "a": [("A100-80GB", "1g.10gb+me")]}
    reordered = {"a": [("A100-80GB", "1g.10gb+me")], "b": [("H100-80GB", None), ("H100-80GB", "3g.40gb")]}
    first = build_dra_objects("dra-claims", "1.34", devices).all_objects()
    assert build_dra_objects("dra-claims", "1.34", reordered).all_objects() == first
    assert repr(first) == repr(build_dra_objects("dra-claims", "1.34", devices).all_objects())


def test_profile_spellings_resolve_to_the_driver_name():
    device_class = mig_device_class("H100-80GB", "mig-1g.10gb.me")
    assert device_class["metadata"]["name"] == "h100-80gb-1g-10gb-me.mig.kueue-policy.io"
    assert "profile == '1g.10gb+me'" in device_class["spec"]["selectors"][0]["cel"]["expression"]
