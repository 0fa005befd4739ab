"""What every job-kind adapter shares: the job as read, the Workload it becomes, the name.

An adapter is a plain function `build(job, context) -> list[JobWorkload]`: it reads one job object
(already known to carry a queue) and says which Workloads Kueue's integration for that kind would
create, with their pod sets as Kueue builds them (names, counts, minCount, pod templates). It does
not parse quantities or look up priorities: the loader turns pod templates into requests and
resolves priority the same way for every kind, as Kueue's jobframework does after `PodSets()`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

from compiler.core.shapes import checked_or_empty

ELASTIC_JOB_ANNOTATION = "kueue.x-k8s.io/elastic-job"

# Kueue's generated names: "<kind>-<owner name>" cut to 253 - 1 - 5 characters, then "-" and the
# first 5 hex digits of sha1(kind \n group \n owner name \n owner uid [\n extra]).
_HASH_LENGTH = 5
_MAX_PREFIX = 253 - 1 - _HASH_LENGTH


class Rejected(Exception):
    """Kueue's admission webhook refuses this object: it never exists in a real cluster."""


class Unusable(Exception):
    """The object lacks what its integration needs to build pod sets (the message says what)."""


@dataclass(frozen=True)
class PodSetSpec:
    """One pod set as the integration builds it; the loader validates count and template."""

    name: str
    count: object
    template: object
    min_count: object = None


@dataclass(frozen=True)
class JobWorkload:
    """One Workload Kueue would create for the job.

    `priority_class` is the pod PriorityClass the integration itself names (Kubeflow's
    runPolicy.schedulingPolicy.priorityClass, ...); None means "the first pod set's
    priorityClassName", Kueue's default.
    """

    name: str
    podsets: list[PodSetSpec]
    priority_class: str | None = None


@dataclass(frozen=True)
class JobObject:
    """The job as read from the manifest, with the parts every adapter needs typed."""

    group: str
    kind: str
    namespace: str
    name: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict
    generation: int = 1
    phase: str = ""  # status.phase (a Pod's, in an export)

    @classmethod
    def of(cls, doc: dict) -> "JobObject":
        meta = doc["metadata"]
        api_version = doc.get("apiVersion", "")
        spec = checked_or_empty(doc.get("spec"), dict, "spec", Unusable, wording="is not")
        generation = meta.get("generation")
        status = doc.get("status")
        phase = status.get("phase") if isinstance(status, dict) else None
        return cls(group=api_version.split("/", 1)[0] if "/" in api_version else "", kind=doc["kind"],
                   namespace=meta.get("namespace") or "default", name=meta["name"],
                   uid=str(meta.get("uid") or ""), labels=dict(meta.get("labels") or {}),
                   annotations=dict(meta.get("annotations") or {}), spec=spec,
                   generation=generation if isinstance(generation, int) and not isinstance(generation, bool)
                   else 1, phase=phase if isinstance(phase, str) else "")

    @property
    def elastic(self) -> bool:
        """Workload slicing (ElasticJobsViaWorkloadSlices, on by default in v0.19) is asked for."""
        return self.annotations.get(ELASTIC_JOB_ANNOTATION) == "true"


@dataclass(frozen=True)
class JobContext:
    """Other objects of the input an integration may need (TrainJob's runtimes)."""

    training_runtimes: dict[tuple[str, str], dict] = field(default_factory=dict)  # (ns, name) -> obj
    cluster_training_runtimes: dict[str, dict] = field(default_factory=dict)     # name -> obj


Build = Callable[[JobObject, JobContext], list[JobWorkload]]


@dataclass(frozen=True)
class Adapter:
    """One Kueue integration: the kinds it serves (API group, kind) and how it builds Workloads."""

    group: str
    kinds: tuple[str, ...]
    build: Build


def framework_name(group: str, kind: str) -> str:
    """The name Kueue's Configuration lists in integrations.frameworks ("batch/job", "pod",
    "kubeflow.org/pytorchjob", ...)."""
    return f"{group}/{kind.lower()}" if group else kind.lower()


