"""The one thing the verify stage returns: a problem with one emitted object."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class ObjectProblem:
    """Something the Kubernetes API server or Kueue's webhook would refuse.

    index       position of the object in the list given to `verify_objects` (-1 when the problem
                is not about one listed object, e.g. a Kueue Configuration fragment)
    kind, name, namespace
                identify the object ("" when absent)
    field_path  where in the object, API-server style: "spec.resourceGroups[0].flavors[1].name"
                ("" = the whole object)
    code        a stable KP5xx code (compiler/core/codes.py)
    message     stands alone, in the API server's / webhook's words where possible
    rule        a stable, finer identifier of the rule that fired (e.g. "cq.lendingLimit.aboveNominal")
    """

    index: int
    kind: str
    name: str
    namespace: str
    field_path: str
    code: str
    message: str
    rule: str = ""

    def describe(self) -> str:
        """One line for humans: `ClusterQueue team-a: spec.x: message [KP503]`."""
        ident = f"{self.namespace}/{self.name}" if self.namespace else self.name
        where = f"{self.field_path}: " if self.field_path else ""
        return f"{self.kind} {ident or '<unnamed>'}: {where}{self.message} [{self.code}]"
