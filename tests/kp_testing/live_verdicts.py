"""The compiler's verdicts put to a live Kueue: each declared workload submitted as the Job its
team would write, on a sandbox running the compiled tree.

Two worlds per workload, as docs/concepts.md defines the verdicts:

  contended  every other team runs jobs using all of its guarantee (its ClusterQueue's nominal
             quota, flavor by flavor); then the workload's Job is created.
  idle       the workload's Job alone.

  guaranteed  admitted in the contended world, on the verdict's flavor, with its ClusterQueue
              borrowing nothing;
  borrowing   admitted in the idle world; in the contended world it is not admitted, or only by
              borrowing (what the cohorts hold themselves stays free there: a workload that needs
              more than its team's quota may still borrow that, and under fair sharing Kueue
              may even preempt another borrower for it);
  never       admitted in neither (for a quota reason; a structural one, a pod no node can
              hold, is Kueue's to admit and the pods' to never start).

Everything about the cluster (ClusterQueues, quotas, flavors, LocalQueues, claim templates) is
read from the live API server, not from the compiler: only the declared workloads and their
verdicts come from the policy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from compiler.stages.admissibility import pod_request
from compiler.stages.pipeline import PolicySource, compile_policy
from compiler.core.quantity import parse_quantity
from kp_testing.sandbox import LiveCluster, wait_until

GPU_PREFIX = "nvidia.com/"
DECIDE_SECONDS = 4.0   # how long a pending Job is watched after Kueue first said why it waits


@dataclass(frozen=True)
class DeclaredJob:
    team: str
    name: str
    replicas: int
    request: dict[str, Fraction]
    verdict: str
    flavor: str | None
    structural: bool
    gang: bool = False   # its replicas talk to each other: the team writes a JobSet


@dataclass
class LiveQuota:
    """What the live API server holds, read once after the tree is applied."""

    nominal: dict[str, dict[str, dict[str, Fraction]]]       # queue -> flavor -> resource -> quota
    local_queue: dict[str, tuple[str, str]]                  # queue -> (namespace, LocalQueue)
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # flavor -> nodeLabels
    claim_templates: dict[str, list[dict]] = field(default_factory=dict)   # namespace -> templates
    device_classes: dict[str, str] = field(default_factory=dict)           # DeviceClass -> resource


def _quantities(resources: list[dict], key: str) -> dict[str, Fraction | None]:
    return {r["name"]: (parse_quantity(str(r[key])) if key in r else None) for r in resources}


def read_live_quota(cluster: LiveCluster, deviceclass_mappings: list[dict]) -> LiveQuota:
    nominal = {}
    for queue in cluster.items("clusterqueues"):
        name = queue["metadata"]["name"]
        nominal[name] = {}
        for group in queue["spec"].get("resourceGroups") or []:
            for flavor in group["flavors"]:
                nominal[name][flavor["name"]] = {r: q or Fraction(0) for r, q in
                                                 _quantities(flavor["resources"], "nominalQuota").items()}
    local = {}
    for queue in sorted(cluster.items("localqueues"), key=lambda q: (q["metadata"]["namespace"], q["metadata"]["name"])):
        local.setdefault(queue["spec"]["clusterQueue"], (queue["metadata"]["namespace"], queue["metadata"]["name"]))
    templates: dict[str, list[dict]] = {}
    for template in cluster.items("resourceclaimtemplates", api="/apis/resource.k8s.io/v1"):
        templates.setdefault(template["metadata"]["namespace"], []).append(template)
    classes = {name: mapping["name"] for mapping in deviceclass_mappings for name in mapping["deviceClassNames"]}
    labels = {flavor["metadata"]["name"]: flavor["spec"].get("nodeLabels") or {}
              for flavor in cluster.items("resourceflavors")}
    return LiveQuota(nominal, local, labels, templates, classes)


def declared_jobs(policy: Path) -> list[DeclaredJob]:
    """Every declared workload with its verdict and what one replica asks for."""
    result = compile_policy(PolicySource.from_directory(policy))
    jobs = []
    for artifacts in result.clusters.values():
        cluster = artifacts.cluster
        pools = {pool.flavor: pool for pool in cluster.pools}
        teams = {team.name: team for team in cluster.teams}
        for verdict in artifacts.verdicts:
            team = teams[verdict.team]
            workload = next(w for w in team.workloads if w.spec.name == verdict.workload)
            pool = pools.get(verdict.flavor) if verdict.flavor else (team.flavor_pools or [None])[0]
            structural = verdict.verdict == "never" and "node" in verdict.reason
            jobs.append(DeclaredJob(team.name, workload.spec.name, workload.spec.replicas,
                                    pod_request(cluster, workload, pool), verdict.verdict,
                                    verdict.flavor, structural, bool(workload.spec.gang)))
    return jobs


def _show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value) * 1000:.0f}m"


def _template_for(quota: LiveQuota, namespace: str, resource: str, count: int) -> str | None:
    """The team's claim template for `count` devices counted as `resource`, if it has one."""
    for template in sorted(quota.claim_templates.get(namespace, []), key=lambda t: t["metadata"]["name"]):
        requests = template["spec"]["spec"]["devices"]["requests"]
        if len(requests) != 1:
            continue
        exactly = requests[0].get("exactly") or {}
        if quota.device_classes.get(exactly.get("deviceClassName")) == resource and \
                exactly.get("count", 1) == count:
            return template["metadata"]["name"]
    return None


