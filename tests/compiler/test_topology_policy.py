"""Pool and workload topology in the policy: what compiles, and every refusal Kueue would make,
reported at the user's line with its code (the fixture: tests/compiler/topology_policies/nvl72,
a GB200 NVL72 pool with a regular shape and an H100 pool whose racks come from a node export)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from compiler.core.errors import PolicyError
from compiler.stages.pipeline import PolicySource, compile_policy
from kp_testing import run_cli

FIXTURE = Path(__file__).parent / "topology_policies" / "nvl72"


def _policy(tmp_path: Path, replace: dict[str, tuple[str, str]] | None = None) -> Path:
    """A copy of the fixture with (file -> (old, new)) text replacements; each old text must exist."""
    root = tmp_path / "nvl72"
    shutil.copytree(FIXTURE, root)
    for name, (old, new) in (replace or {}).items():
        path = root / name
        text = path.read_text()
        assert old in text, f"{old!r} not in {name}"
        path.write_text(text.replace(old, new, 1))
    return root


def _errors(root: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(PolicyError) as raised:
        compile_policy(PolicySource.from_directory(root))
    return [(d.code, f"{Path(d.position.path).name}:{d.position.line}", d.message) for d in raised.value.diagnostics
            if d.severity.value == "error"]


def test_the_fixture_resolves_both_shapes(tmp_path):
    result = compile_policy(PolicySource.from_directory(_policy(tmp_path)))
    pools = {p.name: p for p in result.clusters["gb"].cluster.pools}
    gb200, h100 = pools["gb200"].topology, pools["h100"].topology
    assert gb200.name == "nvlink" and gb200.source == "regular"
    assert gb200.levels == ("nvidia.com/gpu.clique", "kubernetes.io/hostname")
    assert len(gb200.nodes) == 36 and len({n.domains[0] for n in gb200.nodes}) == 2
    assert {n.gpus for n in gb200.nodes} == {4}
    assert all(n.domains[1] == n.name for n in gb200.nodes)
    assert h100.name == "h100" and h100.source.endswith("nodes/h100.yaml")
    racks = sorted({n.domains[:2] for n in h100.nodes})
    assert racks == [("a", "r1"), ("a", "r2"), ("b", "r3")]
    assert sum(1 for n in h100.nodes if n.domains[1] == "r2") == 2  # the irregular rack
    assert all(n.taints and n.ready for n in h100.nodes)


def test_regular_shape_without_hostname_counts_nodes_per_domain(tmp_path):
    root = _policy(tmp_path, {"cluster.yaml": ("          - nodeLabel: kubernetes.io/hostname\n    - name: h100",
                                               "    - name: h100"),
                              "team.yaml": ("          - level: kubernetes.io/hostname\n            size: 1\n", "")})
    pool = next(p for p in compile_policy(PolicySource.from_directory(root)).clusters["gb"].cluster.pools
                if p.name == "gb200")
    assert pool.topology.levels == ("nvidia.com/gpu.clique",)
    assert sorted({n.domains[0] for n in pool.topology.nodes}) == ["gb200-0", "gb200-1"]


REFUSALS = {
    "hostname not last": ({"cluster.yaml": ("          - nodeLabel: example.com/block\n",
                                            "          - nodeLabel: kubernetes.io/hostname\n          - nodeLabel: example.com/block\n")},
                          "KP320", "cluster.yaml:26", "only as the last"),
    "duplicate level": ({"cluster.yaml": ("          - nodeLabel: example.com/rack\n",
                                          "          - nodeLabel: example.com/block\n")},
                        "KP320", "cluster.yaml:27", "appears twice"),
    "regular shape does not fit the nodes": ({"cluster.yaml": ("nodes: 36", "nodes: 40")},
                                             "KP321", "cluster.yaml:9", "not a whole number"),
    "node list has fewer nodes": ({"cluster.yaml": ("nodes: 8", "nodes: 9")},
                                  "KP322", "cluster.yaml:19", "declares 9 nodes"),
    "node list file missing": ({"cluster.yaml": ("nodes/h100.yaml", "nodes/h200.yaml")},
                               "KP322", "cluster.yaml:29", "is not a node export"),
    "node with more GPUs than the pool": ({"cluster.yaml": ("gpusPerNode: 8", "gpusPerNode: 4")},
                                          "KP322", "h100.yaml:", "gpusPerNode 4"),
    "slice size does not divide replicas": ({"team.yaml": ("            size: 18", "            size: 8")},
                                            "KP325", "team.yaml:27", "does not divide replicas (36)"),
    "lower slice layer does not divide the upper": ({"team.yaml": ("            size: 1\n", "            size: 5\n")},
                                                    "KP325", "team.yaml:29", "does not divide the size of the slice layer above (18)"),
    "required level no pool has": ({"team.yaml": ("required: nvidia.com/gpu.clique", "required: example.com/row")},
                                   "KP324", "team.yaml:15", "no pool its team accepts has"),
    "slice above the required level": ({"team.yaml": ("preferred: example.com/rack",
                                                      "preferred: example.com/rack\n      "
                                                      "  slices: [{level: example.com/block, size: 2}]")},
                                       "KP324", "team.yaml:21", "a slice level goes at or below preferred level"),
    "dra-claims with topology": ({"cluster.yaml": ("spec:\n", "spec:\n  gpuAccess: dra-claims\n")},
                                 "KP326", "cluster.yaml:", "does not count ResourceClaim devices"),
    "multi-layer slices before Kueue 0.19": ({"cluster.yaml": ("spec:\n", "spec:\n  kueueVersion: \"0.18\"\n")},
                                             "KP505", "team.yaml:26", "TASMultiLayerTopology"),
    "topology before Kueue 0.14": ({"cluster.yaml": ("spec:\n", "spec:\n  kueueVersion: \"0.13\"\n")},
                                   "KP505", "cluster.yaml:", "TopologyAwareScheduling"),
}


@pytest.mark.parametrize("case", [c for c, v in REFUSALS.items() if v[1] is not None])
def test_refusals_name_the_line_and_cause(tmp_path, case):
    replace, code, where, text = REFUSALS[case]
    errors = _errors(_policy(tmp_path, replace))
    assert any(c == code and w.startswith(where) and text in m for c, w, m in errors), errors


def test_more_than_sixteen_levels_is_refused(tmp_path):
    levels = "".join(f"          - nodeLabel: example.com/l{i}\n            holds: 1\n" for i in range(16))
    root = _policy(tmp_path, {"cluster.yaml": ("          - nodeLabel: nvidia.com/gpu.clique\n", levels
                                               + "          - nodeLabel: nvidia.com/gpu.clique\n")})
    errors = _errors(root)
    assert any(c == "KP320" and "18 topology levels" in m and "at most 16" in m for c, _, m in errors), errors


def test_node_without_a_level_label_is_refused_at_its_line(tmp_path):
    root = _policy(tmp_path)
    export = root / "nodes" / "h100.yaml"
    data = yaml.safe_load(export.read_text())
    del data["items"][3]["metadata"]["labels"]["example.com/rack"]
    export.write_text(yaml.safe_dump(data, sort_keys=False))
    errors = _errors(root)
    assert [(c, m) for c, w, m in errors if w.startswith("h100.yaml:")] == [
        ("KP322", "node 'h100-03' has no label example.com/rack: Kueue cannot tell which domain it is in, so it "
                  "never places a topology request there")]


def test_same_levels_named_twice_is_refused(tmp_path):
    root = _policy(tmp_path)
    cluster = root / "cluster.yaml"
    data = yaml.safe_load(cluster.read_text())
    twin = {**data["spec"]["pools"][0], "name": "gb200-b", "topology": {**data["spec"]["pools"][0]["topology"],
                                                                         "name": "other"}}
    data["spec"]["pools"].append(twin)
    dumper = type("NoAliases", (yaml.SafeDumper,), {"ignore_aliases": lambda self, data: True})
    cluster.write_text(yaml.dump(data, Dumper=dumper, sort_keys=False))
    errors = _errors(root)
    assert any(c == "KP323" and "same levels" in m for c, _, m in errors), errors


def test_a_refusal_through_the_cli_exits_1_without_traceback(tmp_path):
    root = _policy(tmp_path, REFUSALS["slice size does not divide replicas"][0])
    done = run_cli("validate", str(root))
    assert done.returncode == 1
    assert "error[KP325]" in done.stderr and "team.yaml:27:" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_export_with_garbage_values_is_refused_without_traceback(tmp_path):
    root = _policy(tmp_path)
    export = root / "nodes" / "h100.yaml"
    data = yaml.safe_load(export.read_text())
    data["items"][0]["status"]["allocatable"]["nvidia.com/gpu"] = "eight"
    data["items"][1]["status"] = "broken"
    data["items"][2]["spec"]["taints"] = "none"
    export.write_text(yaml.safe_dump(data, sort_keys=False))
    errors = _errors(root)
    assert [(c, m) for c, w, m in errors] == [
        ("KP322", "node 'h100-00': allocatable nvidia.com/gpu is 'eight', not a whole number of GPUs")]
    assert errors[0][1].startswith("h100.yaml:")


def test_a_regular_three_level_shape_nests_its_domains(tmp_path):
    root = _policy(tmp_path, {"cluster.yaml": (
        "          - nodeLabel: example.com/block\n          - nodeLabel: example.com/rack\n"
        "          - nodeLabel: kubernetes.io/hostname\n        nodesFrom: nodes/h100.yaml\n",
        "          - {nodeLabel: example.com/block, holds: 2}\n          - {nodeLabel: example.com/rack, holds: 2}\n"
        "          - nodeLabel: kubernetes.io/hostname\n")})
    pool = next(p for p in compile_policy(PolicySource.from_directory(root)).clusters["gb"].cluster.pools
                if p.name == "h100")
    domains = [n.domains for n in pool.topology.nodes]
    assert len({d[0] for d in domains}) == 2 and len({d[1] for d in domains}) == 4 and len({d[2] for d in domains}) == 8
    # Each rack sits in one block, each host in one rack.
    assert all(d[1].startswith(d[0] + "-") and d[2].startswith(d[1] + "-") for d in domains)
    assert domains[0] == ("h100-0", "h100-0-0", "h100-0-0-0") and domains[-1] == ("h100-1", "h100-1-1", "h100-1-1-1")


def test_dra_extended_resource_with_topology_is_a_warning(tmp_path):
    root = _policy(tmp_path, {"cluster.yaml": ("spec:\n", "spec:\n  gpuAccess: dra-extended-resource\n  kubernetesVersion: \"1.36\"\n")})
    result = compile_policy(PolicySource.from_directory(root))
    warned = [d for d in result.warnings if d.code == "KP326"]
    assert len(warned) == 2 and "counts node allocatable" in warned[0].message


def test_a_node_export_no_pool_names_is_a_warning(tmp_path):
    root = _policy(tmp_path)
    shutil.copy(root / "nodes" / "h100.yaml", root / "nodes" / "h100-old.yaml")
    warned = [d for d in compile_policy(PolicySource.from_directory(root)).warnings if d.code == "KP322"]
    assert [(Path(d.position.path).name, d.message) for d in warned] == [
        ("h100-old.yaml", "nvl72/nodes/h100-old.yaml is a node export no pool names in topology.nodesFrom or allocatable.nodesFrom; it is ignored")]
