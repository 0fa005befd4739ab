"""ResourceFlavors -> pools: the pool fields where they say the same, the flavor's spec otherwise.

A pool compiles to a ResourceFlavor whose nodeLabels, nodeTaints and tolerations come from its
`nodeLabels` and `taints` (the tolerations mirroring the taints). A flavor of exactly that shape
becomes those fields; any other (no node labels, tolerations of their own, a topologyName) keeps
its spec as written in `flavorSpec`. The pool's size and GPU model do not change any Kueue
object: they come from the Nodes of the export when it has them, and are guessed otherwise (said
with KP943).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from compiler.core.quantity import QuantityError, parse_quantity
from compiler.importer.export import ExportedObject

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
MODEL_PATTERN = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# Labels cloud providers and Karpenter put on spot nodes.
SPOT_LABELS = {"karpenter.sh/capacity-type": "spot", "cloud.google.com/gke-spot": "true",
               "eks.amazonaws.com/capacityType": "SPOT", "kubernetes.azure.com/scalesetpriority": "spot"}
DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class PoolGuess:
    """What the export says (or does not say) about a flavor's nodes."""

    gpu: str
    nodes: int
    gpus_per_node: int
    from_nodes: bool


def _toleration_of(taint: dict[str, Any]) -> dict[str, Any]:
    """The toleration the compiler writes for a pool taint (templates/kueue/resourceflavor.yaml.j2)."""
    if taint.get("value"):
        return {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}
    return {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}


def natural_fields(spec: dict[str, Any]) -> dict[str, Any] | None:
    """`{nodeLabels, taints}` of a pool compiling to exactly this flavor spec, or None."""
    if set(spec) - {"nodeLabels", "nodeTaints", "tolerations"}:
        return None
    labels = spec.get("nodeLabels") or {}
    if not isinstance(labels, dict) or not labels or len(labels) > 8:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) and LABEL_KEY.match(k) and LABEL_VALUE.match(v)
               and len(v) <= 63 for k, v in labels.items()):
        return None
    taints = spec.get("nodeTaints") or []
    if not isinstance(taints, list) or len(taints) > 8:
        return None
    written = []
    for taint in taints:
        if not isinstance(taint, dict) or set(taint) - {"key", "value", "effect"} or \
                taint.get("effect") not in EFFECTS or not isinstance(taint.get("key"), str) or \
                not LABEL_KEY.match(taint["key"]) or not LABEL_VALUE.match(str(taint.get("value") or "")):
            return None
        written.append({"key": taint["key"], "value": str(taint.get("value") or ""), "effect": taint["effect"]})
    if (spec.get("tolerations") or []) != [_toleration_of(t) for t in written]:
        return None
    fields: dict[str, Any] = {"nodeLabels": dict(sorted(labels.items()))}
    if written:
        fields["taints"] = [{k: v for k, v in t.items() if k != "value" or v} for t in written]
    return fields


def capacity_of(labels: dict[str, Any]) -> str:
    spot = any(str(labels.get(key, "")).lower() == value.lower() for key, value in SPOT_LABELS.items())
    return "spot" if spot else "on-demand"


def _matches(node: ExportedObject, labels: dict[str, Any]) -> bool:
    have = node.doc["metadata"].get("labels") or {}
    return all(have.get(key) == value for key, value in labels.items())


def _gpus_of(node: ExportedObject) -> int:
    status = node.doc.get("status") if isinstance(node.doc.get("status"), dict) else {}
    value = (status.get("allocatable") or {}).get(GPU_RESOURCE) or (status.get("capacity") or {}).get(GPU_RESOURCE)
    try:
        return int(parse_quantity(value)) if value is not None else 0
    except QuantityError:
        return 0


def guess_pool(flavor: ExportedObject, nodes: list[ExportedObject], nominal_gpus: Fraction) -> PoolGuess:
    """The pool's GPU model and size: from the Nodes its nodeLabels select, else from its quotas."""
    labels = flavor.spec.get("nodeLabels") if isinstance(flavor.spec.get("nodeLabels"), dict) else {}
    mine = [node for node in nodes if labels and _matches(node, labels)]
    product = labels.get(GPU_PRODUCT_LABEL)
    if product is None and mine:
        product = (mine[0].doc["metadata"].get("labels") or {}).get(GPU_PRODUCT_LABEL)
    gpu = str(product) if product and MODEL_PATTERN.match(str(product)) else flavor.name
    if mine:
        per_node = max(1, min(64, max(_gpus_of(node) for node in mine)))
        return PoolGuess(gpu[:63], min(len(mine), 100_000), per_node, True)
    total = max(1, min(int(nominal_gpus), 6_400_000))
    if total % DEFAULT_GPUS_PER_NODE == 0:
        return PoolGuess(gpu[:63], min(total // DEFAULT_GPUS_PER_NODE, 100_000), DEFAULT_GPUS_PER_NODE, False)
    return PoolGuess(gpu[:63], min(total, 100_000), 1, False)
