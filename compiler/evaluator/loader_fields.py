"""What every reader of the loader shares: the labels and kinds it knows, and the checks of one
field (a name, a choice, a mapping, a time) that skip an unusable object with why."""

from __future__ import annotations

from datetime import datetime, timezone

from compiler.evaluator.jobs import registered_kinds

KUEUE_GROUP = "kueue.x-k8s.io"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"  # annotation (or label) on a job
UNMANAGED_NAMESPACES = ("kube-system", "kueue-system")
DEFAULT_QUEUE_KINDS = frozenset({("batch", "Job"), ("jobset.x-k8s.io", "JobSet"), ("kubeflow.org", "MPIJob"),
                                 ("ray.io", "RayJob"), ("ray.io", "RayCluster"),
                                 ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("trainer.kubeflow.org", "TrainJob")})
KUEUE_INTEGRATIONS_NOT_MODELLED = {
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("ray.io", "RayService"),
    ("workload.codeflare.dev", "AppWrapper"), ("sparkoperator.k8s.io", "SparkApplication"),
}
IGNORED_KINDS = {
    # Kinds a cluster export commonly holds that do not change admission.
    "AdmissionCheck", "MultiKueueCluster", "MultiKueueConfig",
    "ProvisioningRequestConfig", "ResourceSlice", "ResourceClaim", "ConfigMap",
}


class _Skip(Exception):
    """This object is unusable; the message says why."""


def _text(value: object, what: str, optional: bool = False) -> str | None:
    """A name or reference: a non-empty string (or absent when optional)."""
    if value is None or value == "":
        if optional:
            return None
        raise _Skip(f"{what} is missing")
    if not isinstance(value, str):
        raise _Skip(f"{what} must be a string (got {value!r})")
    return value


def _choice(value: object, allowed: tuple[str, ...], default: str, what: str) -> str:
    if value is None or value == "":
        return default
    if value not in allowed:
        raise _Skip(f"{what} must be one of {', '.join(allowed)} (got {value!r})")
    return str(value)


def _mapping(value: object, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"{what} must be a mapping")
    return value


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _parse_time(text: object) -> datetime | None:
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=timezone.utc)
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _kinds_text() -> str:
    return ", ".join(f"{kind}{'.' + group if group else ''}" for group, kind in registered_kinds())


def _describe(doc: dict) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name", "<unnamed>")
    ns = meta.get("namespace")
    return f"{doc.get('kind', '<no kind>')} {ns + '/' if ns else ''}{name}"
