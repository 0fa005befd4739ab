"""report.json and REPORT.md: capacity, quotas and admissibility, per cluster.

report.json is the machine-readable artifact other tools (the `diff` command, CI) read; its
shape is documented in README.md and only grows.
"""

from __future__ import annotations

from typing import Any

from compiler.stages.admissibility import Verdict
from compiler.stages.build import BuildResult
from compiler.stages.ceilings import team_ceilings
from compiler.core.resources import GPU_RESOURCE
from compiler.stages.resolved_model import ResolvedCluster
from compiler.stages.plan import Placement
from compiler.core.humanize import reason_markdown, teams_by_name
from compiler.stages.quota_diagram import mermaid
from compiler.core.templating import render_text
from compiler.stages.topology import podset_annotations
from compiler.stages.topology_verdicts import placement_assumptions


def _topology_summary(topology) -> dict[str, Any]:
    """A pool's topology in report.json: its Topology, levels, shape and how many domains each level has."""
    domains = {level: len({node.domains[:depth + 1] for node in topology.nodes})
               for depth, level in enumerate(topology.levels)}
    return {"name": topology.name, "levels": list(topology.levels), "shape": topology.source,
            "nodes": len(topology.nodes), "domains": domains}


def _topology_requests(cluster: ResolvedCluster) -> list[dict[str, Any]]:
    """The pod-set annotations each declared workload with a topology carries (team, name order)."""
    return [{"team": team.name, "workload": workload.spec.name,
             "annotations": podset_annotations(workload.spec.topology)}
            for team in cluster.teams for workload in team.workloads if workload.spec.topology is not None]


def _mig_summary(plan) -> str:
    return ", ".join(f"{count} x {profile}" for profile, count in plan.instances().items())


def build_report(cluster: ResolvedCluster, placement: Placement, build: BuildResult,
                 verdicts: list[Verdict]) -> dict[str, Any]:
    spec = cluster.spec
    pools = []
    for pool in cluster.pools:
        guaranteed = placement.guaranteed_on(pool.name)
        plan = placement.mig_plans.get(pool.name)
        entry: dict[str, Any] = {
            "name": pool.name, "gpu": pool.spec.gpu, "capacity": pool.spec.capacity, "nodes": pool.spec.nodes,
            "gpusPerNode": pool.spec.gpusPerNode, "gpus": pool.gpus,
            "guaranteed": guaranteed if not pool.is_mig else None,
            "shared": max(0, pool.gpus - guaranteed) if not pool.is_mig else None,
            "mig": ("planned" if pool.spec.mig == "planned" else "fixed") if pool.is_mig else "none",
        }
        if pool.topology is not None:  # only then: a policy without topology reports as before
            entry["topology"] = _topology_summary(pool.topology)
        if plan is not None:
            entry["migInstances"] = plan.instances()
            entry["migGuaranteed"] = dict(sorted(placement.mig_guaranteed_on(pool.name).items()))
            entry["migSummary"] = _mig_summary(plan)
        pools.append(entry)
    teams = []
    ceilings = team_ceilings(cluster, build)
    for team in cluster.teams:
        flavors = []
        ceiling = ceilings.get(team.name)
        reach = {(row.flavor, row.resource): row for row in (ceiling.flavors if ceiling else ())}
        for flavor, resources in build.quota.get(team.name, {}).items():
            for resource, quota in resources.items():
                if resource in ("cpu", "memory"):
                    continue
                if resource != GPU_RESOURCE and quota.nominal == 0 and quota.borrowing_limit is None:
                    continue
                row = reach[(flavor, resource)]
                # GPUs and MIG instances are whole devices: their amounts are integers.
                flavors.append({"flavor": flavor, "resource": resource,
                                "guaranteed": int(quota.nominal),
                                "burst": None if quota.borrowing_limit is None else int(quota.borrowing_limit),
                                "lend": None if quota.lending_limit is None else int(quota.lending_limit),
                                "reachable": row.reachable, "lendable": row.lendable})
        teams.append({"name": team.name, "cohort": team.cohort, "namespaces": sorted(team.namespaces),
                      "priority": team.priority, "weight": team.weight, "capacity": team.spec.capacity,
                      "gpus": team.spec.gpus.model_dump(), "mig": dict(sorted(team.mig.items())),
                      "flavors": flavors, "queueing": team.queueing, "policyFile": team.located.path,
                      # Whole GPUs over every pool: the team-wide figures burst and lend are about.
                      "ceiling": ceiling.totals() if ceiling else {"guaranteed": 0, "reachable": 0, "lendable": 0}})
    mig_plan = [{"pool": name, "gpu": plan.pool.spec.gpu, "gpus": plan.pool.gpus, "plannedGpus": plan.planned_gpus,
                 "lowerBound": plan.lower_bound, "fixed": plan.fixed, "demand": plan.demand,
                 "layouts": [layout.to_dict() for layout in plan.layouts],
                 "nodeGroups": build.mig_nodes.get(name, [])}
                for name, plan in sorted(placement.mig_plans.items())]
    report: dict[str, Any] = {
        "cluster": cluster.name,
        "policyFile": cluster.located.path,
        "kubernetesVersion": spec.kubernetesVersion,
        "kueueVersion": spec.kueueVersion,
        "kueueApiVersion": cluster.kueue_api_version,
        "gpuAccess": spec.gpuAccess,
        "gitops": spec.gitops.tool,
        "rootCohort": cluster.root_cohort,
        "pools": pools,
        "cohorts": [{"name": c.spec.name, "parent": c.parent, "weight": c.spec.weight} for c in cluster.cohorts],
        "priorities": [{"name": p.name, "value": p.value, "default": p.default} for p in cluster.priorities],
        "teams": teams,
        "workloads": [v.to_dict() for v in verdicts],
        "migPlan": mig_plan or None,
        "deviceClasses": {resource: classes for resource, classes in sorted(build.resource_classes.items())},
        "kueueConfiguration": build.kueue_config_fragment,
    }
    requests = _topology_requests(cluster)
    if requests:
        report["topologyRequests"] = requests
    assumed = placement_assumptions(cluster)
    if assumed:
        report["topologyPlacement"] = [pool.to_dict() for pool in assumed]
    return report


def render_markdown(report: dict[str, Any]) -> str:
    teams = teams_by_name(report)
    reasons = [reason_markdown(workload, teams) for workload in report["workloads"]]
    return render_text("report/REPORT.md.j2", report=report, source=report["policyFile"], reasons=reasons,
                       quota_tree=mermaid(report)).rstrip("\n") + "\n"
