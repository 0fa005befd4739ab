"""Where candidates are evaluated: here, in forked local processes, or on a Dask cluster.

Every executor takes a batch of candidates and returns their evaluations in the batch's order,
whatever order they finished in: the search decides only on whole batches, so its answer does
not depend on the number of workers or on who finished first.

Local processes: a `fork` pool made once for the whole search. The children start with the
policy, the trace and the compiled modules already in memory (nothing is sent but the small
candidate); each answer comes back pickled. compiler/runtime/parallel.py is the project's runner
for *one* computation beside the caller (`compile`, `simulate --compare`); a sweep needs a queue
of many over N workers, which is what `multiprocessing.Pool` is, with the same fork-and-pickle
semantics, so the sweep uses it rather than N hand-made `Background`s.

Dask (`--address`): `distributed`'s Client joins a running scheduler; the problem is scattered to
every worker once, each candidate is one task.
"""

from __future__ import annotations

import multiprocessing
from typing import Callable, Protocol

from compiler.capacity.candidate import Candidate
from compiler.capacity.evaluate import Evaluation, Problem, evaluate
from compiler.capacity.in_flight import IDLE, Running, SharedSlots, throttled
from compiler.core.errors import EnvironmentFailure

Done = Callable[[Evaluation], None]

# The problem a forked worker evaluates against (set before the fork, inherited, never pickled).
_PROBLEM: list[Problem] = []
# A forked worker's shared slots and its own slot in them (set by the pool's initializer).
_SLOT: list[tuple[SharedSlots, int]] = []
# How long the search's process waits for an evaluation before it reads the slots again (s).
POLL_SECONDS = 0.5


def _take_slot(slots: SharedSlots) -> None:
    _SLOT[:] = [(slots, slots.take())]


def _evaluate_indexed(item: tuple[int, Candidate, bool]) -> tuple[int, Evaluation]:
    index, candidate, full = item
    slots, slot = _SLOT[0]
    values = slots.values
    values[slot] = 0

    def reach(now: int) -> None:
        values[slot] = now

    try:
        return index, evaluate(_PROBLEM[0], candidate, full, reach)
    finally:
        values[slot] = IDLE


class Executor(Protocol):
    """Evaluates a batch (`full`: every run to the end of the trace, see evaluate.py), telling
    `running`, if given, how far the simulations under way have got (in_flight.py)."""

    workers: int

    def evaluate(self, candidates: list[Candidate], done: Done, full: bool = False,
                 running: Running | None = None) -> list[Evaluation]: ...

    def close(self) -> None: ...


class InProcess:
    """One candidate after another, here (`--workers 1`, or one CPU)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.workers = 1

    def evaluate(self, candidates: list[Candidate], done: Done, full: bool = False,
                 running: Running | None = None) -> list[Evaluation]:
        results = []
        for candidate in candidates:
            results.append(evaluate(self.problem, candidate, full, None if running is None else throttled(running)))
            done(results[-1])
        return results

    def close(self) -> None:
        pass


class LocalProcesses:
    """A pool of `workers` forked processes, kept for the whole search."""

    def __init__(self, problem: Problem, workers: int) -> None:
        _PROBLEM[:] = [problem]
        self.workers = workers
        self._slots = SharedSlots(workers)
        self._pool = multiprocessing.get_context("fork").Pool(workers, _take_slot, (self._slots,))

    def evaluate(self, candidates: list[Candidate], done: Done, full: bool = False,
                 running: Running | None = None) -> list[Evaluation]:
        results: list[Evaluation | None] = [None] * len(candidates)
        items = [(index, candidate, full) for index, candidate in enumerate(candidates)]
        answers = self._pool.imap_unordered(_evaluate_indexed, items)
        for _ in items:
            while True:
                try:
                    index, evaluation = answers.next(timeout=POLL_SECONDS)
                    break
                except multiprocessing.TimeoutError:
                    if running is not None:
                        running(self._slots.reached())
            results[index] = evaluation
            done(evaluation)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()
        _PROBLEM.clear()


class DaskCluster:
    """The same evaluations as tasks on a running Dask cluster (`--address tcp://host:port`)."""

    def __init__(self, problem: Problem, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise EnvironmentFailure("--address needs Dask's `distributed`: pip install 'kueue-policy[distributed]'") from None
        try:
            self._client = Client(address, timeout="20s")
        except (OSError, TimeoutError) as error:
            raise EnvironmentFailure(f"cannot join the Dask scheduler at {address}: {error}") from None
        self.workers = max(1, sum(info.get("nthreads", 1) for info in
                                  self._client.scheduler_info()["workers"].values()))
        self._problem = self._client.scatter(problem, broadcast=True)

    def evaluate(self, candidates: list[Candidate], done: Done, full: bool = False,
                 running: Running | None = None) -> list[Evaluation]:
        """(`running` is not told: a Dask worker's progress would need a channel of its own.)"""
        from distributed import as_completed

        futures = [self._client.submit(evaluate, self._problem, candidate, full, pure=False) for candidate in candidates]
        position = {future.key: index for index, future in enumerate(futures)}
        results: list[Evaluation | None] = [None] * len(candidates)
        for future in as_completed(futures):
            evaluation = future.result()
            results[position[future.key]] = evaluation
            done(evaluation)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        self._client.close()


def executor_for(problem: Problem, workers: int, address: str | None) -> Executor:
    if address is not None:
        return DaskCluster(problem, address)
    if workers <= 1:
        return InProcess(problem)
    return LocalProcesses(problem, workers)