def job_manifest(quota: LiveQuota, queue: str, name: str, replicas: int,
                 request: dict[str, Fraction], *, use_claims: bool, flavor: str | None = None,
                 jobset: bool = False) -> dict:
    """A batch Job (or, for a gang, a JobSet of one replicated Job) the way the queue's team
    writes it: the LocalQueue label, one container, GPUs as claims from the team's templates
    under dra-claims (as requests otherwise)."""
    namespace, local_queue = quota.local_queue[queue]
    requests, claims = {}, []
    for resource, amount in sorted(request.items()):
        template = None
        if use_claims and resource.startswith(GPU_PREFIX) and amount.denominator == 1:
            template = _template_for(quota, namespace, resource, int(amount))
        if template is not None:
            claims.append({"name": f"claim-{len(claims)}", "resourceClaimTemplateName": template})
        else:
            requests[resource] = _show(amount)
    container = {"name": "main", "image": "registry.example/train:latest",
                 "resources": {"requests": requests, "limits": {r: v for r, v in requests.items()
                                                                if r.startswith(GPU_PREFIX)}}}
    pod: dict = {"restartPolicy": "Never", "containers": [container]}
    if flavor is not None and quota.node_labels.get(flavor):
        # Pinned to one flavor as Kueue's flavor assigner reads it: a flavor whose nodeLabels
        # the pod's nodeSelector contradicts is skipped.
        pod["nodeSelector"] = dict(quota.node_labels[flavor])
    if claims:
        pod["resourceClaims"] = claims
        container["resources"]["claims"] = [{"name": claim["name"]} for claim in claims]
    metadata = {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": local_queue}}
    job_spec = {"parallelism": replicas, "completions": replicas, "template": {"spec": pod}}
    if jobset:
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata,
                "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1,
                                             "template": {"spec": job_spec}}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": job_spec}


# --- the worlds -------------------------------------------------------------------------------

def contended_fillers(quota: LiveQuota, team: str) -> list[tuple[str, str, dict[str, Fraction]]]:
    """(queue, flavor, one pod's request): every other queue's guarantee, flavor by flavor."""
    fillers = []
    for queue in sorted(quota.nominal):
        if queue == team:
            continue
        for flavor, resources in quota.nominal[queue].items():
            used = {r: q for r, q in resources.items() if q > 0}
            if used:
                fillers.append((queue, flavor, used))
    return fillers


def _workload_of(cluster: LiveCluster, namespace: str, job: str) -> dict | None:
    for workload in cluster.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads").get("items") or []:
        owners = workload["metadata"].get("ownerReferences") or []
        if any(owner["name"] == job and owner["kind"] in ("Job", "JobSet") for owner in owners):
            return workload
    return None


