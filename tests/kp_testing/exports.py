"""Kueue exports as `kubectl get workloads -A -o yaml` writes them: a `kind: List` of Workloads
with their creation time and QuotaReserved/Finished conditions."""

from __future__ import annotations

import json

EXPORT = """\
apiVersion: v1
kind: List
items:
{items}
"""


def exported(name, namespace, created, reserved=None, finished=None, gpus=4, count=2) -> dict:
    """One exported Workload: `reserved`/`finished` are RFC 3339 times, or None when it never was."""
    conditions = []
    if reserved:
        conditions.append({"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                           "lastTransitionTime": reserved})
    if finished:
        conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded",
                           "lastTransitionTime": finished})
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
            "spec": {"queueName": "default", "podSets": [{"name": "main", "count": count, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}}}]},
            "status": {"conditions": conditions}}


def export_text(items: list[dict]) -> str:
    return EXPORT.format(items="\n".join("  - " + json.dumps(item) for item in items))
