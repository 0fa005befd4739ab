"""What the cluster holds: read from exports (`kubectl get ... -o yaml`) or from the cluster.

The cluster is read with kubectl, not a Python client: it is what platform teams already run
against their clusters, it speaks every way a kubeconfig authenticates (exec plugins for EKS,
GKE and AKS, OIDC, client certificates) exactly as the user's own shell does, and it adds no
dependency. Each kind is read with its own `kubectl get`, so a kind the cluster does not serve
(no MutatingAdmissionPolicy before Kubernetes 1.32, no Topology CRD) is reported as such and
the other kinds are still compared.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from compiler.core import codes
from compiler.core.errors import EnvironmentFailure
from compiler.evaluator.reader import read_files

KUEUE_NAMESPACE = "kueue-system"
KUEUE_CONFIGMAP = "kueue-manager-config"
KUBECTL_TIMEOUT = 60


@dataclass(frozen=True, order=True)
class ObjectKey:
    """An object's identity: API group (not version: v1beta1 and v1beta2 are one object), kind,
    namespace ('' for cluster-scoped) and name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


def key_of(obj: object) -> ObjectKey | None:
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
        return None
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = metadata.get("name")
    if not isinstance(name, str):
        return None
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return ObjectKey(group, obj["kind"], str(metadata.get("namespace") or ""), name)


@dataclass
class LiveCluster:
    """The live objects by identity, where they were read from, and the kinds that could not be
    read (not served by the cluster, or absent from every export)."""

    objects: dict[ObjectKey, dict]
    source: str
    unread_kinds: set[str] = field(default_factory=set)
    read_kinds: set[str] = field(default_factory=set)

    def of_kind(self, kind: str) -> list[dict]:
        return [obj for key, obj in sorted(self.objects.items()) if key.kind == kind]

    def has_kind(self, kind: str) -> bool:
        return kind in self.read_kinds


def from_exports(paths: list[Path]) -> LiveCluster:
    """Exports as kubectl prints them (`kind: List`, multi-document YAML or JSON). A kind counts
    as read when any export holds one of its objects."""
    objects: dict[ObjectKey, dict] = {}
    for obj, _where in read_files([str(p) for p in paths]):
        key = key_of(obj)
        if key is not None:
            objects[key] = obj      # type: ignore[assignment]
    kinds = {key.kind for key in objects}
    return LiveCluster(objects, ", ".join(str(p) for p in paths), read_kinds=kinds)


@dataclass(frozen=True)
class Kubectl:
    kubeconfig: Path | None = None
    context: str | None = None

    def _argv(self, *args: str) -> list[str]:
        binary = shutil.which("kubectl")
        if binary is None:
            raise EnvironmentFailure("kubectl is not on PATH: install it, or give the cluster's objects "
                                     "with --live EXPORT", codes.LIVE_UNREADABLE)
        argv = [binary]
        if self.kubeconfig is not None:
            argv += ["--kubeconfig", str(self.kubeconfig)]
        if self.context is not None:
            argv += ["--context", self.context]
        return argv + list(args)

    def get(self, resource: str, *extra: str) -> tuple[list[dict], str | None]:
        """The items of one resource, or ([], why) when the cluster does not serve it."""
        try:
            done = subprocess.run(self._argv("get", resource, "-o", "json", *extra), capture_output=True,
                                  text=True, timeout=KUBECTL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise EnvironmentFailure(f"kubectl get {resource} did not answer within {KUBECTL_TIMEOUT} s",
                                     codes.LIVE_UNREADABLE) from None
        if done.returncode != 0:
            error = done.stderr.strip()
            if "doesn't have a resource type" in error or "the server could not find the requested resource" in error:
                return [], error
            if "NotFound" in error or "not found" in error:
                return [], error       # one object asked for by name, and it is not there
            raise EnvironmentFailure(f"kubectl get {resource} failed: {error}", codes.LIVE_UNREADABLE)
        data = json.loads(done.stdout or "{}")
        return list(data.get("items") or ([data] if data.get("kind") not in (None, "List") else [])), None


def _resource(key_kind: str, group: str) -> str:
    return key_kind.lower() + (f".{group}" if group else "")


# Kinds a cluster holds many of that are not ours (every namespace has ConfigMaps): read one by
# one, by the names the compile gives, instead of listing them all.
READ_BY_NAME = {("", "ConfigMap")}


def _not_found(why: str) -> bool:
    return "NotFound" in why or "not found" in why


def from_cluster(kubectl: Kubectl, keys: list[ObjectKey]) -> LiveCluster:
    """Every object of the compiled objects' kinds, the Nodes, and Kueue's manager ConfigMap."""
    objects: dict[ObjectKey, dict] = {}
    unread: set[str] = set()
    read: set[str] = set()

    def keep(items: list[dict], kind: str) -> None:
        for item in items:
            item.setdefault("kind", kind)
            key = key_of(item)
            if key is not None:
                objects[key] = item

    listed = sorted({(k.group, k.kind) for k in keys if (k.group, k.kind) not in READ_BY_NAME} | {("", "Node")})
    for group, kind in listed:
        items, why = kubectl.get(_resource(kind, group), "--all-namespaces")
        if why is not None:
            unread.add(kind)
            continue
        read.add(kind)
        keep(items, kind)
    named = sorted({k for k in keys if (k.group, k.kind) in READ_BY_NAME}
                   | {ObjectKey("", "ConfigMap", KUEUE_NAMESPACE, KUEUE_CONFIGMAP)})
    for key in named:
        extra = ("--namespace", key.namespace) if key.namespace else ()
        items, why = kubectl.get(_resource(key.kind, key.group), key.name, *extra)
        if why is not None and not _not_found(why):
            unread.add(key.kind)
            continue
        read.add(key.kind)
        keep(items, key.kind)
    unread -= read
    where = f"kubectl{' --context ' + kubectl.context if kubectl.context else ''}"
    return LiveCluster(objects, where, unread, read)
