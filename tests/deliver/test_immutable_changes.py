"""`diff` / `pr` warn when a change touches what Kueue freezes: a ResourceFlavor's nodeLabels,
tolerations and topologyName once topologyName is set, a Topology's levels. Both sides are real
compiles of the topology fixture (tests/compiler/topology_policies/nvl72)."""

from __future__ import annotations

import shutil
from pathlib import Path

from compiler.deliver.render import render_diff
from compiler.deliver.semantic_diff import CompiledSide, diff_sides
from compiler.stages.pipeline import PolicySource, compile_policy

FIXTURE = Path(__file__).parents[1] / "compiler" / "topology_policies" / "nvl72"


def _side(tmp_path: Path, label: str, old: str | None = None, new: str | None = None) -> CompiledSide:
    root = tmp_path / label / "nvl72"
    shutil.copytree(FIXTURE, root)
    if old is not None:
        cluster = root / "cluster.yaml"
        text = cluster.read_text()
        assert old in text
        cluster.write_text(text.replace(old, new, 1))
    result = compile_policy(PolicySource.from_directory(root))
    return CompiledSide(label, result.reports, result.files)


def _warnings(tmp_path: Path, old: str, new: str) -> list[str]:
    diff = diff_sides(_side(tmp_path, "before"), _side(tmp_path, "after", old, new))
    return [w for cluster in diff.clusters for w in cluster.warnings]


def test_new_tolerations_on_a_topology_flavor_mean_delete_and_recreate(tmp_path):
    found = _warnings(tmp_path, "        - key: nvidia.com/gpu\n          effect: NoSchedule",
                      "        - key: nvidia.com/gpu\n          effect: NoExecute")
    frozen = [w for w in found if w.startswith("ResourceFlavor")]
    assert len(frozen) == 1, found
    assert frozen[0].startswith("ResourceFlavor h100 changes tolerations, which Kueue refuses to update once "
                                "topologyName is set")
    assert "Workloads admitted on it keep running" in frozen[0]
    # A NoExecute toleration no longer tolerates the nodes' NoSchedule taint: the verdicts, which
    # place pods on the pool's nodes, say so as well.
    assert any("cannot place it on flavor h100" in w for w in found if w not in frozen), found


def test_new_node_labels_and_topology_name(tmp_path):
    found = _warnings(tmp_path, "        name: nvlink\n", "        name: nvl72\n")
    assert any(w.startswith("ResourceFlavor gb200 changes topologyName") for w in found), found
    found = _warnings(tmp_path / "labels", "      gpusPerNode: 4\n",
                      "      gpusPerNode: 4\n      nodeLabels: {cloud.google.com/gke-nodepool: gb200}\n")
    assert any(w.startswith("ResourceFlavor gb200 changes nodeLabels") for w in found), found


def test_new_levels_of_a_topology_are_refused_in_place(tmp_path):
    found = _warnings(tmp_path, "          - nodeLabel: nvidia.com/gpu.clique\n            holds: 18\n",
                      "          - nodeLabel: nvidia.com/gpu.clique\n            holds: 18\n"
                      "          - nodeLabel: example.com/tray\n            holds: 1\n")
    assert [w for w in found if w.startswith("Topology nvlink changes its levels")], found


def test_a_change_kueue_accepts_in_place_gives_no_warning(tmp_path):
    # Another pool size changes quota, not the frozen fields; the markdown has no such warning.
    diff = diff_sides(_side(tmp_path, "before"), _side(tmp_path, "after", "nodes: 36", "nodes: 54"))
    assert not [w for c in diff.clusters for w in c.warnings if "refuses" in w]
    assert "refuses to update" not in render_diff(diff, "markdown")


def test_the_warning_reaches_the_rendered_diff(tmp_path):
    diff = diff_sides(_side(tmp_path, "before"),
                      _side(tmp_path, "after", "        name: nvlink\n", "        name: nvl72\n"))
    assert "ResourceFlavor gb200 changes topologyName" in render_diff(diff, "markdown")