def _condition(workload: dict, kind: str) -> dict | None:
    return next((c for c in (workload.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def admitted(workload: dict | None) -> bool:
    reserved = _condition(workload, "QuotaReserved") if workload else None
    return bool(reserved and reserved["status"] == "True")


@dataclass
class Outcome:
    admitted: bool
    flavors: set[str]
    borrowing: bool
    message: str


def _borrowing(quota: LiveQuota, admission: dict) -> bool:
    """True when the admitted usage exceeds the queue's nominal quota somewhere (the test's
    worlds put nothing else in the workload's own ClusterQueue)."""
    usage: dict[tuple[str, str], Fraction] = {}
    for assignment in admission["podSetAssignments"]:
        for resource, amount in (assignment.get("resourceUsage") or {}).items():
            key = (assignment["flavors"][resource], resource)
            usage[key] = usage.get(key, Fraction(0)) + parse_quantity(str(amount))
    nominal = quota.nominal[admission["clusterQueue"]]
    return any(amount > nominal.get(flavor, {}).get(resource, Fraction(0))
               for (flavor, resource), amount in usage.items())


def _outcome(quota: LiveQuota, workload: dict) -> Outcome:
    if admitted(workload):
        admission = workload["status"]["admission"]
        flavors = {flavor for assignment in admission["podSetAssignments"]
                   for flavor in (assignment.get("flavors") or {}).values()}
        return Outcome(True, flavors, _borrowing(quota, admission), "")
    reserved = _condition(workload, "QuotaReserved")
    return Outcome(False, set(), False, (reserved or {}).get("message", ""))


def settle(cluster: LiveCluster, quota: LiveQuota, namespace: str, job: str, *,
           expect_admitted: bool | None = None) -> Outcome:
    """Wait until Kueue has decided about the Job's Workload: admitted, or pending with a
    reason that holds for DECIDE_SECONDS (a preemption in flight admits it a moment later)."""
    workload = wait_until(f"the Workload of {namespace}/{job}", lambda: _workload_of(cluster, namespace, job))
    deadline = time.monotonic() + 60.0
    pending_since = None
    while time.monotonic() < deadline:
        workload = _workload_of(cluster, namespace, job)
        if admitted(workload):
            return _outcome(quota, workload)
        if _condition(workload, "QuotaReserved") is not None:
            pending_since = pending_since or time.monotonic()
            if time.monotonic() - pending_since > (30.0 if expect_admitted else DECIDE_SECONDS):
                return _outcome(quota, workload)
        time.sleep(0.25)
    return _outcome(quota, workload)


def reset(cluster: LiveCluster) -> None:
    """Delete every JobSet, Job and Workload; Kueue releases their quota."""
    cluster.kubectl("delete", "jobsets.jobset.x-k8s.io", "--all", "-A", "--wait=true", "--timeout=60s")
    cluster.kubectl("delete", "jobs.batch", "--all", "-A", "--wait=true", "--timeout=60s")
    cluster.kubectl("delete", "workloads.kueue.x-k8s.io", "--all", "-A", "--wait=true", "--timeout=60s")
    wait_until("every ClusterQueue to hold no quota", lambda: all(
        not (q.get("status") or {}).get("reservingWorkloads") for q in cluster.items("clusterqueues")))


def run_world(cluster: LiveCluster, quota: LiveQuota, job: DeclaredJob, *, contended: bool,
              use_claims: bool, serial: int) -> Outcome:
    reset(cluster)
    if contended:
        made = []
        for index, (queue, flavor, request) in enumerate(contended_fillers(quota, job.team)):
            manifest = job_manifest(quota, queue, f"filler-{serial}-{index}", 1, request,
                                    use_claims=False, flavor=flavor)
            cluster.create([manifest])
            made.append(manifest["metadata"])
        for meta in made:
            got = settle(cluster, quota, meta["namespace"], meta["name"], expect_admitted=True)
            assert got.admitted, f"filler {meta['namespace']}/{meta['name']} not admitted: {got.message}"
    manifest = job_manifest(quota, job.team, f"{job.name}-{serial}", job.replicas, job.request,
                            use_claims=use_claims, jobset=job.gang)
    cluster.create([manifest])
    return settle(cluster, quota, manifest["metadata"]["namespace"], manifest["metadata"]["name"],
                  expect_admitted=job.verdict == "guaranteed" or (not contended and job.verdict == "borrowing"))


def check_verdicts(cluster: LiveCluster, jobs: list[DeclaredJob], deviceclass_mappings: list[dict], *,
                   use_claims: bool) -> list[str]:
    """Every declared workload through both worlds; the list of verdicts Kueue contradicts."""
    quota = read_live_quota(cluster, deviceclass_mappings)
    wrong = []
    for serial, job in enumerate(jobs):
        label = f"{job.team}/{job.name} ({job.verdict})"
        idle = run_world(cluster, quota, job, contended=False, use_claims=use_claims, serial=serial)
        if job.verdict == "never":
            if idle.admitted and not job.structural:
                wrong.append(f"{label}: Kueue admitted it on an idle cluster")
            continue
        if not idle.admitted:
            wrong.append(f"{label}: not admitted on an idle cluster: {idle.message}")
            continue
        busy = run_world(cluster, quota, job, contended=True, use_claims=use_claims, serial=serial)
        if job.verdict == "guaranteed":
            if not busy.admitted:
                wrong.append(f"{label}: not admitted with every other team using its guarantee: {busy.message}")
            elif busy.borrowing:
                wrong.append(f"{label}: admitted with every other team using its guarantee, but borrowing")
            elif job.flavor and busy.flavors - {job.flavor}:
                wrong.append(f"{label}: admitted on {sorted(busy.flavors)}, the verdict says {job.flavor}")
        elif busy.admitted and not busy.borrowing:
            wrong.append(f"{label}: admitted within its team's own quota with every other team using its guarantee")
    reset(cluster)
    return wrong
