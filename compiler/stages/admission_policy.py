"""The team's default priority, applied by the API server: a MutatingAdmissionPolicy per team.

Kueue has no per-queue default priority: a job without the `kueue.x-k8s.io/priority-class` label
runs at priority 0 whatever its team's `priority` says. So for every team with a priority the
tree carries a MutatingAdmissionPolicy (and its binding) that, on CREATE of a job of a kind
Kueue integrates (as the Kueue Configuration's `integrations.frameworks` lists them) in the
team's namespaces, sets that label to the team's WorkloadPriorityClass when the job has none.
Plain Pods are matched only when the `pod` integration is on, and only Pods carrying the
queue-name label (a Job's own Pods are not Kueue's to prioritise). A label the job sets wins.

The API serves MutatingAdmissionPolicy as admissionregistration.k8s.io/v1 from Kubernetes 1.36
(GA, on by default); as v1beta1 on 1.34 and 1.35 only with the MutatingAdmissionPolicy feature
gate and the v1beta1 API enabled (`featureGates: {MutatingAdmissionPolicy: true}` in the
Cluster document says both are). Below that, or without the gate, nothing is emitted and the
LocalQueues' `kueue-policy.io/default-priority-class` annotation is the only record (the
fallback docs/concepts.md describes).
"""

from __future__ import annotations

from compiler.core.templating import render_object

GROUP = "admissionregistration.k8s.io"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POLICY_ANNOTATION = "kueue-policy.io/default-priority-class"
GA_SINCE = (1, 36)
BETA_SINCE = (1, 34)
FEATURE_GATE = "MutatingAdmissionPolicy"

# Kueue v0.19 integration (Configuration `integrations.frameworks`) -> API group and resource.
FRAMEWORK_RESOURCES: dict[str, tuple[str, str]] = {
    "batch/job": ("batch", "jobs"),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io", "jobsets"),
    "kubeflow.org/mpijob": ("kubeflow.org", "mpijobs"),
    "kubeflow.org/pytorchjob": ("kubeflow.org", "pytorchjobs"),
    "kubeflow.org/tfjob": ("kubeflow.org", "tfjobs"),
    "kubeflow.org/xgboostjob": ("kubeflow.org", "xgboostjobs"),
    "kubeflow.org/paddlejob": ("kubeflow.org", "paddlejobs"),
    "kubeflow.org/jaxjob": ("kubeflow.org", "jaxjobs"),
    "ray.io/rayjob": ("ray.io", "rayjobs"),
    "ray.io/raycluster": ("ray.io", "rayclusters"),
    "ray.io/rayservice": ("ray.io", "rayservices"),
    "trainer.kubeflow.org/trainjob": ("trainer.kubeflow.org", "trainjobs"),
    "leaderworkerset.x-k8s.io/leaderworkerset": ("leaderworkerset.x-k8s.io", "leaderworkersets"),
    "workload.codeflare.dev/appwrapper": ("workload.codeflare.dev", "appwrappers"),
    "sparkoperator.k8s.io/sparkapplication": ("sparkoperator.k8s.io", "sparkapplications"),
    "deployment": ("apps", "deployments"),
    "statefulset": ("apps", "statefulsets"),
    "pod": ("", "pods"),
}

NO_LABEL_CONDITION = (f"!has(object.metadata.labels) || !('{PRIORITY_LABEL}' in object.metadata.labels)")
POD_CONDITION = (f"request.resource.resource != 'pods' || "
                 f"(has(object.metadata.labels) && '{QUEUE_LABEL}' in object.metadata.labels)")


def _minor(version: str) -> tuple[int, int]:
    major, minor = str(version).lstrip("v").split(".")[:2]
    return int(major), int(minor)


def api_version(kubernetes_version: str, feature_gates: dict[str, bool]) -> str | None:
    """The admissionregistration version serving MutatingAdmissionPolicy on this cluster, or None."""
    version = _minor(kubernetes_version)
    if version >= GA_SINCE:
        return f"{GROUP}/v1"
    if version >= BETA_SINCE and feature_gates.get(FEATURE_GATE):
        return f"{GROUP}/v1beta1"
    return None


def resource_rules(frameworks: list[str] | None) -> tuple[list[dict], bool]:
    """(resourceRules, whether Pods are matched), one rule per API group, sorted. Without a known
    framework list, every kind Kueue integrates (a rule for a kind not installed matches nothing)."""
    known = [f for f in (frameworks or []) if f in FRAMEWORK_RESOURCES] or list(FRAMEWORK_RESOURCES)
    by_group: dict[str, set[str]] = {}
    for framework in known:
        group, resource = FRAMEWORK_RESOURCES[framework]
        by_group.setdefault(group, set()).add(resource)
    rules = [{"apiGroups": [group], "apiVersions": ["*"], "resources": sorted(by_group[group]),
              "operations": ["CREATE"], "scope": "Namespaced"} for group in sorted(by_group)]
    return rules, "pods" in by_group.get("", set())


def policy_name(team: str) -> str:
    return f"kueue-policy-priority-{team}"


def team_priority_objects(version: str, team: str, priority: str, namespaces: list[str],
                          frameworks: list[str] | None, labels: dict[str, str],
                          annotations: dict[str, str]) -> tuple[dict, dict]:
    """(MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding) giving `team`'s jobs `priority`."""
    rules, pods = resource_rules(frameworks)
    name = policy_name(team)
    apply_expression = f'Object{{metadata: Object.metadata{{labels: {{"{PRIORITY_LABEL}": "{priority}"}}}}}}'
    policy = render_object("admission/mutatingadmissionpolicy.yaml.j2", api_version=version, name=name,
                           labels=labels, annotations={**annotations, POLICY_ANNOTATION: priority},
                           namespaces=sorted(namespaces), resource_rules=rules, pods=pods,
                           no_label_condition=NO_LABEL_CONDITION, pod_condition=POD_CONDITION,
                           apply_expression=apply_expression)
    binding = render_object("admission/mutatingadmissionpolicybinding.yaml.j2", api_version=version, name=name,
                            labels=labels, annotations=annotations, policy_name=name)
    return policy, binding
