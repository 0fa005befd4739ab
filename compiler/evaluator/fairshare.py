"""Fair Sharing: dominant resource share (DRS) with weights, the tournament that orders heads
inside a cohort tree, and the preemption strategies (LessThanOrEqualToFinalShare,
LessThanInitialShare) over target queues visited by descending share."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.evaluator.tree import QuotaNode

INF = float("inf")


@dataclass(frozen=True)
class Share:
    weight: float
    ratio: float                 # unweighted dominant ratio (per mille of what the parent can lend)
    borrowing: bool = False
    borrowed_frs: frozenset = frozenset()

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return INF
        return self.ratio / self.weight

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def borrowing_on(self, requested: dict) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed_frs)


NEGATIVE = Share(1.0, -1.0)


def compare(a: Share, b: Share) -> int:
    if a.zero_weight_borrows() and b.zero_weight_borrows():
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows():
        return 1
    if b.zero_weight_borrows():
        return -1
    x, y = a.precise(), b.precise()
    return (x > y) - (x < y)


def share_of(node: QuotaNode) -> Share:
    weight = float(node.weight)
    if node.parent is None:
        return Share(weight, 0.0)
    borrowed: dict[str, int] = {}
    frs = []
    for fr, quota in node.subtree.items():
        amount = node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
            frs.append(fr)
    if not borrowed:
        return Share(weight, 0.0)
    root = node.root()
    lendable: dict[str, int] = {}
    for fr in root.subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + node.parent.potential_available(fr)
    ratio = 0.0
    for res in sorted(borrowed):
        total = lendable.get(res, 0)
        if total > 0:
            ratio = max(ratio, borrowed[res] * 1000.0 / total)
    return Share(weight, ratio, True, frozenset(frs))


# -- ordering of heads (the tournament) ----------------------------------------------------------
def pop_fair(engine, remaining: dict) -> object:
    """Pick the next entry among `remaining` (CQ name -> entry), as Kueue's fair sharing
    iterator does with the usage admitted so far in this cycle."""
    first = min(remaining)  # Kueue picks an arbitrary CQ; we pick by name for determinism
    node = engine.nodes[first]
    if node.parent is None:
        return remaining.pop(first)
    root = node.root()
    shares: dict[tuple[str, str], Share] = {}
    requested: dict[str, dict] = {}
    for cq in root.subtree_cqs():
        entry = remaining.get(cq.name)
        if entry is None:
            continue
        usage = entry.assignment.usage
        cq.add_all(usage)
        requested[cq.name] = usage
        share = share_of(cq)
        for ancestor in cq.ancestors():
            shares[(ancestor.name, cq.name)] = share
            share = share_of(ancestor)
        cq.remove_all(usage)

    def less(a, b, parent: str) -> bool:
        sa, sb = shares[(parent, a.cq)], shares[(parent, b.cq)]
        ba, bb = sa.borrowing_on(requested[a.cq]), sb.borrowing_on(requested[b.cq])
        if ba != bb:
            return not ba
        c = compare(sa, sb)
        if c != 0:
            return c < 0
        if a.info.priority != b.info.priority:
            return a.info.priority > b.info.priority
        if a.info.workload.created != b.info.workload.created:
            return a.info.workload.created < b.info.workload.created
        return (a.info.uid, a.info.key) < (b.info.uid, b.info.key)

    def tournament(cohort: QuotaNode):
        candidates = []
        for child in sorted(cohort.child_cohorts, key=lambda n: n.name):
            winner = tournament(child)
            if winner is not None:
                candidates.append(winner)
        for child in sorted(cohort.child_cqs, key=lambda n: n.name):
            if child.name in remaining:
                candidates.append(remaining[child.name])
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if less(current, best, cohort.name):
                best = current
        return best

    winner = tournament(root)
    return remaining.pop(winner.cq)


# -- preemption ---------------------------------------------------------------------------------
class _Ordering:
    """Target ClusterQueues by descending share from the root, pruning non-borrowing ones."""

    def __init__(self, p, preemptor_node: QuotaNode, candidates: list, order_key) -> None:
        self.p = p
        self.preemptor_node = preemptor_node
        self.ancestors = {id(a) for a in preemptor_node.ancestors()}
        self.targets: dict[str, list] = {}
        for info in candidates:
            self.targets.setdefault(info.cluster_queue, []).append(info)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()
        self.order_key = order_key

    def has_workload(self, name: str) -> bool:
        return bool(self.targets.get(name))

    def pop(self, name: str):
        return self.targets[name].pop(0)

    def __iter__(self):
        node = self.preemptor_node
        if node.parent is None:
            while node.name not in self.pruned_cqs and self.has_workload(node.name):
                yield node
            return
        root = node.root()
        while id(root) not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode):
        best_cq, best_cq_share = None, NEGATIVE
        for cq in sorted(cohort.child_cqs, key=lambda n: n.name):
            if cq.name in self.pruned_cqs:
                continue
            share = share_of(cq)
            if (not share.borrowing and cq is not self.preemptor_node) or not self.has_workload(cq.name):
                self.pruned_cqs.add(cq.name)
            elif best_cq is not None and compare(share, best_cq_share) == 0:
                if self.order_key(self.targets[cq.name][0]) < self.order_key(self.targets[best_cq.name][0]):
                    best_cq = cq
            elif compare(share, best_cq_share) == 1:
                best_cq, best_cq_share = cq, share
        best_cohort, best_cohort_share = None, NEGATIVE
        for child in sorted(cohort.child_cohorts, key=lambda n: n.name):
            if id(child) in self.pruned_cohorts:
                continue
            share = share_of(child)
            if not share.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif compare(share, best_cohort_share) >= 0:
                best_cohort, best_cohort_share = child, share
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if compare(best_cohort_share, best_cq_share) >= 0:
            return self._next(best_cohort)
        return best_cq

    def shares(self, target: QuotaNode) -> tuple[Share, Share]:
        lca = next(a for a in target.ancestors() if id(a) in self.ancestors)
        return share_of(_almost(self.preemptor_node, lca)), share_of(_almost(target, lca))

    def target_share_after_removal(self, target: QuotaNode, info) -> Share:
        target.remove_all(info.usage)
        try:
            lca = next(a for a in target.ancestors() if id(a) in self.ancestors)
            return share_of(_almost(target, lca))
        finally:
            target.add_all(info.usage)


def _almost(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    current = node
    for ancestor in node.ancestors():
        if ancestor is lca:
            return current
        current = ancestor
    raise AssertionError("no common ancestor")  # the ordering only visits one tree


def _strategy_passes(name: str, preemptor_new: Share, target_old: Share, target_new: Share) -> bool:
    if name == "LessThanInitialShare":
        return compare(preemptor_new, target_old) < 0
    return compare(preemptor_new, target_new) <= 0


def fair_preemptions(p, preemptor, cq_name: str, frs, usage) -> list:
    from compiler.evaluator.preemption import (
        IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION, Target, candidate_order,
        satisfies_policy,
    )
    node = p.nodes[cq_name]
    spec = p.specs[cq_name]
    candidates = []
    if spec.preemption.within_cluster_queue != "Never":
        for info in p.admitted.get(cq_name, {}).values():
            if p.uses(info, frs) and satisfies_policy(preemptor, info, spec.preemption.within_cluster_queue):
                candidates.append(info)
    if node.parent is not None and spec.preemption.reclaim_within_cohort != "Never":
        for cq_node in node.root().subtree_cqs():
            if cq_node is node or cq_node.parent is None or not any(cq_node.borrowing(fr) for fr in frs):
                continue
            for info in p.admitted.get(cq_node.name, {}).values():
                if p.uses(info, frs) and satisfies_policy(preemptor, info, spec.preemption.reclaim_within_cohort):
                    candidates.append(info)
    if not candidates:
        return []
    order_key = candidate_order(cq_name)
    candidates.sort(key=order_key)
    strategies = p.strategies or ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]

    node.add_all(usage)  # shares are judged with the preemptor's usage in place

    def fits() -> bool:
        node.remove_all(usage)
        ok = p.fits(node, usage, True)
        node.add_all(usage)
        return ok

    targets: list = []
    retry: list = []
    done = False
    within_nominal = all(not node.borrowing(fr) for fr in frs)
    ordering = _Ordering(p, node, candidates, order_key)
    for target_node in ordering:
        if target_node is node:
            info = ordering.pop(target_node.name)
            p.remove(info)
            targets.append(Target(info, IN_CLUSTER_QUEUE))
            if fits():
                done = True
                break
            continue
        if within_nominal:
            info = ordering.pop(target_node.name)
            p.remove(info)
            targets.append(Target(info, IN_COHORT_RECLAMATION))
            if fits():
                done = True
                break
            continue
        preemptor_new, target_old = ordering.shares(target_node)
        if preemptor_new.precise() == INF and target_old.precise() != INF:
            while ordering.has_workload(target_node.name):
                retry.append(ordering.pop(target_node.name))
            continue
        while ordering.has_workload(target_node.name):
            info = ordering.pop(target_node.name)
            target_new = ordering.target_share_after_removal(target_node, info)
            if _strategy_passes(strategies[0], preemptor_new, target_old, target_new):
                p.remove(info)
                targets.append(Target(info, IN_COHORT_FAIR_SHARING))
                if fits():
                    done = True
                break
            retry.append(info)
        if done:
            break
    if not done and len(strategies) > 1 and retry:
        second = _Ordering(p, node, retry, order_key)
        for target_node in second:
            preemptor_new, target_old = second.shares(target_node) if target_node is not node else (None, None)
            info = second.pop(target_node.name)
            if target_node is not node and _strategy_passes("LessThanInitialShare", preemptor_new, target_old, target_old):
                p.remove(info)
                targets.append(Target(info, IN_COHORT_FAIR_SHARING))
                if fits():
                    done = True
                    break
            second.pruned_cqs.add(target_node.name)
    node.remove_all(usage)
    if not done:
        for target in targets:
            p.add(target.info)
        return []
    targets = p._fill_back(node, usage, targets, True)
    for target in targets:
        p.add(target.info)
    return targets
