"""Fair Sharing: dominant resource share (DRS) with weights, the tournament ordering of heads,
and the preemption strategies (LessThanOrEqualToFinalShare, LessThanInitialShare)."""

from __future__ import annotations

from compiler.evaluator.tree import QuotaNode

INF = float("inf")


def drs(node: QuotaNode, extra: dict | None = None) -> float:
    """Kueue's dominant resource share of a node, divided by its weight; 0 at the root."""
    if node.parent is None:
        return 0.0
    borrowed: dict[str, int] = {}
    lendable: dict[str, int] = {}
    keys = set(node.usage) | set(node.subtree) | set(extra or {})
    for fr in keys:
        used = node.usage.get(fr, 0) + (extra or {}).get(fr, 0)
        over = used - node.subtree.get(fr, 0)
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
    if not borrowed:
        return 0.0
    parent = node.parent
    for fr in set(parent.subtree) | keys:
        if fr[1] in borrowed:
            lendable[fr[1]] = lendable.get(fr[1], 0) + parent.potential_available(fr)
    ratio = 0.0
    for res, amount in borrowed.items():
        total = lendable.get(res, 0)
        value = amount * 1000 / total if total > 0 else INF
        ratio = max(ratio, value)
    weight = float(node.weight)
    if weight == 0:
        return INF
    return ratio / weight


def _path_usage(node: QuotaNode, usage: dict) -> dict[int, dict]:
    """The usage a workload adds at each ancestor (bubbling past local quotas)."""
    out = {}
    current = usage
    n = node
    while n is not None:
        out[id(n)] = current
        nxt = {}
        for fr, value in current.items():
            spill = value - n.local_available(fr)
            if spill > 0:
                nxt[fr] = spill
        current = nxt
        n = n.parent
    return out


def fair_order(engine, entries: list) -> list:
    """Tournament over cohort trees: at each cohort prefer non-borrowing, then lower DRS (with
    the head's usage added), higher priority, older. Trees without a cohort go first."""
    def key(entry) -> tuple:
        node = engine.nodes[entry.cq]
        added = _path_usage(node, entry.assignment.usage)
        shares = []
        borrowing = []
        n = node
        while n.parent is not None:
            extra = added.get(id(n), {})
            shares.append(drs(n, extra))
            borrowing.append(any(n.borrowing_with(fr, extra.get(fr, 0)) for fr in entry.assignment.usage))
            n = n.parent
        shares.reverse()
        borrowing.reverse()
        return (tuple(zip(borrowing, shares)), -entry.info.priority, entry.info.workload.created,
                entry.info.uid)
    return sorted(entries, key=key)


def fair_preemptions(preemptor_obj, preemptor, cq_name: str, frs, usage) -> list:
    from compiler.evaluator.preemption import (
        IN_CLUSTER_QUEUE, IN_COHORT_FAIR_SHARING, IN_COHORT_RECLAMATION, Target, candidate_order,
        satisfies_policy,
    )
    p = preemptor_obj
    node = p.nodes[cq_name]
    spec = p.specs[cq_name]
    candidates = []
    if spec.preemption.within_cluster_queue != "Never":
        for info in p.admitted.get(cq_name, {}).values():
            if p.uses(info, frs) and satisfies_policy(preemptor, info, spec.preemption.within_cluster_queue):
                candidates.append(info)
    if node.parent is not None and spec.preemption.reclaim_within_cohort != "Never":
        for cq_node in node.root().subtree_cqs():
            if cq_node is node or not any(cq_node.borrowing(fr) for fr in frs):
                continue
            for info in p.admitted.get(cq_node.name, {}).values():
                if p.uses(info, frs) and satisfies_policy(preemptor, info, spec.preemption.reclaim_within_cohort):
                    candidates.append(info)
    if not candidates:
        return []
    candidates.sort(key=candidate_order(cq_name))
    node.add_all(usage)  # shares are judged with the preemptor's usage in place

    def fits() -> bool:
        node.remove_all(usage)
        ok = p.fits(node, usage, True)
        node.add_all(usage)
        return ok

    within_nominal = all(not node.borrowing(fr) for fr in frs)
    targets: list = []
    strategies = p.strategies or ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    remaining = list(candidates)
    done = False
    for round_index, strategy in enumerate(strategies[:2]):
        retry = []
        # visit target CQs by descending share
        by_cq: dict[str, list] = {}
        for info in remaining:
            by_cq.setdefault(info.cluster_queue, []).append(info)
        order = sorted(by_cq, key=lambda name: (-drs(p.nodes[name]) if name != cq_name else -INF, name))
        for name in order:
            for info in by_cq[name]:
                if info.cluster_queue == cq_name:
                    reason = IN_CLUSTER_QUEUE
                    ok = True
                elif within_nominal:
                    reason = IN_COHORT_RECLAMATION
                    ok = True
                else:
                    reason = IN_COHORT_FAIR_SHARING
                    preemptor_share = drs(node)
                    target_old = drs(p.nodes[name])
                    p.remove(info)
                    target_new = drs(p.nodes[name])
                    p.add(info)
                    if strategy == "LessThanOrEqualToFinalShare":
                        ok = preemptor_share <= target_new
                    else:
                        ok = preemptor_share < target_old
                if not ok:
                    retry.append(info)
                    continue
                p.remove(info)
                targets.append(Target(info, reason))
                if fits():
                    done = True
                    break
                if reason == IN_COHORT_FAIR_SHARING:
                    break  # re-rank queues after every fair-sharing removal
            if done:
                break
        if done:
            break
        remaining = retry
    node.remove_all(usage)
    if not done:
        for target in targets:
            p.add(target.info)
        return []
    targets = p._fill_back(node, usage, targets, True)
    for target in targets:
        p.add(target.info)
    return targets
