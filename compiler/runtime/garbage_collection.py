"""Garbage collection for the engine's long in-memory runs (`evaluate`, `simulate`).

The engine builds a large, long-lived graph once (quota nodes, workload infos, cached
nominations and search answers) and then allocates small short-lived objects by the million.
CPython's cyclic collector runs a young collection every 700 net allocations and, every
hundred of those, a full one that walks every live container object: on a 25,000-job
simulation that is a quarter of the run spent re-checking objects that are never garbage.
The engine's short-lived working objects are freed by reference counting, so the collector
has little to find during a run; `few_collections` moves what exists before the run out of its
sight (`gc.freeze`) and lets young objects accumulate longer between collections. A finished
run's graph is left in reference cycles: a caller that runs many (`capacity`, a candidate after
another) collects after each. Nothing
the engine decides depends on when the collector runs: output is the same byte for byte.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

# Young-generation threshold during a run (CPython's default is 700): large enough that the
# collector runs a few hundred times on a long simulation instead of a few hundred thousand,
# small enough that memory held by any cycle stays bounded.
YOUNG_THRESHOLD = 100_000
_depth = 0  # blocks entered and not left: only the outermost changes the collector


@contextmanager
def few_collections() -> Iterator[None]:
    """Inside the block, the objects alive at its start are not scanned by the collector and
    young collections are rarer; both are restored on leaving (also on an exception). Blocks
    nest (a command around a whole run, the engine around its loop): only the outermost one
    acts. A caller that disabled the collector keeps it disabled."""
    global _depth
    if not gc.isenabled() or _depth:
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
        return
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), threshold[1], threshold[2])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        gc.set_threshold(*threshold)
        gc.unfreeze()
