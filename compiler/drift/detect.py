"""Drift: the compiled cluster against the live one, object by object, plus live health.

Missing: compiled, not on the cluster. Extra: on the cluster, labelled as this tool's for this
cluster, and no longer compiled (a team removed while its queue lives on). Changed: both, with
the fields that differ. The Kueue manager's Configuration is compared apart: the compile ships
it as a patch of the ConfigMap Kueue's installation owns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.core import yamlio
from compiler.drift.compare import FieldChange, configuration_changes, object_changes
from compiler.drift.health import HealthProblem, dangling_local_queues, inactive_queues, short_pools
from compiler.drift.live import KUEUE_CONFIGMAP, KUEUE_NAMESPACE, LiveCluster, ObjectKey, key_of
from compiler.evaluator.configuration_forms import CONFIGMAP_KEY

MANAGED_BY = ("app.kubernetes.io/managed-by", "kueue-policy")
CLUSTER_LABEL = "kueue-policy.io/cluster"


@dataclass
class ObjectDrift:
    key: ObjectKey
    state: str                       # missing | extra | changed
    source: str = ""                 # the policy file the object is compiled from
    changes: list[FieldChange] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {"kind": self.key.kind, "group": self.key.group, "namespace": self.key.namespace or None,
               "name": self.key.name, "state": self.state}
        if self.source:
            out["source"] = self.source
        if self.changes:
            out["changes"] = [c.to_dict() for c in self.changes]
        return out


@dataclass
class DriftReport:
    cluster: str
    live_source: str
    objects: list[ObjectDrift]
    health: list[HealthProblem]
    unread_kinds: list[str]
    compared: int

    @property
    def drifted(self) -> bool:
        return bool(self.objects or self.health)

    def to_dict(self) -> dict:
        return {"cluster": self.cluster, "live": self.live_source, "drift": self.drifted,
                "compared": self.compared, "objects": [o.to_dict() for o in self.objects],
                "health": [h.to_dict() for h in self.health], "unreadKinds": self.unread_kinds}


@dataclass(frozen=True)
class DesiredObject:
    obj: dict
    source: str


def _ours(obj: dict, cluster: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY[0]) == MANAGED_BY[1] and labels.get(CLUSTER_LABEL, cluster) == cluster


def _configuration_drift(desired: dict | None, live: LiveCluster) -> ObjectDrift | None:
    if desired is None or not live.has_kind("ConfigMap"):
        return None
    key = ObjectKey("", "ConfigMap", KUEUE_NAMESPACE, KUEUE_CONFIGMAP)
    held = live.objects.get(key)
    if held is None:
        return ObjectDrift(key, "missing", "the Kueue Configuration")
    text = ((held.get("data") or {}).get(CONFIGMAP_KEY))
    try:
        live_config = yamlio.load(text) if isinstance(text, str) else None
    except yamlio.YamlError:
        live_config = text
    if not isinstance(live_config, dict):
        return ObjectDrift(key, "changed", "the Kueue Configuration",
                           [FieldChange(f"data.{CONFIGMAP_KEY}", "a Kueue Configuration", text)])
    changes = [FieldChange(f"data.{CONFIGMAP_KEY}: {c.path}", c.desired, c.live)
               for c in configuration_changes(desired, live_config)]
    return ObjectDrift(key, "changed", "the Kueue Configuration", changes) if changes else None


def detect(cluster: str, desired: list[DesiredObject], configuration: dict | None, pools: dict[str, dict],
           live: LiveCluster) -> DriftReport:
    wanted = {key_of(d.obj): d for d in desired}
    drifts: list[ObjectDrift] = []
    for key in sorted(k for k in wanted if k is not None):
        item = wanted[key]
        if key.kind not in live.read_kinds:
            continue                     # said once, in unread_kinds
        held = live.objects.get(key)
        if held is None:
            drifts.append(ObjectDrift(key, "missing", item.source))
            continue
        changes = object_changes(item.obj, held)
        if changes:
            drifts.append(ObjectDrift(key, "changed", item.source, changes))
    for key, obj in sorted(live.objects.items()):
        if key not in wanted and _ours(obj, cluster) and key.kind != "ConfigMap":
            drifts.append(ObjectDrift(key, "extra"))
    config = _configuration_drift(configuration, live)
    if config is not None:
        drifts.append(config)
    flavors = [d.obj for d in desired if d.obj.get("kind") == "ResourceFlavor"]
    health = inactive_queues(live) + dangling_local_queues(live) + short_pools(live, flavors, pools)
    desired_kinds = {k.kind for k in wanted if k is not None}
    unread = sorted(kind for kind in desired_kinds if kind not in live.read_kinds)
    return DriftReport(cluster, live.source, drifts, health, unread, len(wanted))
