"""What an evaluation found: per-workload outcomes, per-ClusterQueue usage, explanations."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.evaluator.assigner import Assignment
from compiler.core.quantity import format_units
from compiler.evaluator.statuses import WorkloadStatus


@dataclass(frozen=True)
class WorkloadOutcome:
    name: str
    status: str                      # admitted | running | pending | inadmissible | preempted
    cluster_queue: str | None
    assignment: dict[str, dict[str, str]]
    count: dict[str, int]
    borrowing: bool
    reason: str
    reason_code: str
    preempted_by: str | None
    # pod set -> {"levels", "domains"}: where Topology Aware Scheduling put its pods
    topology_assignment: dict[str, dict] | None = None

    def to_json(self) -> dict:
        out = {"name": self.name, "clusterQueue": self.cluster_queue, "status": self.status,
               "assignment": self.assignment, "count": self.count, "borrowing": self.borrowing,
               "reason": self.reason, "preemptedBy": self.preempted_by}
        if self.topology_assignment:
            out["topologyAssignment"] = self.topology_assignment
        return out


class EvaluationResult:
    def __init__(self, engine) -> None:
        self._engine = engine
        self.cycles = engine.cycle
        self.decisions = engine.decisions
        self.converged = engine.converged  # False: stopped at the cycle cap while still changing
        # (first cycle, period) of the circle of preemptions the run was found in, if it was:
        # the state at the cap was then worked out without running every cycle to it.
        self.circle: tuple[int, int] | None = engine.circle
        self.warnings = list(engine.state.warnings)
        self.outcomes: dict[str, WorkloadOutcome] = {}
        for key in sorted(engine.infos):
            info = engine.infos[key]
            held = info.holds_quota
            status = info.status
            if held and info.held_before and status is not WorkloadStatus.ADMITTED:
                status = WorkloadStatus.RUNNING
            status = str(status)  # (the outcome holds the plain string its JSON prints)
            self.outcomes[key] = WorkloadOutcome(
                name=key, status=status, cluster_queue=info.cluster_queue,
                assignment={ps: dict(sorted(f.items())) for ps, f in sorted(info.flavors.items())} if held else {},
                count=dict(sorted(info.counts.items())) if held else {},
                borrowing=bool(info.borrowing) if held else False,
                reason=info.reason, reason_code=info.reason_code,
                preempted_by=info.preempted_by if status == WorkloadStatus.PREEMPTED else None,
                topology_assignment={ps: placed.assignment.as_json() for ps, placed in sorted(info.placements.items())}
                if held and info.placements else None)
        self.cluster_queues = []
        for name in sorted(engine.nodes):
            node = engine.nodes[name]
            usage: dict[str, dict[str, str]] = {}
            borrowed: dict[str, dict[str, str]] = {}
            keys = set(node.quotas) | {fr for fr, v in node.usage.items() if v}
            for (flavor, res) in sorted(keys):
                amount = node.usage.get((flavor, res), 0)
                usage.setdefault(flavor, {})[res] = format_units(res, amount)
                over = amount - node.quota((flavor, res)).nominal
                if over > 0:
                    borrowed.setdefault(flavor, {})[res] = format_units(res, over)
            self.cluster_queues.append({"name": name, "usage": usage, "borrowed": borrowed})

    def to_json(self) -> dict:
        return {"workloads": [o.to_json() for o in self.outcomes.values()],
                "clusterQueues": self.cluster_queues}

    def workload(self, name: str) -> WorkloadOutcome:
        try:
            return self.outcomes[name]
        except KeyError:
            raise KeyError(f"no workload {name} in the input (names are namespace/name; "
                           f"jobs become <kind>-<name>-<hash>)") from None

    def explain(self, name: str) -> str:
        outcome = self.workload(name)
        engine = self._engine
        info = engine.infos[name]
        lines = [f"workload {name}: {outcome.status}"
                 + (f" in ClusterQueue {outcome.cluster_queue}" if outcome.cluster_queue else "")]
        created = info.workload.created
        lines.append(f"  priority {info.priority}, created "
                     + (created.isoformat() if created.year > 1970 else "(no creationTimestamp)"))
        for ps in info.workload.podsets:
            req = ", ".join(f"{r}: {format_units(r, v * ps.count)}" for r, v in sorted(ps.per_pod.items()))
            lines.append(f"  pod set {ps.name}: count {ps.count}"
                         + (f" (minCount {ps.min_count})" if ps.min_count is not None else "")
                         + f", total requests {{{req}}}")
        lines.append(f"  reason [{outcome.reason_code}]: {outcome.reason}")
        if outcome.preempted_by:
            lines.append(f"  preempted by {outcome.preempted_by}")
        if (aside := self._set_aside_with(info)) is not None:
            lines.append(f"  not tried: set aside with its equivalence class, since {aside.key} failed "
                         f"({aside.reason})")
        if outcome.status in ("admitted", "running"):
            for ps, flavors in outcome.assignment.items():
                lines.append(f"  assigned {ps}: " + ", ".join(f"{r} -> {f}" for r, f in flavors.items())
                             + (f" (count {outcome.count.get(ps)})" if ps in outcome.count else ""))
        assignment: Assignment | None = info.last_assignment
        if assignment is not None:
            lines.append("  flavors tried in the last attempt:")
            for ps in assignment.podsets:
                for attempt in ps.attempts:
                    detail = "; ".join(attempt.reasons) if attempt.reasons else "fits"
                    borrow = f", borrowing level {attempt.borrow}" if attempt.borrow and attempt.mode != "NoFit" else ""
                    label = attempt.flavor or "(no flavor)"
                    lines.append(f"    {ps.name} / {label}: {attempt.mode}{borrow} - {detail}")
            lines.extend(self._quota_lines(info, assignment))
            if info.pending_victims:
                lines.append("  preempting: " + ", ".join(info.pending_victims))
            needs = self._what_it_would_take(info, assignment)
            if needs and outcome.status not in ("admitted", "running"):
                lines.append("  what it would take:")
                lines.extend(f"    {n}" for n in needs)
        return "\n".join(lines)

    def _set_aside_with(self, info):
        """The workload whose failure took `info`, untried, to its queue's inadmissible set with
        its equivalence class (its own reason stays as it was, as in Kueue), or None."""
        queue = self._engine.queues.get(info.cluster_queue) if info.cluster_queue else None
        if queue is None or info.key not in queue.inadmissible:
            return None
        failed = queue.bulk_moved.get(info.scheduling_hash)
        return failed if failed is not None and failed is not info else None

    def _quota_lines(self, info, assignment: Assignment) -> list[str]:
        node = self._engine.nodes.get(info.cluster_queue) if info.cluster_queue else None
        if node is None:
            return []
        out = []
        seen = set()
        for ps in assignment.podsets:
            for attempt in ps.attempts:
                if not attempt.flavor:
                    continue
                for res in sorted(ps.requests):
                    fr = (attempt.flavor, res)
                    if fr in seen or fr not in node.quotas:
                        continue
                    seen.add(fr)
                    q = node.quota(fr)
                    limits = ""
                    if q.borrowing_limit is not None:
                        limits += f", borrowingLimit {format_units(res, q.borrowing_limit)}"
                    if q.lending_limit is not None:
                        limits += f", lendingLimit {format_units(res, q.lending_limit)}"
                    out.append(f"    {res} in {attempt.flavor}: nominal {format_units(res, q.nominal)}{limits}, "
                               f"in use {format_units(res, node.usage.get(fr, 0))}, available now "
                               f"{format_units(res, node.available(fr))}, maximum capacity "
                               f"{format_units(res, node.max_capacity(fr))}")
        return (["  quota of ClusterQueue " + node.name + " (now):"] + out) if out else []

    def _what_it_would_take(self, info, assignment: Assignment) -> list[str]:
        out = []
        spec = self._engine.state.cluster_queues.get(info.cluster_queue or "")
        policy = ""
        if spec is not None:
            p = spec.preemption
            policy = (f" (this queue preempts with withinClusterQueue={p.within_cluster_queue}, "
                      f"reclaimWithinCohort={p.reclaim_within_cohort}, "
                      f"borrowWithinCohort={p.borrow_within_cohort})")
        for ps in assignment.podsets:
            for attempt in ps.attempts:
                for reason in attempt.reasons:
                    if "more needed" in reason:
                        head, amount = reason.rsplit(", ", 1)
                        out.append(f"{head.replace('insufficient unused quota for ', '')}: {amount}, "
                                   f"freed when running workloads finish or are preempted{policy}")
                    elif "maximum capacity" in reason:
                        out.append(f"flavor {attempt.flavor}: the request is larger than this queue can ever "
                                   "hold; raise nominalQuota or borrowingLimit (or the cohort's quota), "
                                   "or ask for less")
                    elif "doesn't match node affinity" in reason or "untolerated taint" in reason:
                        out.append(f"flavor {attempt.flavor}: the pods' nodeSelector/affinity or tolerations "
                                   "rule it out")
                    elif "unavailable in ClusterQueue" in reason:
                        out.append(f"{reason}: add it to a resource group's coveredResources")
        if not out and info.reason_code in ("Misconfigured", "Suspended"):
            out.append("fix the queue setup named in the reason")
        seen = set()
        return [o for o in out if not (o in seen or seen.add(o))]

    def table(self) -> list[tuple[str, ...]]:
        rows = []
        for o in self.outcomes.values():
            flavors = "; ".join(f"{ps}: " + ",".join(f"{r}={f}" for r, f in fl.items())
                                for ps, fl in o.assignment.items())
            rows.append((o.name, o.cluster_queue or "-", o.status, flavors or "-",
                         "yes" if o.borrowing else "no", o.reason_code, o.reason))
        return rows
