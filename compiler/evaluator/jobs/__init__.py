"""Job kinds -> the Workloads Kueue v0.19 would create for them: one adapter per integration.

Laid out as Kueue's pkg/controller/jobs: one module per integration (batch Job, JobSet, the
Kubeflow training-operator jobs, MPIJob, TrainJob, RayJob, RayCluster, LeaderWorkerSet, Pod),
each saying only how its kind turns into pod sets (names, counts, minCount, templates) and the
Workload name; everything the kinds share (queue label, priority, charging pod templates,
validation) is done once by the loader, as Kueue's jobframework does. A new framework is one
module here exposing `ADAPTERS = [Adapter(group, kinds, build)]`; the registry below finds it.

Registry keyed by (API group, kind): the version is not part of the key, as Kueue's webhooks
serve the versions its integrations read alike.
"""

from __future__ import annotations

import importlib
import pkgutil

from compiler.evaluator.jobs.base import (
    Adapter, JobContext, JobObject, JobWorkload, PodSetSpec, Rejected, Unusable, workload_name,
)

__all__ = ["Adapter", "JobContext", "JobObject", "JobWorkload", "PodSetSpec", "Rejected", "Unusable",
           "adapter_for", "registered_kinds", "workload_name"]


def _discover() -> dict[tuple[str, str], Adapter]:
    registry: dict[tuple[str, str], Adapter] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for adapter in getattr(module, "ADAPTERS", []):
            for kind in adapter.kinds:
                if (adapter.group, kind) in registry:
                    raise RuntimeError(f"two adapters for {kind}.{adapter.group}")
                registry[(adapter.group, kind)] = adapter
    return registry


_REGISTRY = _discover()


def adapter_for(group: str, kind: str) -> Adapter | None:
    """The integration for objects of this API group and kind, or None."""
    return _REGISTRY.get((group, kind))


def registered_kinds() -> list[tuple[str, str]]:
    return sorted(_REGISTRY)
