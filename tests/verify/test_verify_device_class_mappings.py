"""Kueue Configuration resources.deviceClassMappings rules (Kueue v0.19 validateDeviceClassMappings)."""

from __future__ import annotations

import pytest

from compiler.core import codes
from compiler.verify import verify_device_class_mappings

SELECTOR = {"cel": {"expression": 'device.attributes["gpu.nvidia.com"].productName == "H100"'}}


def config(*mappings: dict, gates: dict | None = None) -> dict:
    cfg = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
           "resources": {"deviceClassMappings": list(mappings)}}
    if gates is not None:
        cfg["featureGates"] = gates
    return cfg


def counter(name: str = "memory") -> dict:
    return {"counter": {"name": name, "driver": "gpu.nvidia.com", "deviceSelector": SELECTOR}}


def rules(found) -> list[str]:
    return [p.rule for p in found]


def test_valid_mappings():
    cfg = config({"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]},
                 {"name": "example.com/mig-memory", "deviceClassNames": ["mig.nvidia.com"], "sources": [counter()]},
                 {"name": "example.com/mig-compute", "deviceClassNames": ["mig.nvidia.com"],
                  "sources": [counter("compute")]})
    assert verify_device_class_mappings(cfg) == []
    # the bare list holder is accepted too
    assert verify_device_class_mappings({"deviceClassMappings": cfg["resources"]["deviceClassMappings"]}) == []


def test_problem_shape():
    found = verify_device_class_mappings(config({"name": "nvidia.com/gpu", "deviceClassNames": []}))
    assert len(found) == 1
    p = found[0]
    assert (p.index, p.kind, p.code, p.field_path) == (-1, "Configuration", codes.DEVICE_CLASS_MAPPINGS,
                                                       "resources.deviceClassMappings[0].deviceClassNames")
    assert p.message == "deviceClassNames: Required value: at least one device class name is required"


def test_at_most_16_mappings():
    cfg = config(*({"name": f"example.com/r{i}", "deviceClassNames": [f"c{i}"]} for i in range(17)))
    assert rules(verify_device_class_mappings(cfg)) == ["dcm.tooMany"]


def test_names_unique_and_qualified():
    cfg = config({"name": "nvidia.com/gpu", "deviceClassNames": ["a"]}, {"name": "nvidia.com/gpu", "deviceClassNames": ["b"]},
                 {"name": "Not Valid", "deviceClassNames": ["c"]})
    assert sorted(rules(verify_device_class_mappings(cfg))) == ["dcm.name.duplicate", "dcm.name.invalid"]


def test_device_classes_limits_and_duplicates():
    cfg = config({"name": "example.com/a", "deviceClassNames": [f"c{i}" for i in range(9)]},
                 {"name": "example.com/b", "deviceClassNames": ["x", "x", "bad/class/name"]})
    assert sorted(rules(verify_device_class_mappings(cfg))) == ["dcm.class.duplicate", "dcm.class.invalid",
                                                                "dcm.classes.tooMany"]


def test_a_device_class_maps_to_one_resource():
    cfg = config({"name": "example.com/a", "deviceClassNames": ["gpu.nvidia.com"]},
                 {"name": "example.com/b", "deviceClassNames": ["gpu.nvidia.com"]})
    found = verify_device_class_mappings(cfg)
    assert rules(found) == ["dcm.class.mappedTwice"]
    assert "device class already mapped to resource example.com/a" in found[0].message


def test_same_class_with_same_counter_twice():
    cfg = config({"name": "example.com/a", "deviceClassNames": ["mig"], "sources": [counter("memory")]},
                 {"name": "example.com/b", "deviceClassNames": ["mig"], "sources": [counter("memory")]})
    assert rules(verify_device_class_mappings(cfg)) == ["dcm.class.counterTwice"]


@pytest.mark.parametrize("source,rule", [
    ({}, "dcm.source.none"),
    ({**counter(), "capacity": {"name": "memory", "driver": "d", "deviceSelector": SELECTOR}}, "dcm.source.both"),
    ({"counter": {"name": "Memory", "driver": "gpu.nvidia.com", "deviceSelector": SELECTOR}}, "dcm.counter.name"),
    ({"counter": {"name": "memory", "deviceSelector": SELECTOR}}, "dcm.driver.required"),
    ({"counter": {"name": "memory", "driver": "x" * 64, "deviceSelector": SELECTOR}}, "dcm.driver"),
    ({"counter": {"name": "memory", "driver": "gpu.nvidia.com"}}, "dcm.selector.required"),
    ({"counter": {"name": "memory", "driver": "gpu.nvidia.com", "deviceSelector": {"cel": {"expression": "device.("}}}},
     "dcm.selector.cel"),
    ({"counter": {**counter()["counter"], "unit": "GiB"}}, "dcm.unknownField"),
])
def test_source_rules(source, rule):
    cfg = config({"name": "example.com/a", "deviceClassNames": ["mig"], "sources": [source]})
    assert rules(verify_device_class_mappings(cfg)) == [rule]


def test_feature_gates_for_sources():
    capacity = {"capacity": {"name": "memory", "driver": "gpu.nvidia.com", "deviceSelector": SELECTOR}}
    cfg = config({"name": "example.com/a", "deviceClassNames": ["mig"], "sources": [capacity]})
    assert rules(verify_device_class_mappings(cfg)) == ["dcm.source.capacityGate"]  # alpha, off by default
    cfg["featureGates"] = {"KueueDRAIntegrationConsumableCapacity": True}
    assert verify_device_class_mappings(cfg) == []
    with_counter = config({"name": "example.com/a", "deviceClassNames": ["mig"], "sources": [counter()]})
    assert verify_device_class_mappings(with_counter) == []  # beta, on in 0.19
    assert rules(verify_device_class_mappings(with_counter, kueue_version="0.18")) == ["dcm.source.counterGate"]


def test_counter_and_capacity_not_mixed():
    capacity = {"capacity": {"name": "memory", "driver": "gpu.nvidia.com", "deviceSelector": SELECTOR}}
    cfg = config({"name": "example.com/a", "deviceClassNames": ["mig"], "sources": [counter(), capacity]},
                 gates={"KueueDRAIntegrationConsumableCapacity": True})
    assert rules(verify_device_class_mappings(cfg)) == ["dcm.source.mixed"]


def test_unknown_mapping_field_and_missing_name():
    cfg = config({"deviceClassNames": ["a"], "classes": ["b"]})
    assert sorted(rules(verify_device_class_mappings(cfg))) == ["dcm.name.required", "dcm.unknownField"]


def test_no_mappings_no_problems():
    assert verify_device_class_mappings({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}) == []


def _config_map(config_text: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": config_text}}


def test_configuration_inside_a_config_map_is_checked_by_verify_objects():
    from compiler.verify import verify_objects

    good = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n  deviceClassMappings:\n"
            "  - name: nvidia.com/gpu\n    deviceClassNames: [gpu.nvidia.com]\n")
    assert verify_objects([_config_map(good)], "1.34", "0.19") == []
    bad = good + "  - name: nvidia.com/gpu-again\n    deviceClassNames: [gpu.nvidia.com]\n"
    found = verify_objects([_config_map(bad)], "1.34", "0.19")
    assert [(p.index, p.kind, p.code, p.rule) for p in found] == [
        (0, "ConfigMap", codes.DEVICE_CLASS_MAPPINGS, "dcm.class.mappedTwice")]
    assert found[0].field_path == ("data.controller_manager_config.yaml: "
                                   "resources.deviceClassMappings[1].deviceClassNames[0]")
    broken = "kind: Configuration\nresources: [unclosed\n"
    assert [p.rule for p in verify_objects([_config_map(broken)], "1.34", "0.19")] == ["dcm.yaml"]
