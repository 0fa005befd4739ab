"""Is one GPU's MIG layout physically placeable?

A layout is a multiset of profiles of one model (`{"3g.40gb": 1, "1g.10gb": 4}`), which is what
nvidia-mig-manager takes: it tries creation orders and lets the driver pick positions. We prove a
layout can be created by finding positions: every instance occupies
[start, start + memory_slices) on the memory-slice axis for one of its profile's allowed starts,
instances do not overlap, per-profile counts stay within max_count and at most one media-extension
(+me) instance exists per GPU. Layouts have at most 8 instances, so a backtracking search with
bit masks is instantaneous.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from compiler.mig.catalogue import (Catalogue, GpuModel, MigProfile, canonical_profile_name,
                                    load_catalogue)

Layout = tuple[tuple[str, int], ...]   # canonical, hashable form: sorted (profile, count) pairs


def canonical_layout(profiles: Mapping[str, int]) -> Layout:
    return tuple(sorted((name, int(count)) for name, count in profiles.items() if count))


def find_placement(gpu: GpuModel, profiles: Mapping[str, int]) -> list[tuple[str, int]] | None:
    """Positions `[(profile, start), ...]` for every instance, or None if none exist.

    Assumes names are valid profiles of `gpu` (check_layout reports the others)."""
    instances: list[MigProfile] = []
    for name, count in profiles.items():
        instances.extend([gpu.profiles[name]] * int(count))
    # Biggest first: the largest instances have the fewest allowed starts.
    instances.sort(key=lambda p: (-p.memory_slices, len(p.placement_starts), p.name))
    return _place(gpu.memory_slices, tuple(instances))


def _place(total_slices: int, instances: tuple[MigProfile, ...]) -> list[tuple[str, int]] | None:
    placed: list[tuple[str, int]] = []
    failed: set[tuple[int, int]] = set()    # (index, occupied mask) already known to fail

    def search(index: int, occupied: int, min_start: int) -> bool:
        if index == len(instances):
            return True
        if (index, occupied) in failed and min_start == 0:
            return False
        profile = instances[index]
        for start in profile.placement_starts:
            if start < min_start or start + profile.memory_slices > total_slices:
                continue
            mask = ((1 << profile.memory_slices) - 1) << start
            if occupied & mask:
                continue
            placed.append((profile.name, start))
            # Identical instances are interchangeable: place them in increasing start order.
            same_next = index + 1 < len(instances) and instances[index + 1].name == profile.name
            if search(index + 1, occupied | mask, start + 1 if same_next else 0):
                return True
            placed.pop()
        if min_start == 0:
            failed.add((index, occupied))
        return False

    return list(placed) if search(0, 0, 0) else None


def check_layout(model: GpuModel | str, profiles: Mapping[str, int],
                 catalogue: Catalogue | None = None) -> list[str]:
    """Every reason this per-GPU layout cannot be created; an empty list means it can.
    A model given by name is looked up here, once."""
    cat = catalogue or load_catalogue()
    gpu = model if isinstance(model, GpuModel) else cat.model(model)
    if gpu is None:
        return [cat.describe_unknown_model(model)]
    problems: list[str] = []
    profiles = {name if name in gpu.profiles else canonical_profile_name(name): count
                for name, count in profiles.items()}
    for name, count in sorted(profiles.items()):
        if name not in gpu.profiles:
            problems.append(cat.describe_unknown_profile(gpu.name, name))
        elif not isinstance(count, int) or isinstance(count, bool) or count < 0:
            problems.append(f"count of {name} must be a whole number >= 0, got {count!r}")
    if problems:
        return problems
    wanted = {name: count for name, count in profiles.items() if count}
    if not wanted:
        return ["the layout is empty: give at least one profile with a count above 0"]
    return _physical_problems(gpu, wanted)


def _physical_problems(gpu: GpuModel, wanted: Mapping[str, int]) -> list[str]:
    """Why a layout of known profiles and positive counts cannot be created on `gpu`."""
    problems: list[str] = []
    for name, count in sorted(wanted.items()):
        profile = gpu.profiles[name]
        if count > profile.max_count:
            problems.append(f"{count} x {name} exceeds the {profile.max_count} a {gpu.name} can hold")
    media = sum(count for name, count in wanted.items() if gpu.profiles[name].is_media_extension)
    if media > 1:
        problems.append(f"{media} media-extension (+me) instances: a GPU has one set of media "
                        "engines, so at most one +me instance fits")
    compute = sum(gpu.profiles[n].compute_slices * c for n, c in wanted.items())
    memory = sum(gpu.profiles[n].memory_slices * c for n, c in wanted.items())
    if compute > gpu.compute_slices:
        problems.append(f"needs {compute} compute slices, a {gpu.name} has {gpu.compute_slices}")
    if memory > gpu.memory_slices:
        problems.append(f"needs {memory} memory slices, a {gpu.name} has {gpu.memory_slices}")
    if not problems and find_placement(gpu, wanted) is None:
        problems.append(
            f"no placement exists on a {gpu.name}: the instances' allowed start slices collide "
            f"({describe_layout(wanted)}; e.g. a 2g cannot start at slice 6 and 3g only starts at 0 or 4)")
    return problems


def is_placeable(gpu: GpuModel, profiles: Mapping[str, int]) -> bool:
    return not check_layout(gpu, profiles)


def describe_layout(profiles: Mapping[str, int]) -> str:
    return " + ".join(f"{count}x{name}" for name, count in canonical_layout(profiles))


# (id of the model, profile names) -> (the model, kept alive so the id stays its own; layouts)
_FEASIBLE: dict[tuple[int, tuple[str, ...]], tuple[GpuModel, tuple[Layout, ...]]] = {}


def _enumerate_layouts(gpu: GpuModel, profile_names: tuple[str, ...]) -> tuple[Layout, ...]:
    profiles = [gpu.profiles[name] for name in profile_names]
    feasible: list[Layout] = []
    # Grow count vectors profile by profile; a vector that cannot be placed has no placeable
    # superset, so that branch is cut.
    def grow(position: int, counts: dict[str, int]) -> None:
        if position == len(profiles):
            if counts:
                feasible.append(canonical_layout(counts))
            return
        profile = profiles[position]
        for count in range(0, profile.max_count + 1):
            trial = dict(counts)
            if count:
                trial[profile.name] = count
                if _physical_problems(gpu, trial):
                    break
            grow(position + 1, trial)

    grow(0, {})
    return tuple(sorted(set(feasible)))


def feasible_layouts(gpu: GpuModel, profile_names: Iterable[str] | None = None) -> tuple[Layout, ...]:
    """Every non-empty placeable multiset over `profile_names` (default: all the model's),
    enumerated once per model and profile set."""
    names = tuple(sorted(profile_names if profile_names is not None else gpu.profiles))
    key = (id(gpu), names)
    if key not in _FEASIBLE or _FEASIBLE[key][0] is not gpu:
        _FEASIBLE[key] = (gpu, _enumerate_layouts(gpu, names))
    return _FEASIBLE[key][1]


def maximal_layouts(layouts: Iterable[Layout]) -> list[Layout]:
    """Layouts to which no instance of the given profiles can be added."""
    layout_set = set(layouts)
    names = sorted({name for layout in layout_set for name, _ in layout})
    result = []
    for layout in sorted(layout_set):
        counts = dict(layout)
        bigger = False
        for name in names:
            trial = dict(counts)
            trial[name] = trial.get(name, 0) + 1
            if canonical_layout(trial) in layout_set:
                bigger = True
                break
        if not bigger:
            result.append(layout)
    return result


def all_placements(gpu: GpuModel, profile_names: Iterable[str]) -> int:
    """Number of distinct non-empty placement configurations (sets of (profile, start)).

    Used by tests to cross-check the enumeration against the reference counts."""
    options = []
    for name in sorted(profile_names):
        profile = gpu.profiles[name]
        for start in profile.placement_starts:
            if start + profile.memory_slices <= gpu.memory_slices:
                options.append((profile, start, (((1 << profile.memory_slices) - 1) << start)))
    total = 0

    def walk(index: int, occupied: int, media: int, size: int) -> None:
        nonlocal total
        if index == len(options):
            total += 1 if size else 0
            return
        walk(index + 1, occupied, media, size)
        profile, _start, mask = options[index]
        if occupied & mask:
            return
        if profile.is_media_extension and media:
            return
        walk(index + 1, occupied | mask, media + profile.is_media_extension, size + 1)

    walk(0, 0, 0, 0)
    return total


__all__ = ["check_layout", "find_placement", "feasible_layouts", "maximal_layouts",
           "canonical_layout", "describe_layout", "is_placeable", "Layout", "all_placements"]
