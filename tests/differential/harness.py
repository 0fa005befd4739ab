"""Compare two engines on one world and shrink a disagreement to a minimal valid world.

Per workload the harness compares `status`, `assignment` (flavors), `count` and `preemptedBy`;
`reason` is Kueue's message and is reported, not compared. A workload missing from one side is a
difference too. An engine that fails (crash, timeout, no JSON) counts as a disagreement.

Shrinking is delta debugging: first whole objects are removed (chunks, then one at a time),
then fields (dict keys, list items, integers and quantities made smaller), repeating until a
whole pass changes nothing. A candidate is kept only when it is still a valid world
(validity.problems is empty) and the engines still disagree on it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import yaml

from .engines import Engine, EngineFailure, InvalidWorld, python_engine
from .validity import problems
from .tas_engine_worlds import tas_engine_world
from .worlds import dump, world

COMPARED = ("status", "assignment", "count", "preemptedBy")
# TAS worlds (tas_engine_worlds.py) compare where the pods went, and Kueue's reason byte for byte.
COMPARED_TAS = COMPARED + ("topologyAssignment", "reason")


@dataclass
class Outcome:
    differences: list[str]
    left: dict | str  # JSON document, or the failure text
    right: dict | str
    invalid: bool = False  # the Python loader refused an object of the world

    @property
    def agree(self) -> bool:
        return not self.differences


def _run(engine: Engine, text: str) -> dict | str:
    try:
        return engine(text)
    except EngineFailure as error:
        return f"engine failure: {error}"


def pod_set_groups(text: str) -> dict[str, dict[str, str]]:
    """Workload "namespace/name" -> {pod set: its podSetGroupName}, for the Workloads of a world."""
    groups: dict[str, dict[str, str]] = {}
    for doc in yaml.safe_load_all(text):
        if not isinstance(doc, dict) or doc.get("kind") != "Workload":
            continue
        meta = doc.get("metadata") or {}
        for ps in (doc.get("spec") or {}).get("podSets") or []:
            group = (ps.get("topologyRequest") or {}).get("podSetGroupName")
            if group:
                key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                groups.setdefault(key, {})[ps["name"]] = group
    return groups


def _group_reason(reason: object, members: dict[str, str]) -> object:
    """A reason with a pod-set group's members named by their group. When a group cannot be
    placed Kueue gives the reason to either member at random (TASAssignmentsResult.Failure
    ranges over a Go map: one input, six runs, the leader named four times and the workers
    twice), so which member a reason names is not compared; the reason itself is."""
    if not isinstance(reason, str):
        return reason
    for member, group in members.items():
        reason = reason.replace(f"pod set {member}: ", f"pod set (group {group}): ")
    return reason


def compare(left: dict | str, right: dict | str, names: tuple[str, str] = ("python", "kueue"),
            fields: tuple[str, ...] = COMPARED, groups: dict[str, dict[str, str]] | None = None) -> list[str]:
    if isinstance(left, str) or isinstance(right, str):
        return [text for text in (left, right) if isinstance(text, str)]
    by_name = [{w["name"]: w for w in doc.get("workloads", [])} for doc in (left, right)]
    out = []
    for name in sorted(set(by_name[0]) | set(by_name[1])):
        a, b = by_name[0].get(name), by_name[1].get(name)
        if a is None or b is None:
            out.append(f"{name}: only in {names[0] if b is None else names[1]}")
            continue
        for key in fields:
            if key == "reason" and a.get("status") == "running":
                continue  # (a running Workload's reason is its input's condition message)
            if key == "reason" and groups and name in groups and a.get(key) != b.get(key):
                if _group_reason(a.get(key), groups[name]) == _group_reason(b.get(key), groups[name]):
                    continue
            if a.get(key) != b.get(key):
                out.append(f"{name}: {key} {names[0]}={a.get(key)!r} {names[1]}={b.get(key)!r}")
    return out


def difference_keys(differences: list[str]) -> set[str]:
    """What a shrunk world must still show: the same status pair for a workload, a difference
    in the same field of the same workload otherwise; engine failures as one key."""
    keys = set()
    for text in differences:
        if text.startswith(("engine failure", "invalid world")):
            keys.add("failure")
        elif ": status " in text:
            keys.add(text)  # the same status pair, not any status difference
        else:
            keys.add(" ".join(text.split(" ")[:2]))
    return keys


def run_world(text: str, left: Engine, right: Engine, fields: tuple[str, ...] = COMPARED) -> Outcome:
    try:
        a = left(text)
    except InvalidWorld as error:
        return Outcome([f"invalid world: {error}"], str(error), "", invalid=True)
    except EngineFailure as error:
        a = f"engine failure: {error}"
    b = _run(right, text)
    groups = pod_set_groups(text) if "reason" in fields else None
    return Outcome(compare(a, b, fields=fields, groups=groups), a, b)


def generated(seed: int, index: int, tas: bool = False) -> list[dict]:
    """World `index` of `seed`: an ordinary one, or with `tas` a Topology Aware Scheduling one."""
    return tas_engine_world(seed, index) if tas else world(seed, index)


def _compare_world(task: tuple[int, int, Engine, bool]) -> tuple[int, list[str]]:
    seed, index, reference, tas = task
    return index, run_world(dump(generated(seed, index, tas)), python_engine, reference,
                            COMPARED_TAS if tas else COMPARED).differences


def disagreeing_worlds(seed: int, indices: Iterable[int], reference: Engine, jobs: int = 1, tas: bool = False
                       ) -> Iterator[tuple[int, list[str]]]:
    """(index, differences) of every generated world on which the Python engine and `reference`
    disagree, in index order; `jobs` worker processes compare worlds side by side."""
    tasks = [(seed, index, reference, tas) for index in indices]
    if jobs <= 1:
        for index, differences in map(_compare_world, tasks):
            if differences:
                yield index, differences
        return
    with ProcessPoolExecutor(jobs) as pool:
        for index, differences in pool.map(_compare_world, tasks, chunksize=4):
            if differences:
                yield index, differences


def kueue_varies_and_once_agrees(seed: int, index: int, reference: Engine, tas: bool, runs: int = 6) -> bool:
    """Whether `reference` (kueue-oracle), which has just answered world `seed/index` otherwise
    than the Python engine, gives the engine's answer on one of `runs` more runs: then Kueue
    itself answers the world in more than one way (Go's map order where domains, victims or
    heads tie), and the engine's answer is one of Kueue's."""
    text = dump(generated(seed, index, tas))
    fields = COMPARED_TAS if tas else COMPARED
    return any(not run_world(text, python_engine, reference, fields).differences for _ in range(runs))


# ---- shrinking -------------------------------------------------------------------------------
def _paths(node: object, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path to a dict key or list item below node, deepest first (a leaf is cheaper)."""
    if isinstance(node, dict):
        for key in list(node):
            yield from _paths(node[key], prefix + (key,))
            yield prefix + (key,)
    elif isinstance(node, list):
        for index in range(len(node) - 1, -1, -1):
            yield from _paths(node[index], prefix + (index,))
            yield prefix + (index,)


