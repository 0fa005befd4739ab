"""The proof across pools: which cheaper candidates are left to simulate to show the answer is the
cheapest within the bounds, not only one no single pool can shrink from.

The descent's proof shows that a granule less in any one pool misses a target. A cheaper
candidate can still move nodes between pools: fewer of a costly pool's, more of a cheap one's.
Under the search's assumption (a candidate at or below a failing one, pool by pool, fails too:
fewer nodes never shorten a wait), every candidate cheaper than the answer lies at or below a
*maximal* one: cheaper than the answer, but not with a granule more in any pool that can grow.
Those maximal candidates not at or below a candidate already seen failing are the only ones left;
if they all fail, no candidate within the bounds is cheaper than the answer.

With one pool free to move this is the descent's own neighbour; with two it is a staircase of
about one candidate per node of the smaller range; with many pools it grows as their product,
hence the budget (`--proof-budget`) and a limit on the enumeration itself. Past the budget, each
pool's floor helps: the fewest nodes of it that meet the targets with every other pool at its
maximum (`floor_probes`, a handful of simulations). Every candidate with fewer is below that
failure, so only candidates above every floor are enumerated; where each pool serves teams of
its own, the floors are the answer's counts, and none cheaper is left.

Where a target can grow with the pools (preemptions, jobs on nodes too small for their pods), a
candidate below a maximal one can meet it where the maximal one does not: then every cheaper
candidate not covered by a failure on a wait is left, not only the maximal ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator

from compiler.capacity.space import PoolSpace

# Partial candidates the enumeration visits before it gives up (a proof it cannot list is
# reported as not proved): with a dozen movable pools the staircase has billions of points.
MAX_VISITED = 200_000
# Counts a round of the floor probes asks per pool past its first (a 4-ary search, as the descent's).
PROBES = 3
# Two costs this close are equal (costs are rounded to 6 decimals, as `cost_of` rounds them).
EPSILON = 1e-7


@dataclass(frozen=True)
class Staircase:
    """The candidates cheaper than the answer that no known failure covers: the maximal ones, or
    every one (`staircase(..., every=True)`)."""

    # (pool, nodes) for every pool, most expensive first; none kept when there are more than `keep`
    open: list[tuple[tuple[str, int], ...]]
    count: int | None   # how many there are; None: too many to enumerate (MAX_VISITED)

    def within(self, most: int) -> bool:
        """Whether they are listed and no more than `most`."""
        return self.count is not None and self.count <= most


def _node_price(pool: PoolSpace) -> float:
    return pool.granule * pool.gpus_per_node * pool.price


def _cheaper(pools: list[PoolSpace], below: float, every: bool) -> Iterator[dict[str, int]]:
    """Every node count per pool within the bounds costing less than `below` (`every`), or only
    those not with one granule more of any pool that can grow; raises OverflowError past
    MAX_VISITED partial ones."""
    fixed = [p for p in pools if not p.movable]
    movable = [p for p in pools if p.movable]
    base = sum(p.minimum * p.gpus_per_node * p.price for p in fixed)
    floor = [sum(q.minimum * q.gpus_per_node * q.price for q in movable[i:]) for i in range(len(movable) + 1)]
    visited = 0
    chosen: dict[str, int] = {p.name: p.minimum for p in fixed}

    def walk(i: int, spent: float) -> Iterator[dict[str, int]]:
        nonlocal visited
        visited += 1
        if visited > MAX_VISITED:
            raise OverflowError
        pool = movable[i]
        per_node = pool.gpus_per_node * pool.price
        rest = floor[i + 1]
        if i == len(movable) - 1 and not every:
            count = _most(pool, below - spent - rest, per_node)
            if count is None:
                return
            chosen[pool.name] = count
            total = spent + count * per_node
            if all(chosen[p.name] >= p.maximum or total + _node_price(p) >= below - EPSILON for p in movable):
                yield dict(chosen)
            return
        for count in range(pool.minimum, pool.maximum + 1, pool.granule):
            cost = spent + count * per_node
            if cost + rest >= below - EPSILON:
                break
            chosen[pool.name] = count
            if i == len(movable) - 1:
                visited += 1
                if visited > MAX_VISITED:
                    raise OverflowError
                yield dict(chosen)
            else:
                yield from walk(i + 1, cost)

    if movable:
        yield from walk(0, base)


def _most(pool: PoolSpace, room: float, per_node: float) -> int | None:
    """The most nodes of the pool (a multiple of its granule, within its bounds) costing less than
    `room`; None if even its minimum does not."""
    if pool.minimum * per_node >= room - EPSILON:
        return None
    if per_node <= 0:
        return pool.maximum
    count = pool.minimum + int((room - EPSILON - pool.minimum * per_node) / per_node / pool.granule) * pool.granule
    count = min(pool.maximum, count)
    while count > pool.minimum and count * per_node >= room - EPSILON:
        count -= pool.granule
    return count


def every_cheaper(pools: list[PoolSpace], below: float, most: int) -> list[tuple[tuple[str, int], ...]] | None:
    """Every candidate within the bounds cheaper than `below`, as (pool, nodes) for every pool,
    most expensive first, if they are no more than `most` (each is a simulation to run); None if
    they are more, where it stops counting."""
    found = []
    try:
        for nodes in _cheaper(pools, below, every=True):
            found.append(nodes)
            if len(found) > most:
                return None
    except OverflowError:
        return None
    return [tuple((p.name, nodes[p.name]) for p in pools) for nodes in _by_cost(pools, found)]


def staircase(pools: list[PoolSpace], below: float, failures: list[dict[str, int]], every: bool = False,
              keep: int | None = None) -> Staircase:
    """The maximal candidates cheaper than `below` (the answer's cost per hour), or every one
    (`every`), that are not at or below any of `failures` (node counts of candidates that missed
    a target waits decide): counted, and kept only if no more than `keep` (each is a simulation
    to run, and a search over a dozen pools would hold hundreds of thousands)."""
    names = [p.name for p in pools]
    low = floors(pools, failures)
    if any(low[p.name] > p.maximum for p in pools):
        return Staircase([], 0)   # (a failure at the largest candidate covers every one)
    # (every candidate below a floor is covered: not enumerated, which a dozen pools need)
    pools = [dataclasses.replace(p, minimum=low[p.name]) for p in pools]
    failures = _maximal(failures, names)

    def covered(nodes: dict[str, int]) -> bool:
        return any(all(nodes[n] <= failure[n] for n in names) for failure in failures)

    found, count = [], 0
    try:
        for nodes in _cheaper(pools, below, every):
            if not covered(nodes):
                count += 1
                if keep is None or count <= keep:
                    found.append(nodes)
    except OverflowError:
        return Staircase([], None)
    if keep is not None and count > keep:
        return Staircase([], count)
    return Staircase([tuple((n, nodes[n]) for n in names) for nodes in _by_cost(pools, found)], count)


def _maximal(failures: list[dict[str, int]], names: list[str]) -> list[dict[str, int]]:
    """The failures not at or below another: they cover the same candidates, and a descent over
    a dozen pools leaves hundreds of failures of which a score are maximal."""
    kept: list[dict[str, int]] = []
    for failure in sorted(failures, key=lambda f: -sum(f.values())):
        if not any(all(failure[n] <= other[n] for n in names) for other in kept):
            kept.append(failure)
    return kept


def floors(pools: list[PoolSpace], failures: list[dict[str, int]]) -> dict[str, int]:
    """Per pool, the fewest nodes a candidate not covered by `failures` can have: a failure with
    every other pool at its maximum covers every candidate with no more of its pool than it has,
    whatever the others (a maximum past the pool's: a failure at the largest covers them all)."""
    low = {p.name: p.minimum for p in pools}
    for failure in failures:
        short = [p for p in pools if failure[p.name] < p.maximum]
        if not short:
            return {p.name: p.maximum + p.granule for p in pools}
        if len(short) == 1:
            pool = short[0]
            low[pool.name] = max(low[pool.name], failure[pool.name] + pool.granule)
    return low


def floor_probes(pools: list[PoolSpace], answer: dict[str, int], failures: list[dict[str, int]],
                 simulate: Callable[[list[tuple[tuple[str, int], ...]]], list[bool]],
                 budget: int) -> list[dict[str, int]]:
    """Failures that raise the pools' floors (`floors`), found by simulating, for each pool that
    can move, candidates with every other pool at its maximum and this one between its floor and
    the answer's count: the first round one granule below the answer (a failure there shows the
    answer's count is the pool's floor), then a 4-ary search between the highest failing and the
    lowest meeting count. `simulate` tells for each candidate whether it misses a wait; no more
    than `budget` are simulated. The failures found: cheaper candidates that move nodes between
    pools are then only those above every floor, which for pools that serve their own teams is
    none."""
    top = {p.name: p.maximum for p in pools}
    low = floors(pools, failures)
    # pool -> (the highest count known to miss a wait, the lowest known not to), in its granules
    bounds = {p.name: (low[p.name] - p.granule, answer[p.name]) for p in pools
              if p.movable and low[p.name] <= answer[p.name] - p.granule}
    found, spent = [], 0
    by_name = {p.name: p for p in pools}
    first = True
    while bounds and spent < budget:
        asked = []
        for name, (failing, meeting) in sorted(bounds.items()):
            unit = by_name[name].granule
            if first:
                counts = [meeting - unit]
            else:
                gaps = (meeting - failing) // unit
                counts = sorted({failing + unit * max(1, gaps * j // (PROBES + 1)) for j in range(1, PROBES + 1)}
                                - {meeting})
            asked += [(name, count) for count in counts]
        asked = asked[:budget - spent]
        nodes = [tuple((p.name, count if p.name == name else top[p.name]) for p in pools) for name, count in asked]
        missed = simulate(nodes)
        spent += len(nodes)
        for (name, count), probe, miss in zip(asked, nodes, missed):
            failing, meeting = bounds[name]
            if miss:
                found.append(dict(probe))
                bounds[name] = (max(failing, count), meeting)
            else:
                bounds[name] = (failing, min(meeting, count))
        bounds = {name: (f, m) for name, (f, m) in bounds.items() if m - f > by_name[name].granule}
        first = False
    return found


def _by_cost(pools: list[PoolSpace], found: list[dict[str, int]]) -> list[dict[str, int]]:
    """Node counts most expensive first (ties: by the counts, in the pools' order)."""
    names = [p.name for p in pools]

    def cost(nodes: dict[str, int]) -> float:
        return sum(nodes[p.name] * p.gpus_per_node * p.price for p in pools)

    return sorted(found, key=lambda nodes: (-cost(nodes), [nodes[n] for n in names]))
