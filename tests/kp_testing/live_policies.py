"""A small two-team policy for the end-to-end tier, in each GPU access mode, GitOps tool and
Kueue version: team a (priority high, guaranteed 8, burst 8) and team b (two namespaces,
guaranteed 8, no burst), with a guaranteed, a borrowing and a never workload among them."""

from __future__ import annotations

from pathlib import Path

from kp_testing.policies import write_policy

CLUSTER = """\
apiVersion: kueue-policy/v1alpha1
kind: Cluster
metadata:
  name: lab
spec:
  kubernetesVersion: "1.36"
  kueueVersion: "{kueue}"
  gpuAccess: {access}
  gitops: {gitops}
  resourcesPerGpu: {{cpu: "16", memory: 128Gi}}
  pools:
    - {{name: od, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}}
    - {{name: spot, gpu: H100-80GB, nodes: 1, gpusPerNode: 8, capacity: spot}}
  cohorts:
    - name: research
  priorities:
    - {{name: high, value: 100}}
    - {{name: low, value: 0, default: true}}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
"""

TEAMS = {
    "teams/a.yaml": """\
        apiVersion: kueue-policy/v1alpha1
        kind: Team
        metadata: {name: a}
        spec:
          cluster: lab
          cohort: research
          namespaces: [a-train]
          gpus: {guaranteed: 8, burst: 8}
          priority: high
          workloads:
            - {name: train, replicas: 1, gpus: 8}
            - {name: wide, replicas: 2, gpus: 8}
        """,
    "teams/b.yaml": """\
        apiVersion: kueue-policy/v1alpha1
        kind: Team
        metadata: {name: b}
        spec:
          cluster: lab
          cohort: research
          namespaces: [b-one, b-two]
          gpus: {guaranteed: 8}
          workloads:
            - {name: sweep, replicas: 4, gpus: 1}
            - {name: huge, replicas: 3, gpus: 8}
        """,
}


def small_policy(root: Path, *, access: str = "device-plugin", gitops: str = "kustomize",
                 kueue: str = "0.19") -> Path:
    return write_policy(root, {"cluster.yaml": CLUSTER.format(access=access, gitops=gitops, kueue=kueue),
                               **TEAMS})
