"""The engines a world goes through, each a function (world YAML text) -> the `evaluate --format
json` document.

* `python_engine`: this project's engine, in process, through the same reader and loader as
  `kueue-policy evaluate` (a subprocess per world would triple the run time for nothing).
* `OracleEngine(binary)`: Kueue v0.19.2's own scheduler (oracle/), one `kueue-oracle --batch`
  process per worker process.
* `perturbed_engine(name)`: the Python engine with one deliberate semantic change, used to prove
  that the harness finds and shrinks a disagreement while the oracle is absent.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import select
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from compiler.evaluator import evaluate
from compiler.evaluator.loader import load_documents
from compiler.evaluator.reader import parse_text

Engine = Callable[[str], dict]


class EngineFailure(Exception):
    """An engine crashed or printed something that is not the JSON contract."""


class InvalidWorld(EngineFailure):
    """The Python loader skipped an object: not a world a live cluster could hold."""


def _load(text: str):
    state = load_documents(parse_text(text, "world.yaml"))
    if state.warnings:
        # every generated world is valid: a skipped object is a bug of the generator or loader
        raise InvalidWorld("python loader: " + "; ".join(d.message for d in state.warnings))
    return state


def python_engine(text: str) -> dict:
    return evaluate(_load(text)).to_json()


def _ignore_borrowing_limits(state) -> None:
    for queue in state.cluster_queues.values():
        for group in queue.resource_groups:
            for key, quota in list(group.quotas.items()):
                if quota.borrowing_limit is not None:
                    group.quotas[key] = type(quota)(quota.nominal, None, quota.lending_limit)


def _never_preempt(state) -> None:
    for queue in state.cluster_queues.values():
        queue.preemption.within_cluster_queue = "Never"


PERTURBATIONS = {"ignore-borrowing-limit": _ignore_borrowing_limits, "never-preempt": _never_preempt}


class PerturbedEngine:
    """The Python engine with one named change to the loaded state (picklable, for --jobs)."""

    def __init__(self, name: str) -> None:
        self.change = PERTURBATIONS[name]
        self.__name__ = f"python-{name}"

    def __call__(self, text: str) -> dict:
        state = _load(text)
        self.change(state)
        return evaluate(state).to_json()


def perturbed_engine(name: str) -> Engine:
    return PerturbedEngine(name)


class OracleEngine:
    """kueue-oracle, one `--batch` process per worker process, fed one world per stdin line.

    Starting the binary per world costs more than evaluating a small world, so the process is
    started on the first world and kept (module state, one per binary: the engine object itself
    is pickled into every task of a worker pool, the process cannot travel with it). A world that
    times out or crashes the process costs the process; the next world starts a new one."""

    def __init__(self, binary: Path, timeout: float = 120) -> None:
        self.binary = Path(binary)
        self.timeout = timeout
        self.__name__ = "kueue-oracle"

    def __call__(self, text: str) -> dict:
        line = _BATCHES.ask(self.binary, json.dumps(text) + "\n", self.timeout)
        try:
            answer = json.loads(line)
        except ValueError as error:
            raise EngineFailure(f"kueue-oracle --batch printed no JSON ({error}): {line[:500]}") from None
        if answer["exit"] != 0:
            raise EngineFailure(f"kueue-oracle exited {answer['exit']}: {answer['stderr'].strip()[-2000:]}")
        return answer["result"]


class _BatchProcesses:
    """The live `kueue-oracle --batch` process of this Python process, per binary."""

    def __init__(self) -> None:
        self.processes: dict[Path, tuple[subprocess.Popen, tempfile._TemporaryFileWrapper]] = {}
        atexit.register(self.close)
        self.finalizing_pid = 0

    def _process(self, binary: Path) -> tuple[subprocess.Popen, tempfile._TemporaryFileWrapper]:
        live = self.processes.get(binary)
        if live is None or live[0].poll() is not None:
            if live is not None:
                self._drop(binary)
            # the process's own stderr only carries a crash: per-world diagnostics are in its lines
            errors = tempfile.TemporaryFile("w+")
            if self.finalizing_pid != os.getpid():
                # A worker of a process pool exits without running atexit, and a forked worker
                # drops the finalizers it inherited: register one in this process, so the batch
                # process is closed and waited for (its CPU time then counts in the parent's).
                multiprocessing.util.Finalize(self, self.close, exitpriority=10)
                self.finalizing_pid = os.getpid()
            process = subprocess.Popen([str(binary), "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=errors, text=True, bufsize=1)
            live = self.processes[binary] = (process, errors)
        return live

    def ask(self, binary: Path, request: str, timeout: float) -> str:
        process, errors = self._process(binary)
        try:
            process.stdin.write(request)
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], timeout)
            line = process.stdout.readline() if ready else ""
        except (BrokenPipeError, OSError):
            line = ""
        if line:
            return line
        crashed = process.poll() is not None
        errors.seek(0)
        detail = errors.read().strip()[-2000:]
        self._drop(binary)
        if crashed:
            raise EngineFailure(f"kueue-oracle --batch exited {process.returncode}: {detail}")
        raise EngineFailure(f"kueue-oracle timed out after {timeout}s")

    def _drop(self, binary: Path) -> None:
        process, errors = self.processes.pop(binary)
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        errors.close()

    def close(self) -> None:
        for binary in list(self.processes):
            process = self.processes[binary][0]
            try:
                process.stdin.close()  # end of input: the batch process exits on its own
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._drop(binary)


_BATCHES = _BatchProcesses()
