"""Random one-field mutations of a compiled tree's objects, for `verify` against a live API server.

A mutant is one object of the tree with one change a hand might make: a quantity that is not one,
a negative quota, a name Kubernetes refuses, an unknown field, a required field removed, an enum
value that does not exist, a list item doubled, a string made too long, a borrowing limit without
a cohort. Each is judged twice: by the compiler's verify stage (`verify_objects`) and by the live
API server with Kueue's webhooks (a dry-run create, which runs validation and admission and
stores nothing). The mutant gets a fresh name (unless its name is the mutation), so the live
create meets the objects it refers to and no object of the same name.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Callable

Path = tuple[Any, ...]


@dataclass(frozen=True)
class Mutant:
    description: str
    obj: dict


def _paths(node: Any, prefix: Path = ()) -> list[Path]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, prefix + (index,))
    return found


def _get(node: Any, path: Path) -> Any:
    for step in path:
        node = node[step]
    return node


def _set(node: Any, path: Path, value: Any) -> None:
    _get(node, path[:-1])[path[-1]] = value


def _leaf_paths(obj: dict, rng: random.Random, wanted: Callable[[Path, Any], bool]) -> Path | None:
    candidates = [p for p in _paths(obj)
                  if p and p[0] not in ("metadata", "apiVersion", "kind") and wanted(p, _get(obj, p))]
    return rng.choice(candidates) if candidates else None


def _is_quantity(path: Path, value: Any) -> bool:
    return path[-1] in ("nominalQuota", "borrowingLimit", "lendingLimit") or (
        len(path) >= 2 and path[-2] in ("requests", "limits"))


BAD_QUANTITIES = ["12Gx", "1.2.3", "-1", "abc", "", "1e400"]
BAD_NAMES = ["Bad_Name", "-lead", "trail-", "UPPER", "a" * 254, "with space", "x" * 64]
UNKNOWN_FIELDS = ["colour", "nominalquota", "cohort_name", "spec2"]


def mutate(obj: dict, rng: random.Random) -> Mutant | None:
    """One mutation of `obj`, or None when the drawn kind of mutation has nothing to change."""
    mutant = copy.deepcopy(obj)
    meta = mutant.setdefault("metadata", {})
    meta.pop("annotations", None)
    meta.pop("labels", None) if rng.random() < 0.2 else None
    kind = rng.choice(["quantity", "name", "unknown", "remove", "enum", "duplicate", "long", "int", "label"])
    what = kind
    if kind == "quantity":
        path = _leaf_paths(mutant, rng, _is_quantity)
        if path is None:
            return None
        value = rng.choice(BAD_QUANTITIES)
        _set(mutant, path, value)
        what = f"{'.'.join(map(str, path))} = {value!r}"
    elif kind == "name":
        value = rng.choice(BAD_NAMES)
        meta["name"] = value
        return Mutant(f"metadata.name = {value[:20]!r}", mutant)
    elif kind == "unknown":
        path = _leaf_paths(mutant, rng, lambda p, v: isinstance(v, dict))
        if path is None:
            return None
        field = rng.choice(UNKNOWN_FIELDS)
        _get(mutant, path)[field] = "x"
        what = f"{'.'.join(map(str, path + (field,)))} added"
    elif kind == "remove":
        path = _leaf_paths(mutant, rng, lambda p, v: isinstance(p[-1], str) and p[0] == "spec")
        if path is None:
            return None
        del _get(mutant, path[:-1])[path[-1]]
        what = f"{'.'.join(map(str, path))} removed"
    elif kind == "enum":
        path = _leaf_paths(mutant, rng, lambda p, v: isinstance(v, str) and v[:1].isupper() and p[-1] != "name")
        if path is None:
            return None
        _set(mutant, path, "Sometimes")
        what = f"{'.'.join(map(str, path))} = 'Sometimes'"
    elif kind == "duplicate":
        path = _leaf_paths(mutant, rng, lambda p, v: isinstance(v, list) and v)
        if path is None:
            return None
        items = _get(mutant, path)
        items.append(copy.deepcopy(items[0]))
        what = f"{'.'.join(map(str, path))}[0] doubled"
    elif kind == "long":
        path = _leaf_paths(mutant, rng, lambda p, v: isinstance(v, str) and not _is_quantity(p, v))
        if path is None:
            return None
        _set(mutant, path, _get(mutant, path) + "-" + "y" * 300)
        what = f"{'.'.join(map(str, path))} made 300 characters longer"
    elif kind == "int":
        path = _leaf_paths(mutant, rng, lambda p, v: isinstance(v, int) and not isinstance(v, bool))
        if path is None:
            return None
        value = rng.choice([-1, 0, 10 ** 12, "7"])
        _set(mutant, path, value)
        what = f"{'.'.join(map(str, path))} = {value!r}"
    elif kind == "label":
        value = rng.choice(["bad value!", "-x", "y" * 64])
        meta.setdefault("labels", {})["example.com/team"] = value
        what = f"label value {value[:20]!r}"
    meta["name"] = (str(meta.get("name", "x"))[:40] + "-m").lower()
    return Mutant(what, mutant)


def mutants(objects: list[dict], count: int, seed: int) -> list[Mutant]:
    rng = random.Random(seed)
    out: list[Mutant] = []
    while len(out) < count:
        mutant = mutate(rng.choice(objects), rng)
        if mutant is not None:
            out.append(mutant)
    return out