def _get(node: object, path: tuple) -> object:
    for step in path:
        node = node[step]
    return node


def _smaller(value: object) -> list[object]:
    """Simpler replacements for a scalar: smaller integers and quantities."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [v for v in (0, 1, value // 2, value - 1) if 0 <= v < value]
    if isinstance(value, str) and value.rstrip("Gi").isdigit() and value.rstrip("Gi"):
        number, unit = int(value.rstrip("Gi")), value[len(value.rstrip("Gi")):]
        return [f"{v}{unit}" for v in (0, 1, number // 2, number - 1) if 0 <= v < number]
    return []


_DELETE = object()
# The API server sets these on every object: a world without them is not one a cluster holds.
_SERVER_SET = {("metadata", "creationTimestamp"), ("metadata", "uid")}


def _field_edits(objects: list[dict]) -> Iterator[tuple[int, tuple, object]]:
    """(object index, path, replacement or _DELETE) for every field edit, applied by _apply."""
    for index, obj in enumerate(objects):
        for path in list(_paths(obj)):
            if path[:1] in (("apiVersion",), ("kind",)) or path[-1] == "name" or path[:2] in _SERVER_SET:
                continue
            if path[-1] != "count":
                # names (identity) and counts (the API server defaults them) stay; others may go
                yield index, path, _DELETE
            for smaller in _smaller(_get(obj, path)):
                yield index, path, smaller


def _apply(objects: list[dict], edit: tuple[int, tuple, object]) -> list[dict]:
    index, path, replacement = edit
    candidate = list(objects)
    candidate[index] = copy.deepcopy(objects[index])
    parent = _get(candidate[index], path[:-1])
    if replacement is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return candidate


@dataclass
class Shrinker:
    left: Engine
    right: Engine
    budget_seconds: float = 300
    target: set[str] | None = None  # the (workload, field) differences to keep (None: any)
    fields: tuple[str, ...] = COMPARED
    tries: int = 0
    started: float = field(default_factory=time.monotonic)

    def interesting(self, objects: list[dict]) -> bool:
        if self.out_of_time():
            return False
        self.tries += 1
        if problems(objects):
            return False
        outcome = run_world(dump(objects), self.left, self.right, self.fields)
        if outcome.agree or outcome.invalid:
            return False
        return self.target is None or bool(self.target & difference_keys(outcome.differences))

    def shrink(self, objects: list[dict]) -> list[dict]:
        if self.target is None:
            # keep the disagreement found, not another one a smaller world happens to show
            self.target = difference_keys(run_world(dump(objects), self.left, self.right,
                                                    self.fields).differences) or None
        current = objects
        changed = True
        while changed and not self.out_of_time():
            changed = False
            reduced = self._remove_objects(current)
            if len(reduced) < len(current):
                current, changed = reduced, True
            reduced = self._edit_fields(current)
            if reduced is not current:
                current, changed = reduced, True
        return current

    def out_of_time(self) -> bool:
        return time.monotonic() - self.started > self.budget_seconds

    def _edit_fields(self, objects: list[dict]) -> list[dict]:
        """One pass over the fields; after a kept edit the pass goes on from the same position
        in the new world's edit list (the kept edit is gone, so that position is a new edit)."""
        position = 0
        while not self.out_of_time():
            for offset, edit in enumerate(_field_edits(objects)):
                if offset < position:
                    continue
                candidate = _apply(objects, edit)
                if self.interesting(candidate):
                    objects, position = candidate, offset
                    break
            else:
                return objects
        return objects

    def _remove_objects(self, objects: list[dict]) -> list[dict]:
        chunk = max(1, len(objects) // 2)
        while chunk >= 1:
            start = 0
            while start < len(objects):
                candidate = objects[:start] + objects[start + chunk:]
                if candidate and self.interesting(candidate):
                    objects = candidate
                else:
                    start += chunk
            chunk //= 2
        return objects


def shrink(objects: list[dict], left: Engine, right: Engine, budget_seconds: float = 300,
           fields: tuple[str, ...] = COMPARED) -> list[dict]:
    return Shrinker(left, right, budget_seconds, fields=fields).shrink(objects)


def shrink_with(objects: list[dict], keep: Callable[[list[dict]], bool], budget_seconds: float = 300) -> list[dict]:
    """Shrink with any predicate (tests use it to check the shrinker itself)."""
    shrinker = Shrinker(lambda text: {}, lambda text: {}, budget_seconds)
    shrinker.interesting = lambda objs: (not problems(objs)) and keep(objs)  # type: ignore[method-assign]
    return shrinker.shrink(objects)
