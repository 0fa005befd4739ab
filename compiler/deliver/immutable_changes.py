"""Changes Kueue refuses to make in place, found in the compiled files of both sides of a diff.

Kueue's CRD rules make a ResourceFlavor's nodeLabels, tolerations and topologyName immutable once
it has a topologyName, and a Topology's levels immutable always. A GitOps sync of such a change
fails on that object; the change only lands by deleting and recreating it, which Kueue slows
down on purpose: its resource-in-use finalizer keeps a flavor Terminating while a ClusterQueue
lists it, and a Topology while a flavor names it.
"""

from __future__ import annotations

from typing import Any, Mapping

from compiler.core import yamlio

FLAVOR_DIR = "kueue/resourceflavors/"
TOPOLOGY_DIR = "kueue/topologies/"
# The fields Kueue's ResourceFlavor CEL rules freeze once topologyName is set.
FROZEN_FLAVOR_FIELDS = ("topologyName", "nodeLabels", "tolerations")


def _objects(files: Mapping[str, str], folder: str) -> dict[str, dict[str, Any]]:
    """name -> object of the files under <cluster>/<folder>."""
    found = {}
    for path, text in files.items():
        if folder in path and path.endswith(".yaml"):
            data = yamlio.load(text)
            if isinstance(data, dict) and isinstance(data.get("metadata"), dict):
                found[str(data["metadata"].get("name"))] = data
    return found


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def flavor_warnings(files_before: Mapping[str, str], files_after: Mapping[str, str]) -> list[str]:
    """One warning per ResourceFlavor whose frozen fields change, and per Topology whose levels do."""
    warnings = []
    old_flavors, new_flavors = _objects(files_before, FLAVOR_DIR), _objects(files_after, FLAVOR_DIR)
    for name in sorted(set(old_flavors) & set(new_flavors)):
        old, new = _spec(old_flavors[name]), _spec(new_flavors[name])
        if "topologyName" not in old:
            continue  # without a topology Kueue updates all of them in place
        changed = [field for field in FROZEN_FLAVOR_FIELDS if old.get(field) != new.get(field)]
        if changed:
            warnings.append(
                f"ResourceFlavor {name} changes {', '.join(changed)}, which Kueue refuses to update once "
                "topologyName is set: the sync fails on it until it is deleted and recreated. Kueue keeps a "
                "deleted flavor Terminating while any ClusterQueue still lists it, so rename the pool (a new "
                "flavor; the old one goes once no queue lists it) or take it out of the teams' queues first. "
                "Workloads admitted on it keep running with their admission; pending ones are not admitted on "
                "it until it is back.")
    old_topologies, new_topologies = _objects(files_before, TOPOLOGY_DIR), _objects(files_after, TOPOLOGY_DIR)
    for name in sorted(set(old_topologies) & set(new_topologies)):
        old_levels = _spec(old_topologies[name]).get("levels")
        new_levels = _spec(new_topologies[name]).get("levels")
        if old_levels != new_levels:
            warnings.append(
                f"Topology {name} changes its levels, which Kueue refuses to update: the sync fails on it until it "
                "is deleted and recreated, and Kueue keeps it Terminating while a ResourceFlavor names it. Give the "
                "pool's topology a new name instead (topology.name); workloads admitted on its flavors keep running.")
    return warnings
