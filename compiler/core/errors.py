"""Diagnostics and the one error hierarchy.

Every problem the user can fix is a `Diagnostic` with a stable code (see `codes.py`) and, where
one exists, the position in the user's file that caused it. Stages collect diagnostics instead
of raising on the first one; a stage that cannot continue raises `PolicyError` carrying all of
them. The CLI alone maps exceptions to exit codes:

    PolicyError / InputError  -> 1   (the user's policy or input is wrong)
    usage errors (click)      -> 2
    EnvironmentFailure        -> 3   (git, network, disk)

Anything else escaping is a bug in kueue-policy and is allowed to show a traceback.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True, order=True)
class SourcePosition:
    """A place in a user's file. Lines and columns are 1-based, as editors show them."""

    path: str
    line: int = 1
    column: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    position: SourcePosition | None = None
    severity: Severity = Severity.ERROR
    # Optional second place that explains the first ("first defined here").
    related: SourcePosition | None = None

    def render(self) -> str:
        where = f"{self.position}: " if self.position else ""
        text = f"{where}{self.severity.value}[{self.code}]: {self.message}"
        if self.related is not None:
            text += f" (see {self.related})"
        return text

    def to_dict(self) -> dict:
        out: dict = {"code": self.code, "severity": self.severity.value, "message": self.message}
        if self.position is not None:
            out.update(path=self.position.path, line=self.position.line, column=self.position.column)
        return out

    def sort_key(self) -> tuple:
        pos = self.position or SourcePosition("")
        # Notes (hints about what to do next) read best after the errors they follow.
        return (self.severity is Severity.NOTE, pos.path, pos.line, pos.column, self.code, self.message)


class KueuePolicyError(Exception):
    """Root of every error kueue-policy raises on purpose."""

    exit_code = 1


class PolicyError(KueuePolicyError):
    """The user's policy (or other input) is wrong. Carries every diagnostic found."""

    exit_code = 1

    def __init__(self, diagnostics: Iterable[Diagnostic]):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        super().__init__("\n".join(d.render() for d in self.diagnostics))

    def __reduce__(self):
        # (pickled from a worker process, see compiler/runtime/parallel.py: rebuilt from its diagnostics,
        # not from the rendered text the base class would keep)
        return type(self), (self.diagnostics,)


class InputError(PolicyError):
    """Input that is not a policy (manifests, inventories, traces) cannot be read."""


class EnvironmentFailure(KueuePolicyError):
    """Something outside the user's policy failed: git, the network, the disk.

    `code` (a KP8xx code from codes.py, when one says what to fix) is kept apart from the
    message: the CLI formats it like every other diagnostic."""

    exit_code = 3

    def __init__(self, message: str, code: str | None = None):
        self.message = message
        self.code = code
        super().__init__(self.render())

    def __reduce__(self):
        return type(self), (self.message, self.code)

    def render(self) -> str:
        """`error[KPnnn]: message`, as a diagnostic without a position reads (or the bare message)."""
        return self.message if self.code is None else Diagnostic(self.code, self.message).render()

    def add_context(self, text: str) -> None:
        """Append a line saying what happened next (a rollback, ...) to the message."""
        self.message = f"{self.message}\n{text}"
        self.args = (self.render(),)


@dataclass
class DiagnosticSink:
    """Collects diagnostics across a stage so that independent errors are reported together."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, code: str, message: str, position: SourcePosition | None = None,
              related: SourcePosition | None = None) -> None:
        self.items.append(Diagnostic(code, message, position, Severity.ERROR, related))

    def warning(self, code: str, message: str, position: SourcePosition | None = None) -> None:
        self.items.append(Diagnostic(code, message, position, Severity.WARNING))

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is not Severity.ERROR]

    def raise_if_errors(self) -> None:
        if self.errors:
            raise PolicyError(self.items)
