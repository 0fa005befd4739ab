"""What a policy change does, per cluster and per team: a diff of two compiled sides.

A side is what `compile_policy` returns for one revision: the per-cluster reports (report.json)
and the files `compile --out` would write. The diff speaks the reviewers' language (guaranteed,
burst, lend per flavor, flavor order, cohorts, queues, namespaces, priorities, the MIG plan,
workload verdicts) and keeps the object-level file counts for a Terraform-style summary line.

Everything here is pure data in, data out; ordering is deterministic (clusters, teams, pools,
cohorts and priorities by name; flavors in preference order, because that order matters).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from compiler.deliver.immutable_changes import flavor_warnings

QUOTA_FIELDS = ("guaranteed", "burst", "lend")
# A team's whole GPUs per pool and in total: guaranteed, the most it can hold, what it lends.
CEILING_FIELDS = ("guaranteed", "reachable", "lendable")
GPU_RESOURCE = "nvidia.com/gpu"
TEAM_FIELDS = ("cohort", "priority", "weight", "capacity", "queueing", "policyFile")
CLUSTER_SETTINGS = ("kubernetesVersion", "kueueVersion", "gpuAccess", "gitops")
POOL_FIELDS = ("gpu", "capacity", "nodes", "gpusPerNode", "gpus", "guaranteed", "shared", "mig", "migInstances")
COHORT_FIELDS = ("parent", "weight")
PRIORITY_FIELDS = ("value", "default")
# Verdicts from best to worst: a move to the right is a regression reviewers must see.
VERDICT_RANK = {"guaranteed": 0, "borrowing": 1, "never": 2}
# Reports describe the configuration; they are not configuration Kueue reads.
REPORT_FILES = ("report.json", "REPORT.md")


@dataclass(frozen=True)
class CompiledSide:
    """One revision, compiled. `label` names it in messages ("HEAD", "working tree", "main")."""

    label: str
    reports: Mapping[str, dict]
    files: Mapping[str, str]


@dataclass
class FieldChange:
    field: str
    before: Any
    after: Any


@dataclass
class QuotaChange:
    flavor: str
    resource: str
    before: dict | None      # {"guaranteed", "burst", "lend"}; None: the flavor/resource was not there
    after: dict | None


@dataclass
class CeilingRow:
    """A team's GPUs on one pool (`pool` "total": over every pool), before and after."""

    pool: str
    before: dict | None      # {"guaranteed", "reachable", "lendable"}; None: not on that side
    after: dict | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass
class WorkloadChange:
    name: str
    before: str | None       # verdict; None: the workload was not declared
    after: str | None
    reason: str = ""

    @property
    def regressed(self) -> bool:
        if self.after is None or self.before is None:
            return self.after == "never"
        return VERDICT_RANK.get(self.after, 0) > VERDICT_RANK.get(self.before, 0)


@dataclass
class TeamDiff:
    name: str
    status: str                              # added | removed | changed
    fields: list[FieldChange] = field(default_factory=list)
    quotas: list[QuotaChange] = field(default_factory=list)
    flavor_order: FieldChange | None = None
    namespaces_added: list[str] = field(default_factory=list)
    namespaces_removed: list[str] = field(default_factory=list)
    workloads: list[WorkloadChange] = field(default_factory=list)
    # Every pool of the team (whole GPUs) and the total: shown for every team the diff lists.
    ceilings: list[CeilingRow] = field(default_factory=list)


@dataclass
class NamedChange:
    """A pool, cohort or priority class that appeared, disappeared or changed."""

    name: str
    status: str                              # added | removed | changed
    fields: list[FieldChange] = field(default_factory=list)


@dataclass
class PoolCapacity:
    name: str
    gpus_before: Any
    gpus_after: Any
    guaranteed_before: Any
    guaranteed_after: Any


@dataclass
class FileChanges:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


@dataclass
class ClusterDiff:
    name: str
    status: str                              # added | removed | changed | unchanged
    settings: list[FieldChange] = field(default_factory=list)
    pools: list[NamedChange] = field(default_factory=list)
    capacity: list[PoolCapacity] = field(default_factory=list)
    cohorts: list[NamedChange] = field(default_factory=list)
    priorities: list[NamedChange] = field(default_factory=list)
    teams: list[TeamDiff] = field(default_factory=list)
    mig_plan: FieldChange | None = None
    files: FileChanges = field(default_factory=FileChanges)
    warnings: list[str] = field(default_factory=list)
    # The after side's admissibility table (every declared workload of the changed teams).
    admissibility: list[dict] = field(default_factory=list)


