"""Two independent computations on two CPUs: one in a forked process, the other in this one.

`simulate --compare` and the what-if of `diff` and `pr` run one trace through two policies (a
git revision's and the working tree's). The two runs share nothing and each keeps one CPU busy
for as long as the trace is long, so on a machine with two CPUs or more they run side by side:
the revision's run in a child forked from this process (it starts with everything already
imported and parsed, nothing is sent to it), the working tree's here. The child sends back its
answer, pickled, through a pipe.

The answer is the same as one run after the other:
- the child's value is the value the call returns here (the engine is deterministic);
- a kueue-policy error in the child (a policy or trace mistake) is raised by the caller, with
  its diagnostics, exactly where it would have been;
- anything else the child meets (a bug) is not carried over: the call is run again here, so
  that the traceback is this process's.

`KUEUE_POLICY_WORKERS=1` (or one CPU, or no `fork` on the platform) runs them one after the
other in this process.
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
    """Whether `beside` forks: a second CPU, fork available, not turned off."""
    configured = os.environ.get(WORKERS_ENV, "").strip()
    if configured.isdigit() and int(configured) == 1:
        return False
    return hasattr(os, "fork") and available_cpus() > 1


def beside(background: Callable[[], T], foreground: Callable[[], U]) -> tuple[Outcome[T], Outcome[U]]:
    """Both calls' outcomes, `background` run in a forked child while `foreground` runs here."""
    if not side_by_side():
        return _capture(background), _capture(foreground)
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        try:
            os.close(read_end)
            _answer(background, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        here = _capture(foreground)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.close(read_end)
        os.waitpid(pid, 0)
        raise
    # (The child blocks on a full pipe until this read: it cannot finish before being read.)
    with os.fdopen(read_end, "rb") as answer:
        data = answer.read()
    os.waitpid(pid, 0)
    kind, value = pickle.loads(data) if data else ("again", None)
    if kind == "value":
        return Outcome(value=value), here
    if kind == "error":
        return Outcome(error=value), here
    return _capture(background), here


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
