"""What a fair-sharing preemption search reads besides its request, kept so that its answer,
and the pieces every search of a cycle shares, are reused while that is unchanged (this
engine's own layer: Kueue searches afresh every time)."""

from __future__ import annotations

from typing import Mapping

from compiler.evaluator.drs import Share, share_of
from compiler.evaluator.models import FlavorResource
from compiler.evaluator.preemption_common import PreemptionRequest, Snapshot
from compiler.evaluator.tree import QuotaNode


class SearchReads:
    """What a fair-sharing search read besides the request, so its answer can be kept while
    that is unchanged (Preemptor.targets).

    A search is a function of (1) the usage, in every node of the tree, of the pairs in `frs`:
    the request's pairs and every pair any of its candidates uses, so that the candidates, the
    borrowing tests, every fit and every eviction it simulates stay on these pairs; their commit
    versions say whether they moved; and (2) the shares of the nodes it may compare: the nodes
    on the paths from the root to the preemptor's queue and to each queue with candidates. A
    share is read on usage changed only on `frs`, so it is a function of (1) and of what the
    node borrows on the other pairs: its excess per pair at the start, kept here (in its share)
    with the node's version (an unchanged version is an unchanged excess)."""

    __slots__ = ("frs", "nodes", "versions", "shares")

    def __init__(self, frs, nodes: list[QuotaNode], versions: list[int], shares: list[Share]) -> None:
        self.frs = sorted(frs)
        # each node, its version and its share at the start of the search
        self.nodes, self.versions, self.shares = nodes, versions, shares

    def shares_hold(self) -> bool:
        """Whether every node read still borrows what it borrowed (checked after the commit
        versions of `frs`, which cover the pairs in `frs`)."""
        versions = self.versions
        for index, node in enumerate(self.nodes):
            if node.version != versions[index]:
                if share_of(node).excess != self.shares[index].excess:
                    return False
                versions[index] = node.version  # same excess: the next check is a version compare
        return True


def pairs_read(request: PreemptionRequest, holders: tuple[str, ...], candidates: dict[str, tuple[list, int]],
                snapshot: Snapshot, others: frozenset | None) -> set[FlavorResource]:
    """The pairs a search with these candidates reads (`holders`: the queues with candidates;
    `others`, if known: every pair the workloads of the other queues with candidates use)."""
    frs = set(request.frs)
    frs.update(request.usage)
    if len(request.frs) == 1:  # the candidates are all the queue's workloads on that pair
        contested = next(iter(request.frs))
        if others is not None:
            frs.update(others)
            if request.cq in holders:
                frs.update(snapshot.pairs_used(request.cq, contested))
        else:
            for name in holders:
                frs.update(snapshot.pairs_used(name, contested))
    else:
        pairs_used, sorted_in = snapshot.pairs_used, snapshot.sorted_candidates_in
        for name, (pairs, end) in candidates.items():
            if end and end == len(pairs) and pairs is sorted_in(name, request.frs):
                # every workload of the queue on the contested pairs: the pairs they use are
                # those the snapshot keeps per pair (a queue holds hundreds on a busy cluster)
                for fr in request.frs:
                    frs.update(pairs_used(name, fr))
                continue
            for index in range(end):
                frs.update(pairs[index][1].usage)
    return frs


def at_start(paths: list[QuotaNode]) -> tuple[list[int], list[Share]]:
    """The versions and shares of `paths` as a search starts (what `SearchReads` keeps)."""
    versions = [n.version for n in paths]
    return versions, [n.share.get(v) or share_of(n) for n, v in zip(paths, versions)]


def restore(nodes: list[QuotaNode], versions: list[int], shares: list[Share]) -> None:
    """After a search that left each of `nodes` with the usage it had (as `versions_kept`):
    each node edited gets its version back, and its share cache keeps only its share at that
    version. The versions the search made are never seen again, and a search makes enough of
    them to crowd the shares at the versions every later search of the cycle starts from out
    of the cache."""
    for node, version, share in zip(nodes, versions, shares):
        if node.version != version:
            node.version = version
            cache = node.share
            cache.clear()
            cache[version] = share


def paths_of(node: QuotaNode, holders: list[QuotaNode]) -> list[QuotaNode]:
    """The nodes from the root to `node` and to each of `holders`, each once."""
    path_nodes: dict[int, QuotaNode] = {}
    for start in [node] + holders:
        current: QuotaNode | None = start
        while current is not None and id(current) not in path_nodes:
            path_nodes[id(current)] = current
            current = current.parent
    return list(path_nodes.values())


class Reclaim:
    """What a search reads of the queues of a tree that borrow the contested pairs, the same
    for every preemptor with the same reclaim policy and priority bound until the next commit:
    their candidates (`entries`: CQ name -> (candidate key, workload) pairs, how many count),
    every pair the workloads of those with candidates use (one contested pair only, else
    None), the nodes on the paths from the root to those queues (`ids`: their ids) with their
    versions and shares, and `holding` of those queues."""

    __slots__ = ("entries", "used", "paths", "ids", "versions", "shares", "children")

    def __init__(self, entries: dict[str, tuple[list, int]], used: frozenset | None, paths: list[QuotaNode],
                 children: Mapping[int, tuple[list, list]]) -> None:
        self.entries, self.used, self.paths, self.children = entries, used, paths, children
        self.ids = {id(node) for node in paths}
        self.versions, self.shares = at_start(paths)
