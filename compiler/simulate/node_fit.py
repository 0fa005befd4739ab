"""Jobs that ran on a pool whose nodes cannot hold their pods.

Kueue admits a workload on quota: on a pool without a topology it picks the first flavor with
room, whatever the size of that pool's nodes. A job whose pods ask 8 GPUs, admitted on a pool of
1-GPU nodes, holds the quota there while its pods wait Pending for a node that does not exist.
The simulation places pods where the quota says (only a pool with a topology places them on
nodes), so it counts such a job as running. It says so after the run, per team and pool:
`simulate` as a warning, and `capacity` refuses a candidate whose figures rest on it.
(Jobs whose pods fit no pool of their team at all are warned about before the run, by
`driver.pods_larger_than_nodes`: no candidate changes a node's size, so they are left out here.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compiler.simulate.driver import JobRun
    from compiler.stages.resolved_model import ResolvedCluster


@dataclass(frozen=True)
class StrandedPods:
    """A team's jobs that ran on one pool with pods larger than its nodes."""

    team: str
    pool: str
    jobs: int
    largest_pod: int   # GPUs a pod asks
    node_gpus: int     # GPUs a node of the pool has

    def message(self) -> str:
        return (f"{self.jobs} job(s) of team '{self.team}' ran on pool '{self.pool}' with pods of up to "
                f"{self.largest_pod} GPUs, more than its nodes have ({self.node_gpus}): Kueue admits them there on "
                "quota, but on a cluster their pods would wait Pending; the simulation counts them as running")

    def miss(self) -> str:
        return (f"{self.jobs} job(s) of {self.team} run on pool {self.pool} with pods of {self.largest_pod} GPUs "
                f"> its nodes' {self.node_gpus} (their pods would wait Pending)")


def stranded_pods(runs: list[JobRun], cluster: ResolvedCluster) -> list[StrandedPods]:
    """Per team and pool (whole GPUs, no topology), the jobs that started there with pods larger
    than the pool's nodes, when some pool of their team could hold them."""
    pools = {p.name: p for p in cluster.pools if p.topology is None and not p.is_mig}
    largest_node = {t.name: max((p.spec.gpusPerNode for p in t.gpu_pools), default=0) for t in cluster.teams}
    found: dict[tuple[str, str], tuple[int, int]] = {}   # (team, pool) -> (jobs, largest pod)
    for run in runs:
        job = run.job
        if (run.started is None or not run.flavor or not job.gpus or job.mig is not None or job.gpuMemory is not None
                or job.gpus > largest_node.get(job.team, 0)):
            continue
        for flavor in run.flavor.split(", "):
            pool = pools.get(flavor)
            if pool is not None and job.gpus > pool.spec.gpusPerNode:
                count, pod = found.get((job.team, flavor), (0, 0))
                found[(job.team, flavor)] = (count + 1, max(pod, job.gpus))
    return [StrandedPods(team, pool, count, pod, pools[pool].spec.gpusPerNode)
            for (team, pool), (count, pod) in sorted(found.items())]
