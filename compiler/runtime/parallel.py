"""A computation in a forked process while this one goes on: the one fork-and-pickle runner.

Two users: `compile` renders a large cluster's files in a child while it verifies and judges the
objects here (stages/pipeline.py), and `simulate --compare` and the what-if of `diff` and `pr`
run one trace through two policies side by side (`beside`). The child is forked from this
process (it starts with everything already imported and parsed, nothing is sent to it) and sends
back its answer, pickled, through a pipe.

The answer is the same as computing it here:
- the child's value is the value the call returns here (the work is deterministic);
- a kueue-policy error in the child (a policy or trace mistake) is raised by the caller, with
  its diagnostics, exactly where it would have been;
- anything else (a bug, an answer that does not pickle, a child that died) is not carried over:
  the call is run again here, so that the traceback is this process's.

No fork with one CPU (the ones this process may use), without `fork` on the platform, or when
`KUEUE_POLICY_JOBS=1` or `KUEUE_POLICY_WORKERS=1` is set (two names, both documented: the first
is `compile --jobs`'s, the second `simulate`'s): then the call runs here when it is asked for.
A child no longer wanted (the caller failed, or stopped early) is killed (SIGKILL: it holds
nothing that needs cleaning up) and reaped.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from compiler.core.errors import KueuePolicyError

WORKERS_ENV = "KUEUE_POLICY_WORKERS"
JOBS_ENV = "KUEUE_POLICY_JOBS"
ONE_PROCESS_ENV = (JOBS_ENV, WORKERS_ENV)

T = TypeVar("T")
U = TypeVar("U")


@dataclass
class Outcome(Generic[T]):
    """What a call returned, or the error it raised."""

    value: T | None = None
    error: Exception | None = None

    def get(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def _capture(call: Callable[[], T]) -> Outcome[T]:
    try:
        return Outcome(value=call())
    except Exception as error:  # (KeyboardInterrupt and SystemExit go through)
        return Outcome(error=error)


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def side_by_side() -> bool:
    """Whether a computation may go to a forked child: a second CPU, fork available, not turned off."""
    for variable in ONE_PROCESS_ENV:
        configured = os.environ.get(variable, "").strip()
        if configured.isdigit() and int(configured) == 1:
            return False
    return hasattr(os, "fork") and available_cpus() > 1


class Background(Generic[T]):
    """`call()` computed in a forked child from now on (`fork` True and forking possible), or
    here when `outcome()` asks for it. Call `close()` when done (a `finally:`)."""

    def __init__(self, call: Callable[[], T], *, fork: bool) -> None:
        self._call = call
        self._pid: int | None = None
        self._read: int | None = None
        if not fork or not hasattr(os, "fork"):
            return
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            try:
                os.close(read_end)
                _answer(call, write_end)
            finally:
                os._exit(0)
        os.close(write_end)
        self._pid, self._read = pid, read_end

    @property
    def forked(self) -> bool:
        """Whether the call went to a child (for the tests, and for nothing else)."""
        return self._pid is not None

    def outcome(self) -> Outcome[T]:
        if self._pid is None:
            return _capture(self._call)
        # (The child blocks on a full pipe until this read: it cannot finish before being read.)
        with os.fdopen(self._read, "rb") as answer:
            data = answer.read()
        self._read = None
        os.waitpid(self._pid, 0)
        self._pid = None
        kind, value = pickle.loads(data) if data else ("again", None)
        if kind == "value":
            return Outcome(value=value)
        if kind == "error":
            return Outcome(error=value)
        return _capture(self._call)

    def close(self) -> None:
        """Kill and reap a child whose answer was not asked for."""
        if self._read is not None:
            os.close(self._read)
            self._read = None
        if self._pid is not None:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = None


def beside(background: Callable[[], T], foreground: Callable[[], U]) -> tuple[Outcome[T], Outcome[U]]:
    """Both calls' outcomes, `background` run in a forked child while `foreground` runs here."""
    job = Background(background, fork=side_by_side())
    try:
        here = _capture(foreground)
        return job.outcome(), here
    finally:
        job.close()


def _answer(call: Callable[[], object], write_end: int) -> None:
    """In the child: `call`'s value or kueue-policy error, pickled into the pipe."""
    try:
        payload: tuple = ("value", call())
    except KueuePolicyError as error:
        payload = ("error", error)
    except BaseException:
        payload = ("again", None)
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a value or an error that does not pickle: the caller runs it itself
        data = pickle.dumps(("again", None))
    with os.fdopen(write_end, "wb") as out:
        out.write(data)
