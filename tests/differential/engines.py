"""The engines a world goes through, each a function (world YAML text) -> the `evaluate --format
json` document.

* `python_engine`: this project's engine, in process, through the same reader and loader as
  `kueue-policy evaluate` (a subprocess per world would triple the run time for nothing).
* `OracleEngine(binary)`: `kueue-oracle FILE`, Kueue v0.19.2's own scheduler (oracle/).
* `perturbed_engine(name)`: the Python engine with one deliberate semantic change, used to prove
  that the harness finds and shrinks a disagreement while the oracle is absent.
"""

from __future__ import annotations

import json
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
    """kueue-oracle as a subprocess on a temporary file holding the world."""

    def __init__(self, binary: Path, timeout: float = 120) -> None:
        self.binary = Path(binary)
        self.timeout = timeout
        self.__name__ = "kueue-oracle"

    def __call__(self, text: str) -> dict:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="world-", delete=True) as handle:
            handle.write(text)
            handle.flush()
            try:
                done = subprocess.run([str(self.binary), handle.name], capture_output=True, text=True,
                                      timeout=self.timeout)
            except subprocess.TimeoutExpired:
                raise EngineFailure(f"kueue-oracle timed out after {self.timeout}s") from None
        if done.returncode != 0:
            raise EngineFailure(f"kueue-oracle exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        try:
            return json.loads(done.stdout)
        except ValueError as error:
            raise EngineFailure(f"kueue-oracle printed no JSON ({error}): {done.stdout[:500]}") from None
