"""Inventories against pool sizes: does the cluster hold the GPUs and nodes the policy declares?

A selector that matches one device passes the per-class check, yet a pool of 12 H100 nodes whose
inventory holds one is a quota Kueue hands out for GPUs that do not exist: jobs are admitted and
their pods pend. The compiled report (report.json) says what each pool declares; the compiled
DeviceClasses carry the GPU model they select (`kueue-policy.io/gpu-model`). ResourceSlices
name nodes, not pools, so pools of one model are added up and compared with the devices their
model's class matches: whole GPUs with the whole-GPU class, MIG instances with each profile's
class.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.core import codes
from compiler.core.errors import Diagnostic
from compiler.core.resources import GPU_RESOURCE, MIG_PREFIX
from compiler.dra.inventory import DeviceClassSpec, InventoryDevice


@dataclass(frozen=True)
class PoolShortfall:
    device_class: str
    pools: tuple[str, ...]
    declared_devices: int
    declared_nodes: int | None     # whole GPUs only (a MIG instance's node count is the pool's too)
    devices: int
    nodes: int

    def message(self, what: str) -> str:
        nodes = f" on {self.declared_nodes} node(s)" if self.declared_nodes is not None else ""
        return (f"pool(s) {', '.join(self.pools)} declare {self.declared_devices} {what}{nodes}; the inventory "
                f"has {self.devices} device(s) on {self.nodes} node(s) matching DeviceClass {self.device_class}")

    def to_dict(self) -> dict:
        return {"deviceClass": self.device_class, "pools": list(self.pools), "declaredDevices": self.declared_devices,
                "declaredNodes": self.declared_nodes, "devices": self.devices, "nodes": self.nodes}


def _declared(pools: list[dict], model: str, resource: str) -> tuple[list[str], int, int | None]:
    if resource == GPU_RESOURCE:
        chosen = [p for p in pools if p.get("gpu") == model and p.get("mig", "none") == "none"]
        return [p["name"] for p in chosen], sum(int(p.get("gpus") or 0) for p in chosen), \
            sum(int(p.get("nodes") or 0) for p in chosen)
    profile = resource[len(MIG_PREFIX):]
    chosen = [p for p in pools if p.get("gpu") == model and (p.get("migInstances") or {}).get(profile)]
    return [p["name"] for p in chosen], sum(int(p["migInstances"][profile]) for p in chosen), None


def pool_shortfalls(report: dict, classes: list[DeviceClassSpec],
                    matches: dict[str, list[InventoryDevice]]) -> tuple[list[PoolShortfall], list[Diagnostic]]:
    """Per compiled DeviceClass, the pools' declared devices (and nodes) against the inventory."""
    by_name = {c.name: c for c in classes}
    resource_of = {name: resource for resource, names in (report.get("deviceClasses") or {}).items()
                   for name in names}
    pools = list(report.get("pools") or [])
    shortfalls: list[PoolShortfall] = []
    diagnostics: list[Diagnostic] = []
    for name in sorted(resource_of):
        spec = by_name.get(name)
        if spec is None or spec.gpu_model is None:
            continue
        resource = resource_of[name]
        names, declared, declared_nodes = _declared(pools, spec.gpu_model, resource)
        if not names:
            continue
        matched = matches.get(name, [])
        nodes = len({d.node for d in matched})
        if len(matched) < declared or (declared_nodes is not None and nodes < declared_nodes):
            shortfall = PoolShortfall(name, tuple(names), declared, declared_nodes, len(matched), nodes)
            shortfalls.append(shortfall)
            what = f"{spec.gpu_model} GPU(s)" if resource == GPU_RESOURCE else \
                f"{spec.gpu_model} {resource[len(MIG_PREFIX):]} MIG instance(s)"
            diagnostics.append(Diagnostic(codes.POOL_DEVICES_SHORT, shortfall.message(what), spec.position))
    return shortfalls, diagnostics