@dataclass
class Summary:
    clusters_changed: int = 0
    teams_added: int = 0
    teams_changed: int = 0
    teams_removed: int = 0
    verdicts_changed: int = 0
    verdicts_regressed: int = 0
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    warnings: int = 0

    @property
    def has_changes(self) -> bool:
        return bool(self.clusters_changed or self.files_added or self.files_changed or self.files_removed)


@dataclass
class PolicyDiff:
    base: str
    head: str
    clusters: list[ClusterDiff]
    summary: Summary
    # Files of out/ outside any cluster folder: the GitOps wiring (argocd/, flux/), CODEOWNERS.
    other_files: FileChanges = field(default_factory=FileChanges)

    @property
    def has_changes(self) -> bool:
        return self.summary.has_changes

    def to_dict(self) -> dict:
        return {"base": self.base, "head": self.head, "changed": self.has_changes,
                "summary": asdict(self.summary),
                "clusters": [asdict(c) for c in self.clusters if c.status != "unchanged"],
                "otherFiles": asdict(self.other_files)}


def diff_sides(before: CompiledSide, after: CompiledSide) -> PolicyDiff:
    clusters = [
        _diff_cluster(name, before.reports.get(name), after.reports.get(name),
                      _files_of(before.files, name), _files_of(after.files, name))
        for name in sorted(set(before.reports) | set(after.reports))
    ]
    # Files outside any cluster folder (ApplicationSets, CODEOWNERS, ...) count in the summary.
    loose = _diff_files(_loose_files(before.files, before.reports, after.reports),
                        _loose_files(after.files, before.reports, after.reports))
    summary = Summary()
    for cluster in clusters:
        summary.clusters_changed += cluster.status != "unchanged"
        for team in cluster.teams:
            setattr(summary, f"teams_{team.status}", getattr(summary, f"teams_{team.status}") + 1)
            summary.verdicts_changed += len(team.workloads)
            summary.verdicts_regressed += sum(w.regressed for w in team.workloads)
        summary.warnings += len(cluster.warnings)
    for files in [c.files for c in clusters] + [loose]:
        summary.files_added += len(files.added)
        summary.files_changed += len(files.changed)
        summary.files_removed += len(files.removed)
    return PolicyDiff(before.label, after.label, clusters, summary, loose)


def _files_of(files: Mapping[str, str], cluster: str) -> dict[str, str]:
    prefix = f"{cluster}/"
    return {path: text for path, text in files.items() if path.startswith(prefix)}


def _loose_files(files: Mapping[str, str], *report_sets: Mapping[str, dict]) -> dict[str, str]:
    clusters = {name for reports in report_sets for name in reports}
    return {p: t for p, t in files.items() if p.split("/", 1)[0] not in clusters}


def _diff_files(before: Mapping[str, str], after: Mapping[str, str]) -> FileChanges:
    return FileChanges(
        added=sorted(set(after) - set(before)),
        changed=sorted(p for p in set(before) & set(after) if before[p] != after[p]),
        removed=sorted(set(before) - set(after)),
    )


def _fields(before: Mapping | None, after: Mapping | None, names: tuple[str, ...]) -> list[FieldChange]:
    before, after = before or {}, after or {}
    return [FieldChange(n, before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)]


def _diff_named(before: list[dict] | None, after: list[dict] | None, names: tuple[str, ...]) -> list[NamedChange]:
    old = {item["name"]: item for item in before or []}
    new = {item["name"]: item for item in after or []}
    changes = []
    for name in sorted(set(old) | set(new)):
        if name not in old:
            changes.append(NamedChange(name, "added", _fields(None, new[name], names)))
        elif name not in new:
            changes.append(NamedChange(name, "removed", _fields(old[name], None, names)))
        else:
            fields = _fields(old[name], new[name], names)
            if fields:
                changes.append(NamedChange(name, "changed", fields))
    return changes


