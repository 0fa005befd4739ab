"""The policy of issue 27's ceiling: team t is guaranteed 48 GPUs with a burst of 24 and accepts
two pools (80 on-demand GPUs, 32 spot), so the reference's "may run up to 72" is tested where a
per-flavor burst would let it run 96 (48 + 24 on-demand, 24 spot)."""

from __future__ import annotations

from pathlib import Path

from kp_testing.policies import team, write_policy

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: ceil
spec:
  kubernetesVersion: "1.36"
  kueueVersion: "0.19"
  gpuAccess: device-plugin
  resourcesPerGpu: {cpu: "16", memory: 128Gi}
  pools:
    - {name: od, gpu: H100-80GB, nodes: 10, gpusPerNode: 8, capacity: on-demand}
    - {name: spot, gpu: H100-80GB, nodes: 4, gpusPerNode: 8, capacity: spot}
  cohorts:
    - name: lab
"""

GUARANTEED, BURST = 48, 24
CEILING = GUARANTEED + BURST


def ceiling_policy(root: Path) -> Path:
    return write_policy(root, {"cluster.yaml": CLUSTER, "teams/t.yaml": team("t", f"""\
        cohort: lab
        namespaces: [t]
        gpus: {{guaranteed: {GUARANTEED}, burst: {BURST}}}
        capacity: on-demand-first
        """, cluster="ceil")})


def gpu_job(name: str, namespace: str, gpus: int, created: str | None = None) -> dict:
    """A one-pod batch Job asking for `gpus` whole GPUs (and their cpu/memory share)."""
    metadata: dict = {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "default"}}
    if created is not None:
        metadata["creationTimestamp"] = created
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
            "spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": "x", "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus), "cpu": str(16 * gpus),
                                 "memory": f"{128 * gpus}Gi"},
                    "limits": {"nvidia.com/gpu": str(gpus)}}}]}}}}
