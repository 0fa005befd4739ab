"""`evaluate --engine kueue`: the same question put to Kueue's own scheduler.

kueue-oracle (built from oracle/ with `make oracle`) runs Kueue's scheduler, cache and queue
manager offline on the same files and prints the `evaluate --format json` contract. This module
only finds the binary, runs it, and hands its JSON back; every decision is Kueue's.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from compiler.core.errors import EnvironmentFailure

ORACLE_ENV = "KUEUE_ORACLE"
# The repository layout: compiler/evaluator/oracle_client.py -> <repo>/oracle/bin/kueue-oracle.
DEFAULT_ORACLE = Path(__file__).resolve().parents[2] / "oracle" / "bin" / "kueue-oracle"


class OracleInputError(Exception):
    """kueue-oracle refused the input (exit 1); its message is already on stderr."""


@dataclass(frozen=True)
class OracleResult:
    payload: dict


def oracle_path() -> Path:
    configured = os.environ.get(ORACLE_ENV)
    path = Path(configured) if configured else DEFAULT_ORACLE
    if not (path.is_file() and os.access(path, os.X_OK)):
        where = f"${ORACLE_ENV}={configured}" if configured else str(path)
        raise EnvironmentFailure(
            f"--engine kueue needs kueue-oracle, not found at {where}; build it with `make oracle` "
            f"(needs Go), or set ${ORACLE_ENV} to the binary")
    return path


def run_oracle(files: list[str], stdin_text: str | None, cycles: int | None) -> OracleResult:
    """Run kueue-oracle; its diagnostics (warnings, errors) go straight to our stderr."""
    command = [str(oracle_path())]
    if cycles is not None:
        command += ["--cycles", str(cycles)]
    command += files
    try:
        done = subprocess.run(command, input=stdin_text if stdin_text is not None else "",
                              stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    except OSError as error:
        raise EnvironmentFailure(f"cannot run {command[0]}: {error}") from None
    if done.returncode == 1:
        raise OracleInputError()
    if done.returncode != 0:
        raise EnvironmentFailure(f"kueue-oracle failed (exit {done.returncode})")
    try:
        return OracleResult(json.loads(done.stdout))
    except json.JSONDecodeError as error:
        raise EnvironmentFailure(f"kueue-oracle printed no JSON: {error}") from None


def table_rows(payload: dict) -> list[tuple[str, ...]]:
    """The rows `evaluate` prints, from the JSON contract (the contract carries no reason code)."""
    rows = []
    for w in payload.get("workloads", []):
        flavors = "; ".join(f"{ps}: " + ",".join(f"{r}={f}" for r, f in fl.items())
                            for ps, fl in w["assignment"].items())
        rows.append((w["name"], w["clusterQueue"] or "-", w["status"], flavors or "-",
                     "yes" if w["borrowing"] else "no", "-", w["reason"]))
    return rows