def _diff_cluster(name: str, before: dict | None, after: dict | None,
                  files_before: dict[str, str], files_after: dict[str, str]) -> ClusterDiff:
    status = "added" if before is None else "removed" if after is None else "changed"
    b, a = before or {}, after or {}
    diff = ClusterDiff(name, status)
    diff.settings = _fields(b, a, CLUSTER_SETTINGS)
    diff.pools = _diff_named(b.get("pools"), a.get("pools"), POOL_FIELDS)
    diff.capacity = _capacity(b.get("pools") or [], a.get("pools") or [])
    diff.cohorts = _diff_named(b.get("cohorts"), a.get("cohorts"), COHORT_FIELDS)
    diff.priorities = _diff_named(b.get("priorities"), a.get("priorities"), PRIORITY_FIELDS)
    diff.teams = _diff_teams(b, a)
    if b.get("migPlan") != a.get("migPlan"):
        diff.mig_plan = FieldChange("migPlan", b.get("migPlan"), a.get("migPlan"))
    diff.files = _diff_files(files_before, files_after)
    changed_teams = {t.name for t in diff.teams if t.status != "removed"}
    diff.admissibility = sorted(
        (w for w in a.get("workloads") or [] if w.get("team") in changed_teams),
        key=lambda w: (w.get("team", ""), w.get("name", "")))
    diff.warnings = _warnings(diff, files_before, files_after)
    if status == "changed" and not (diff.settings or diff.pools or diff.cohorts or diff.priorities
                                    or diff.teams or diff.mig_plan or diff.files.total):
        diff.status = "unchanged"
    return diff


def _capacity(before: list[dict], after: list[dict]) -> list[PoolCapacity]:
    old = {p["name"]: p for p in before}
    new = {p["name"]: p for p in after}
    rows = []
    for name in sorted(set(old) | set(new)):
        o, n = old.get(name, {}), new.get(name, {})
        rows.append(PoolCapacity(name, o.get("gpus"), n.get("gpus"), o.get("guaranteed"), n.get("guaranteed")))
    return rows


def _quota_map(team: dict | None) -> dict[tuple[str, str], dict]:
    quotas = {}
    for entry in (team or {}).get("flavors") or []:
        quotas[(entry["flavor"], entry["resource"])] = {k: entry.get(k) for k in QUOTA_FIELDS}
    return quotas


def _flavor_order(team: dict | None) -> list[str]:
    order: list[str] = []
    for entry in (team or {}).get("flavors") or []:
        if entry["flavor"] not in order:
            order.append(entry["flavor"])
    return order


def _ceiling_map(team: dict | None) -> dict[str, dict]:
    return {entry["flavor"]: {k: entry.get(k) for k in CEILING_FIELDS}
            for entry in (team or {}).get("flavors") or [] if entry.get("resource") == GPU_RESOURCE}


def _ceilings(before: dict | None, after: dict | None) -> list[CeilingRow]:
    """Per pool (the after side's order, then pools the team left) and the total row."""
    old, new = _ceiling_map(before), _ceiling_map(after)
    rows = [CeilingRow(pool, old.get(pool), new.get(pool)) for pool in list(new) + [p for p in old if p not in new]]
    total = CeilingRow("total", (before or {}).get("ceiling") if before else None,
                       (after or {}).get("ceiling") if after else None)
    return rows + [total]


def _workloads_by_team(report: dict) -> dict[str, dict[str, dict]]:
    grouped: dict[str, dict[str, dict]] = {}
    for workload in report.get("workloads") or []:
        grouped.setdefault(workload.get("team", ""), {})[workload["name"]] = workload
    return grouped


