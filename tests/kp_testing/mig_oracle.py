"""Independent brute-force references for the MIG tests (deliberately naive, no shared code
with compiler.mig beyond reading the catalogue's numbers)."""

from __future__ import annotations

import functools
import itertools

from compiler.mig.catalogue import GpuModel


def brute_force_placeable(gpu: GpuModel, layout: dict[str, int]) -> bool:
    """Scan the memory slices left to right: each slice is either left empty or is the start of
    one of the instances still to place (a different algorithm from the planner's bit masks)."""
    if sum(gpu.profiles[n].is_media_extension * c for n, c in layout.items()) > 1:
        return False
    if any(count > gpu.profiles[name].max_count for name, count in layout.items()):
        return False

    def scan(slot: int, remaining: tuple[tuple[str, int], ...]) -> bool:
        if all(count == 0 for _, count in remaining):
            return True
        if slot >= gpu.memory_slices:
            return False
        for index, (name, count) in enumerate(remaining):
            profile = gpu.profiles[name]
            if count and slot in profile.placement_starts and slot + profile.memory_slices <= gpu.memory_slices:
                rest = remaining[:index] + ((name, count - 1),) + remaining[index + 1:]
                if scan(slot + profile.memory_slices, rest):
                    return True
        return scan(slot + 1, remaining)

    return scan(0, tuple(sorted(layout.items())))


_EVERY_LAYOUT: dict[str, tuple] = {}


def _every_layout(gpu: GpuModel) -> tuple[tuple[tuple[str, int], ...], ...]:
    if gpu.name in _EVERY_LAYOUT:
        return _EVERY_LAYOUT[gpu.name]
    names = sorted(gpu.profiles)
    found = []
    for counts in itertools.product(*[range(gpu.profiles[n].max_count + 1) for n in names]):
        layout = {n: c for n, c in zip(names, counts) if c}
        if layout and brute_force_placeable(gpu, layout):
            found.append(tuple(sorted(layout.items())))
    _EVERY_LAYOUT[gpu.name] = tuple(found)
    return _EVERY_LAYOUT[gpu.name]


def all_layouts(gpu: GpuModel, names: list[str]) -> list[dict[str, int]]:
    """Every placeable non-empty layout that uses only `names`."""
    allowed = set(names)
    return [dict(layout) for layout in _every_layout(gpu) if all(n in allowed for n, _ in layout)]


def minimum_gpus(gpu: GpuModel, demand: dict[str, int]) -> int:
    """Exact minimum by memoised search over remaining demand vectors (small demands only)."""
    names = sorted(n for n, c in demand.items() if c)
    layouts = [tuple(layout.get(n, 0) for n in names) for layout in all_layouts(gpu, names)]

    @functools.lru_cache(maxsize=None)
    def best(remaining: tuple[int, ...]) -> int:
        if not any(remaining):
            return 0
        # The first profile still needed must be on some GPU: branch on layouts containing it.
        first = next(i for i, r in enumerate(remaining) if r)
        answer = 10**9
        for layout in layouts:
            if layout[first]:
                rest = tuple(max(0, r - l) for r, l in zip(remaining, layout))
                answer = min(answer, 1 + best(rest))
        return answer

    return best(tuple(demand[n] for n in names))


def fewest_distinct_layouts(gpu: GpuModel, demand: dict[str, int], gpus: int) -> int:
    """Smallest number of distinct layouts in any plan with exactly `gpus` GPUs (small cases)."""
    names = sorted(n for n, c in demand.items() if c)
    layouts = [tuple(layout.get(n, 0) for n in names) for layout in all_layouts(gpu, names)]
    need = [demand[n] for n in names]

    def fits(chosen: tuple[tuple[int, ...], ...], left: int, held: list[int]) -> bool:
        if not chosen:
            return left == 0 and all(h >= n for h, n in zip(held, need))
        first, rest = chosen[0], chosen[1:]
        for copies in range(1, left - len(rest) + 1):
            if fits(rest, left - copies, [h + copies * l for h, l in zip(held, first)]):
                return True
        return False

    for size in range(1, gpus + 1):
        for chosen in itertools.combinations(layouts, size):
            if fits(chosen, gpus, [0] * len(names)):
                return size
    raise AssertionError("no plan with that many GPUs")
