"""`kueue-policy devices check` run as a subprocess on real YAML files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from click.testing import CliRunner

from compiler.cli import main
from compiler.dra.classes import build_dra_objects
from kp_testing import run_cli

INVENTORY = Path(__file__).parent / "data" / "inventory-nvidia.yaml"


def _write(path: Path, objects: list[dict]) -> Path:
    yaml = YAML()
    yaml.default_flow_style = False
    with path.open("w") as handle:
        yaml.dump_all(objects, handle)
    return path


@pytest.fixture
def compiled_out(tmp_path):
    objects = build_dra_objects("dra-claims", "1.34", {
        "alpha-train": [("H100-80GB", None), ("H100-80GB", "3g.40gb")],
        "beta": [("A100-80GB", "3g.40gb"), ("H100-80GB", "1g.10gb")]})
    out = tmp_path / "out" / "gpu-east"
    out.mkdir(parents=True)
    for obj in objects.all_objects():
        name = f"{obj['kind'].lower()}-{obj['metadata'].get('namespace', 'cluster')}-{obj['metadata']['name']}.yaml"
        _write(out / name, [obj])
    return tmp_path / "out"


def test_all_match(compiled_out):
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), "--out", str(compiled_out),
                     "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["devices"] == 29
    classes = {c["name"]: c["matching"] for c in report["deviceClasses"]}
    assert classes == {"a100-80gb-3g-40gb.mig.kueue-policy.io": 2, "h100-80gb-1g-10gb.mig.kueue-policy.io": 2,
                       "h100-80gb-3g-40gb.mig.kueue-policy.io": 3, "h100-80gb.gpu.kueue-policy.io": 16}
    claims = {(c["name"], c["request"]): (c["matching"], c["requested"]) for c in report["claims"]}
    assert claims[("alpha-train/h100-80gb", "gpu")] == (16, 1)
    assert claims[("beta/a100-80gb-3g-40gb", "mig")] == (2, 1)
    text = run_cli("devices", "check", "--inventory", str(INVENTORY), "--out", str(compiled_out))
    assert "DeviceClass h100-80gb.gpu.kueue-policy.io: 16 device(s) match on 2 node(s)" in text.stdout


def test_no_device_matches_is_caught(tmp_path):
    objects = build_dra_objects("dra-claims", "1.34", {"beta": [("H100-80GB", "4g.40gb")]})
    manifest = _write(tmp_path / "classes.yaml", objects.device_classes + objects.claim_templates)
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), str(manifest))
    assert result.returncode == 1
    assert f"{manifest}:1:1: error[KP710]: DeviceClass h100-80gb-4g-40gb.mig.kueue-policy.io: no device matches selector" in result.stderr
    assert "ResourceClaimTemplate beta/h100-80gb-4g-40gb request mig: no device matches selector" in result.stderr


def test_claim_asking_for_more_than_exist(tmp_path):
    objects = build_dra_objects("dra-claims", "1.34", {"beta": [("A100-80GB", "3g.40gb")]})
    template = objects.claim_templates[0]
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    manifest = _write(tmp_path / "m.yaml", objects.device_classes + [template])
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), str(manifest))
    assert result.returncode == 1
    assert "error[KP711]" in result.stderr and "asks for 3 device(s), only 2 match" in result.stderr


def test_selector_that_does_not_compile(tmp_path):
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: resource.k8s.io/v1\n"
        "kind: DeviceClass\n"
        "metadata:\n"
        "  name: broken.gpu.kueue-policy.io\n"
        "spec:\n"
        "  selectors:\n"
        "  - cel:\n"
        "      expression: \"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type.lowerAsci() == 'gpu'\"\n")
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), str(manifest))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{manifest}:8:" in result.stderr and "error[KP707]" in result.stderr
    assert "undeclared reference to function 'lowerAsci'" in result.stderr


def test_selector_error_at_evaluation(tmp_path):
    manifest = tmp_path / "fragile.yaml"
    manifest.write_text(
        "apiVersion: resource.k8s.io/v1\n"
        "kind: DeviceClass\n"
        "metadata: {name: fragile.example.com}\n"
        "spec:\n"
        "  selectors:\n"
        "  - cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}\n")
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), str(manifest))
    assert result.returncode == 1
    assert "error[KP708]" in result.stderr and "no such key: profile" in result.stderr


@pytest.mark.parametrize("content, text", [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "expected kind ResourceSlice"),
    ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: resource.k8s.io/v1\n  kind: DeviceClass\n"
     "  metadata: {name: x}\n", "found kind 'DeviceClass'"),
    ("apiVersion: resource.k8s.io/v1alpha9\nkind: ResourceSlice\nmetadata: {name: x}\nspec: {driver: d}\n",
     "is not supported"),
    ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: x}\nspec:\n  driver: d\n"
     "  devices:\n  - name: a\n    attributes: {v: {version: '1.2'}}\n", "not a semantic version"),
    ("just: [broken\n", "KP101"),
    ("", "holds no ResourceSlice"),
])
def test_inventory_that_is_not_resource_slices(tmp_path, compiled_out, content, text):
    # In-process (click's runner) to keep the suite fast; the subprocess path is covered above.
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(content)
    result = CliRunner().invoke(main, ["devices", "check", "--inventory", str(inventory), "--out", str(compiled_out)])
    assert result.exit_code == 1, result.stdout
    assert text in result.stderr
    assert str(inventory) in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_item_position_in_a_list(tmp_path, compiled_out):
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n")
    result = run_cli("devices", "check", "--inventory", str(inventory), "--out", str(compiled_out))
    assert f"{inventory}:4:3: error[KP709]" in result.stderr


def test_usage_and_missing_files(tmp_path):
    assert run_cli("devices", "check", "--inventory", str(INVENTORY)).returncode == 2
    missing = run_cli("devices", "check", "--inventory", str(tmp_path / "nope.yaml"), str(INVENTORY))
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_positions_inside_block_and_quoted_expressions(tmp_path):
    manifest = tmp_path / "classes.yaml"
    manifest.write_text(
        "apiVersion: resource.k8s.io/v1\n"
        "kind: DeviceClass\n"
        "metadata: {name: block.example.com}\n"
        "spec:\n"
        "  selectors:\n"
        "  - cel:\n"
        "      expression: |-\n"
        "        device.driver == 'gpu.nvidia.com' &&\n"
        "          device.attributes['gpu.nvidia.com'].type.lowerAsci() == 'gpu'\n"
        "---\n"
        "apiVersion: resource.k8s.io/v1\n"
        "kind: DeviceClass\n"
        "metadata: {name: quoted.example.com}\n"
        "spec:\n"
        "  selectors:\n"
        "  - cel: {expression: \"device.driver == 'gpu.nvidia.com' && device.foo(1)\"}\n")
    result = CliRunner().invoke(main, ["devices", "check", "--inventory", str(INVENTORY), str(manifest)])
    assert result.exit_code == 1
    # line 2 of the block is file line 9; `lowerAsci` is at column 44 of the expression line,
    # which the block indents by 8
    assert f"{manifest}:9:52: error[KP707]: DeviceClass block.example.com" in result.stderr
    assert f"{manifest}:16:68: error[KP707]: DeviceClass quoted.example.com" in result.stderr


def _report_json(out: Path, pools: list[dict], classes: dict[str, list[str]]) -> None:
    (out / "gpu-east" / "report.json").write_text(json.dumps({"pools": pools, "deviceClasses": classes}))


def _pool(name: str, nodes: int, per_node: int = 8, gpu: str = "H100-80GB", **more) -> dict:
    return {"name": name, "gpu": gpu, "nodes": nodes, "gpusPerNode": per_node, "gpus": nodes * per_node,
            "mig": "none", **more}


def test_pools_larger_than_the_inventory_are_reported(compiled_out):
    """The inventory holds 16 whole H100 GPUs on 2 nodes and 3 H100 3g.40gb instances: pools
    declaring 12 H100 nodes and 4 instances passed the per-class check (one match is enough)."""
    classes = {"nvidia.com/gpu": ["h100-80gb.gpu.kueue-policy.io"],
               "nvidia.com/mig-3g.40gb": ["h100-80gb-3g-40gb.mig.kueue-policy.io"]}
    _report_json(compiled_out, [_pool("h100-ondemand", 8), _pool("h100-spot", 4),
                                _pool("h100-mig", 1, mig="planned", migInstances={"3g.40gb": 4})], classes)
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), "--out", str(compiled_out),
                     "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["poolShortfalls"] == [
        {"deviceClass": "h100-80gb-3g-40gb.mig.kueue-policy.io", "pools": ["h100-mig"], "declaredDevices": 4,
         "declaredNodes": None, "devices": 3, "nodes": 1},
        {"deviceClass": "h100-80gb.gpu.kueue-policy.io", "pools": ["h100-ondemand", "h100-spot"],
         "declaredDevices": 96, "declaredNodes": 12, "devices": 16, "nodes": 2}]
    assert ("error[KP715]: pool(s) h100-ondemand, h100-spot declare 96 H100-80GB GPU(s) on 12 node(s); the "
            "inventory has 16 device(s) on 2 node(s) matching DeviceClass h100-80gb.gpu.kueue-policy.io"
            ) in result.stderr


def test_pools_the_inventory_holds_pass(compiled_out):
    classes = {"nvidia.com/gpu": ["h100-80gb.gpu.kueue-policy.io"]}
    _report_json(compiled_out, [_pool("h100-ondemand", 2)], classes)
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), "--out", str(compiled_out))
    assert result.returncode == 0, result.stderr
    # 16 GPUs declared on 4 nodes: enough devices, but on 2 nodes only.
    _report_json(compiled_out, [_pool("h100-ondemand", 4, per_node=4)], classes)
    result = run_cli("devices", "check", "--inventory", str(INVENTORY), "--out", str(compiled_out))
    assert result.returncode == 1 and "declare 16 H100-80GB GPU(s) on 4 node(s)" in result.stderr