def _diff_teams(before: dict, after: dict) -> list[TeamDiff]:
    old = {t["name"]: t for t in before.get("teams") or []}
    new = {t["name"]: t for t in after.get("teams") or []}
    old_workloads, new_workloads = _workloads_by_team(before), _workloads_by_team(after)
    diffs = []
    for name in sorted(set(old) | set(new)):
        o, n = old.get(name), new.get(name)
        status = "added" if o is None else "removed" if n is None else "changed"
        team = TeamDiff(name, status, fields=_fields(o, n, TEAM_FIELDS))
        old_quota, new_quota = _quota_map(o), _quota_map(n)
        # Keep the flavors in the after side's preference order, then what disappeared.
        keys = list(new_quota) + [k for k in old_quota if k not in new_quota]
        team.quotas = [QuotaChange(f, r, old_quota.get((f, r)), new_quota.get((f, r)))
                       for f, r in keys if old_quota.get((f, r)) != new_quota.get((f, r))]
        old_order, new_order = _flavor_order(o), _flavor_order(n)
        if status == "changed" and old_order != new_order:
            team.flavor_order = FieldChange("flavors", old_order, new_order)
        old_ns, new_ns = set((o or {}).get("namespaces") or []), set((n or {}).get("namespaces") or [])
        team.namespaces_added = sorted(new_ns - old_ns)
        team.namespaces_removed = sorted(old_ns - new_ns)
        ow, nw = old_workloads.get(name, {}), new_workloads.get(name, {})
        for workload in sorted(set(ow) | set(nw)):
            was = ow.get(workload, {}).get("verdict")
            now = nw.get(workload, {}).get("verdict")
            if was != now:
                reason = nw.get(workload, ow.get(workload, {})).get("reason") or ""
                team.workloads.append(WorkloadChange(workload, was, now, reason))
        if status != "changed" or team.fields or team.quotas or team.flavor_order or \
                team.namespaces_added or team.namespaces_removed or team.workloads:
            team.ceilings = _ceilings(o, n)
            diffs.append(team)
    return diffs


def _warnings(diff: ClusterDiff, files_before: dict[str, str], files_after: dict[str, str]) -> list[str]:
    warnings = []
    config_files = [path for path in sorted(diff.files.changed + diff.files.added + diff.files.removed)
                    if not path.endswith(REPORT_FILES)
                    and "deviceClassMappings" in files_before.get(path, "") + files_after.get(path, "")]
    if config_files:
        restart_patch = [path for path in diff.files.changed + diff.files.added
                         if "manager-config-checksum" in files_after.get(path, "")]
        how = (f"the checksum in `{restart_patch[0]}` rolls the kueue-controller-manager when both are "
               "synced; if your Kueue installation does not apply that patch, restart it by hand"
               if restart_patch else "restart the kueue-controller-manager after this syncs")
        warnings.append(
            f"Kueue's deviceClassMappings change ({', '.join(f'`{p}`' for p in config_files)}): Kueue "
            f"reads its Configuration only at start-up, so it must restart: {how}.")
    for change in diff.settings:
        if change.field == "gpuAccess":
            warnings.append(
                f"gpuAccess changes from {change.before} to {change.after}: jobs must request GPUs the "
                "new way (device plugin resources vs DRA claims) and Kueue must restart.")
        if change.field == "kueueVersion":
            warnings.append(f"kueueVersion changes from {change.before} to {change.after}: the emitted "
                            "API version may change; upgrade Kueue before this syncs.")
    if diff.mig_plan is not None and diff.mig_plan.before is not None and diff.mig_plan.after is not None:
        warnings.append("The MIG plan changes: nvidia-mig-manager re-partitions the affected GPUs, which "
                        "evicts the pods running on them. Drain those nodes first.")
    for team in diff.teams:
        if team.status == "removed":
            warnings.append(f"Team {team.name} is removed: its ClusterQueue is deleted only after its "
                            "admitted workloads finish; its pending jobs stay pending.")
        if team.namespaces_removed:
            warnings.append(f"Team {team.name} loses namespace(s) {', '.join(team.namespaces_removed)}: "
                            "their LocalQueue is deleted and new jobs there will not be admitted.")
        if team.flavor_order is not None:
            warnings.append(f"Team {team.name} changes its flavor order ({' > '.join(team.flavor_order.before)} "
                            f"to {' > '.join(team.flavor_order.after)}): new workloads land on a different "
                            "pool first.")
        regressed = [w for w in team.workloads if w.regressed]
        for workload in regressed:
            warnings.append(f"Workload {team.name}/{workload.name} gets worse: "
                            f"{workload.before or 'undeclared'} -> {workload.after}"
                            + (f" ({workload.reason})" if workload.reason else ""))
    for pool in diff.pools:
        if pool.status == "removed":
            warnings.append(f"Pool {pool.name} is removed: its ResourceFlavor is deleted; workloads "
                            "admitted on it keep running until they finish.")
    warnings.extend(flavor_warnings(files_before, files_after))
    return warnings