def workload_name(kind: str, group: str, owner: str, uid: str, extra: str = "") -> str:
    """The Workload name Kueue's jobframework derives for an owner object."""
    text = "\n".join([kind, group, owner, uid] + ([extra] if extra else []))
    digest = hashlib.sha1(text.encode()).hexdigest()
    return f"{kind.lower()}-{owner}"[:_MAX_PREFIX] + "-" + digest[:_HASH_LENGTH]


def owner_workload_name(job: JobObject, extra: str | None = None) -> str:
    """The name of the single Workload of a job; an elastic job adds its generation, as Kueue
    does so that each slice gets a new Workload."""
    if extra is None:
        extra = str(job.generation) if job.elastic else ""
    return workload_name(job.kind, job.group, job.name, job.uid, extra)


def one_workload(job: JobObject, podsets: list[PodSetSpec], priority_class: str | None = None,
                 extra: str | None = None) -> list[JobWorkload]:
    return [JobWorkload(owner_workload_name(job, extra), podsets, priority_class)]


def mapping(value: object, what: str) -> dict:
    """A nested mapping of the job (absent = empty); anything else makes the job unusable."""
    return checked_or_empty(value, dict, what, Unusable)


def items(value: object, what: str) -> list:
    return checked_or_empty(value, list, what, Unusable)


def int_or(value: object, default: int) -> object:
    """An optional integer field with the API's default; a wrong type is passed on for the
    loader to report on the pod set."""
    return default if value is None else value


def pods_per_job(job_spec: dict) -> object:
    """Pods one batch Job runs at once: parallelism (default 1), capped by completions.

    Shared by batch Job, JobSet's replicated jobs and TrainJob's runtime jobs, as Kueue does.
    """
    parallelism = int_or(job_spec.get("parallelism"), 1)
    completions = job_spec.get("completions")
    if _is_int(completions) and _is_int(parallelism) and completions < parallelism:
        return completions
    return parallelism


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def times(a: object, b: object) -> object:
    """a * b when both are integers; otherwise the bad value, for the loader to report."""
    if _is_int(a) and _is_int(b):
        return a * b
    return b if _is_int(a) else a


def template_priority_class(template: object) -> str:
    spec = template.get("spec") if isinstance(template, dict) else None
    value = spec.get("priorityClassName") if isinstance(spec, dict) else None
    return value if isinstance(value, str) else ""


# The API server names a `generateName` object base[:58] + 5 random characters from this
# alphabet; an offline evaluation has no server, so the characters are derived instead.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_BASE = 63 - 5


class GeneratedNames:
    """Names for objects that have `metadata.generateName` and no `metadata.name`.

    Rule (kueue-oracle derives the same names, oracle/generatename.go): generateName (cut to 58
    characters, as the API server does) + 5 characters of the server's alphabet, byte i of
    sha256("<group>\\n<kind>\\n<namespace>\\n<generateName>\\n<n>") modulo its length, where n counts
    the objects of the same group, kind, namespace and generateName before this one in the
    input. The same input always gives the same names, a name does not depend on file names,
    line numbers or unrelated objects, and applying one manifest twice gives two jobs, as
    `kubectl create` twice does.
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def name_generated(self, doc: dict) -> dict:
        """The object itself when it has a name (or no usable generateName); else a copy named
        by the rule above."""
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or meta.get("name"):
            return doc
        base = meta.get("generateName")
        if not isinstance(base, str) or not base:
            return doc
        api_version = str(doc.get("apiVersion") or "")
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        key = "\n".join([group, str(doc.get("kind")), str(meta.get("namespace") or "default"), base])
        occurrence = self._seen.get(key, 0)
        self._seen[key] = occurrence + 1
        digest = hashlib.sha256(f"{key}\n{occurrence}".encode()).digest()
        suffix = "".join(_NAME_ALPHABET[byte % len(_NAME_ALPHABET)] for byte in digest[:5])
        named = dict(doc)
        named["metadata"] = {**meta, "name": base[:_MAX_GENERATED_BASE] + suffix}
        return named
