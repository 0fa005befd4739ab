"""nvidia-mig-manager config and node labels for a plan."""

from __future__ import annotations

import pytest

from compiler.mig.mig_manager import (assign_nodes, layout_config_name, mig_manager_config,
                                      mig_manager_configmap)
from compiler.mig.planner import plan_mig


def test_config_names():
    assert layout_config_name({"3g.40gb": 1, "1g.10gb": 4}) == "4x1g.10gb-1x3g.40gb"
    assert layout_config_name({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, "H100-80GB") == "all-balanced"
    assert layout_config_name({"1g.10gb+me": 1}, "H100-80GB") == "all-1g.10gb.me"
    assert layout_config_name({"1g.10gb+me": 1, "1g.10gb": 2}) == "2x1g.10gb-1x1g.10gb.me"
    long = {"1g.34gb+me": 1, "1g.34gb": 1, "1g.67gb": 1, "2g.67gb": 1, "3g.135gb": 1, "x" * 20: 1}
    assert layout_config_name(long).startswith("mig-") and len(layout_config_name(long)) <= 63


def test_mig_configs_document_shape():
    document = mig_manager_config({"all-balanced": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
                                   "mixed-x": [([2, 3], {"3g.40gb": 2}), ([0, 1], {"1g.10gb": 7})]},
                                  device_filter=["0x233010DE"])
    assert document["version"] == "v1"
    configs = document["mig-configs"]
    assert list(configs) == ["all-balanced", "all-disabled", "mixed-x"]
    assert configs["all-balanced"] == [{"device-filter": ["0x233010DE"], "devices": "all", "mig-enabled": True,
                                        "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}]
    assert [entry["devices"] for entry in configs["mixed-x"]] == [[0, 1], [2, 3]]
    assert configs["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    configmap = mig_manager_configmap(document)
    assert configmap["kind"] == "ConfigMap" and "mig-configs:" in configmap["data"]["config.yaml"]


def test_node_assignment_for_a_plan():
    plan = plan_mig("H100-80GB", {"1g.10gb": 9, "2g.20gb": 4, "3g.40gb": 3})
    assignment = assign_nodes([(l.count, l.profiles) for l in plan.layouts], nodes=3, gpus_per_node=2,
                              model="H100-80GB")
    labels = assignment.labels()
    assert sum(labels.values()) == 3
    assert labels["all-disabled"] == 1
    # every GPU of the plan is on some node, and every non-disabled config is in the document
    gpus = sum(len(devices) * group.nodes for group in assignment.groups for devices, _ in group.gpu_layouts)
    assert gpus >= plan.gpus
    document = mig_manager_config(assignment.configs)
    assert set(labels) <= set(document["mig-configs"])


def test_uniform_nodes_use_devices_all():
    assignment = assign_nodes([(16, {"3g.40gb": 2})], nodes=2, gpus_per_node=8, model="H100-80GB")
    assert assignment.labels() == {"all-3g.40gb": 2}
    assert assignment.configs == {"all-3g.40gb": {"3g.40gb": 2}}


def test_plan_bigger_than_pool():
    with pytest.raises(ValueError, match="needs 9 GPUs"):
        assign_nodes([(9, {"7g.80gb": 1})], nodes=1, gpus_per_node=8)
