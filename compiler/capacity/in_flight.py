"""How far the candidates under simulation have got, for the progress bar.

Why: the bar moves when a candidate finishes, and on an overloaded cluster one candidate can take
minutes (docs/how-to/capacity.md, fair sharing far below demand). Without this the bar looks
hung; with it, it says which second of the trace each running simulation has reached.

Nothing here takes part in a decision: a simulation is told nothing back, so every figure and
the answer are the same with the bar on or off (tests/capacity/test_in_flight.py).

- `Reporting` is the simulation's moment watch: it tells `reach` every moment's end and passes
  the moment on to the certain-miss watch, if the evaluation has one.
- In this process (`--workers 1`) the simulation runs on the bar's own thread, so `throttled`
  reports to the bar at most every `interval` seconds of wall time.
- Forked workers each write their moment into a slot of shared memory (`SharedSlots`), which
  the search's process reads while it waits for the next evaluation.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Callable

from compiler.simulate.driver import MomentWatch

# A simulation's moment reached, in seconds of the trace, told as it goes.
Reach = Callable[[int], None]
# The moments every running simulation has reached, told to the progress bar.
Running = Callable[[list[int]], None]
IDLE = -1


class Reporting:
    """A moment watch telling `reach` each moment's end; it stops the run when `inner` (the
    certain-miss watch, or None) does."""

    __slots__ = ("inner", "reach")

    def __init__(self, inner: MomentWatch | None, reach: Reach) -> None:
        self.inner = inner
        self.reach = reach

    def start(self, runs) -> None:
        if self.inner is not None:
            self.inner.start(runs)

    def after(self, now: int, preempted) -> bool:
        self.reach(now)
        return self.inner is not None and self.inner.after(now, preempted)


def throttled(running: Running, interval: float = 0.25) -> Reach:
    """`reach` for a simulation in this process: `running` told at most every `interval` s."""
    last = [time.monotonic()]

    def reach(now: int) -> None:
        tick = time.monotonic()
        if tick - last[0] >= interval:
            last[0] = tick
            running([now])

    return reach


class SharedSlots:
    """One slot of shared memory per forked worker: the moment its simulation reached, or IDLE.
    Made before the fork; each worker takes its slot once, in the pool's initializer."""

    def __init__(self, workers: int) -> None:
        context = multiprocessing.get_context("fork")
        self.values = context.Array("q", [IDLE] * workers, lock=False)
        self._taken = context.Value("i", 0)

    def take(self) -> int:
        with self._taken.get_lock():
            slot = self._taken.value
            self._taken.value += 1
        return slot

    def reached(self) -> list[int]:
        """The moments of the simulations under way, in slot order."""
        return [value for value in self.values if value != IDLE]
