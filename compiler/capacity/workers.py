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
import re
from typing import Callable, Protocol

from compiler.capacity.candidate import Candidate
from compiler.capacity.evaluate import Evaluation, Problem, evaluate
from compiler.capacity.in_flight import IDLE, Running, SharedSlots, throttled
from compiler.core import codes
from compiler.core.errors import Diagnostic, EnvironmentFailure, InputError, SourcePosition

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


# The schemes `Client` joins with the address alone: tcp://, and tls:// with the certificates of
# Dask's own configuration (kueue-policy passes no `security`). Dask's others (inproc://, ucx://,
# ws://) need a process, a library or options of their own, and fail inside Dask with a traceback.
_SCHEMES = ("tcp", "tls")
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?")        # a DNS name or IPv4
_HOST_IPV6 = re.compile(r"\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\]")          # [::1], [fe80::1%eth0]


def _address_error(address: str, cause: str) -> InputError:
    return InputError([Diagnostic(codes.CAPACITY_TARGET_BAD, f"--address '{address}': {cause}",
                                  SourcePosition("--address"))])


def checked_address(address: str) -> str:
    """`address` when it is SCHEME://HOST:PORT with a scheme of `_SCHEMES` (a bare HOST:PORT is
    tcp://, as Dask reads it), else the flag's mistake: checked before Dask sees it, whose parsers
    answer a malformed address with a ValueError or TypeError traceback."""
    scheme, separator, rest = address.partition("://")
    if not separator:
        scheme, rest = "tcp", address
    if not address.strip():
        raise _address_error(address, "no address: write tcp://HOST:PORT")
    if scheme not in _SCHEMES:
        raise _address_error(address, f"scheme '{scheme}://' is not supported: write tcp://HOST:PORT (or tls://)")
    host, colon, port = rest.rpartition(":")
    if not colon:
        raise _address_error(address, "no port: write tcp://HOST:PORT")
    if not host:
        raise _address_error(address, "no host: write tcp://HOST:PORT")
    if not (_HOST_NAME.fullmatch(host) or _HOST_IPV6.fullmatch(host)):
        raise _address_error(address, f"'{host}' is not a host name or IP address (an IPv6 address is "
                                      "written in brackets: tcp://[::1]:8786)")
    if not (port.isascii() and port.isdigit()):
        raise _address_error(address, f"port '{port}' is not a number")
    if not 1 <= int(port) <= 65535:
        raise _address_error(address, f"port {int(port)} is not in 1-65535")
    return address


class DaskCluster:
    """The same evaluations as tasks on a running Dask cluster (`--address tcp://host:port`)."""

    def __init__(self, problem: Problem, address: str) -> None:
        checked_address(address)
        try:
            from distributed import Client
            from distributed.security import Security
        except ImportError:
            raise EnvironmentFailure("--address needs Dask's `distributed`: pip install 'kueue-policy[distributed]'") from None
        if address.startswith("tls://") and Security().get_connection_args("client")["ssl_context"] is None:
            # Without it Dask's TLS connector raises a TypeError rather than failing to connect.
            raise _address_error(address, "tls:// needs Dask's TLS settings (distributed.comm.tls.ca-file, "
                                          ".client.cert and .client.key in Dask's configuration); none is set")
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
