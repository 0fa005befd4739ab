"""The team priority policies kueue-policy emits, applied to the jobs `evaluate` reads.

On a cluster the API server runs them (compiler/stages/admission_policy.py): a job of a matched kind,
created in a matched namespace without the `kueue.x-k8s.io/priority-class` label, gets the
team's WorkloadPriorityClass there. Offline, with those MutatingAdmissionPolicies and their
bindings in the input, a job read here gets the same label before it becomes a Workload, so both
tell the same story. Only kueue-policy's own shape is understood (the annotation naming the
priority, namespaces selected by `kubernetes.io/metadata.name In`): the engine does not run CEL
mutations, so any other MutatingAdmissionPolicy is reported as not evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass

POLICY_ANNOTATION = "kueue-policy.io/default-priority-class"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class _Policy:
    priority: str
    namespaces: frozenset[str]
    resources: frozenset[tuple[str, str]]   # (API group, resource)


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


class PriorityDefaults:
    def __init__(self) -> None:
        self.policies: dict[str, _Policy] = {}
        self.bound: set[str] = set()

    def add_policy(self, doc: dict) -> str | None:
        """Remember a kueue-policy priority policy; the reason it is not evaluated otherwise."""
        meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
        priority = (meta.get("annotations") or {}).get(POLICY_ANNOTATION)
        constraints = spec.get("matchConstraints") or {}
        expressions = (constraints.get("namespaceSelector") or {}).get("matchExpressions") or []
        if not priority or len(expressions) != 1 or expressions[0].get("key") != NAME_LABEL or \
                expressions[0].get("operator") != "In":
            return (f"not a kueue-policy priority policy (annotation {POLICY_ANNOTATION} and a namespaceSelector "
                    f"on {NAME_LABEL} In); the admission engine does not run its mutations")
        resources = frozenset((group, resource) for rule in constraints.get("resourceRules") or []
                              if "CREATE" in (rule.get("operations") or []) or "*" in (rule.get("operations") or [])
                              for group in rule.get("apiGroups") or [] for resource in rule.get("resources") or [])
        self.policies[str(meta.get("name"))] = _Policy(str(priority), frozenset(map(str, expressions[0].get("values") or [])),
                                                       resources)
        return None

    def add_binding(self, doc: dict) -> None:
        name = (doc.get("spec") or {}).get("policyName")
        if isinstance(name, str):
            self.bound.add(name)

    def apply(self, doc: dict) -> dict:
        """`doc` as the API server would store it: with the team's priority label when a bound
        policy matches it (kind, namespace, no priority label; Pods only with a queue label)."""
        if not self.policies:
            return doc
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        if PRIORITY_LABEL in labels:
            return doc
        kind, group = str(doc.get("kind", "")), _group(str(doc.get("apiVersion", "")))
        resource = (group, kind.lower() + "s")   # the plural of every kind Kueue integrates
        if resource == ("", "pods") and QUEUE_LABEL not in labels:
            return doc
        namespace = meta.get("namespace") or "default"
        for name in sorted(self.policies):
            policy = self.policies[name]
            if name in self.bound and namespace in policy.namespaces and \
                    (resource in policy.resources or (group, "*") in policy.resources):
                return {**doc, "metadata": {**meta, "labels": {**labels, PRIORITY_LABEL: policy.priority}}}
        return doc
