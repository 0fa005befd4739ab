"""nvidia-mig-manager output for a MIG plan: the `mig-configs` document and node labels.

mig-manager applies, per node, the config named by the node label `nvidia.com/mig.config`. A
config is a list of entries, each for `devices: all` or a list of GPU indices, with the per-GPU
profile counts (`mig-devices`); mig-manager tries creation orders itself, so counts are enough
(the planner has proven each layout placeable).

Nodes are assigned so that as many as possible are uniform (every GPU the same layout, config
`devices: all`). GPUs left over per layout are packed into mixed nodes, whose config lists GPU
indices per layout; a mixed or last node's GPUs beyond the plan repeat its last layout (spare MIG
capacity, so no node mixes MIG and whole GPUs). Nodes the plan does not need get `all-disabled`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

from compiler.mig.catalogue import Catalogue, GpuModel, load_catalogue
from compiler.mig.placement import canonical_layout
from compiler.core import yamlio
from compiler.core.templating import render_object

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"
DISABLED_CONFIG = "all-disabled"
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

# A config value: one layout for every GPU of the node, or (GPU indices, layout) pairs.
ConfigSpec = Union[Mapping[str, int], Sequence[tuple[Sequence[int], Mapping[str, int]]]]


def _profile_in_name(profile: str) -> str:
    # mig-parted writes `+` as `.` in config names (all-1g.10gb.me); `+` is not valid in labels.
    return profile.replace("+", ".")


def layout_config_name(profiles: Mapping[str, int], model: GpuModel | str | None = None,
                       catalogue: Catalogue | None = None) -> str:
    """A deterministic config name (and `nvidia.com/mig.config` label value) for a layout.

    With `model`, a layout equal to one NVIDIA ships keeps the shipped name (`all-balanced`,
    `all-1g.10gb`). Otherwise `<n>x<profile>-...` in sorted profile order, e.g.
    `2x1g.10gb-1x2g.20gb-1x3g.40gb`; names over 63 characters (the label value limit) become
    `mig-<sha256 prefix>`."""
    layout = canonical_layout(profiles)
    if model is not None:
        gpu = model if isinstance(model, GpuModel) else (catalogue or load_catalogue()).model(model)
        if gpu is not None:
            for name, shipped in sorted(gpu.shipped_layouts().items()):
                if canonical_layout(shipped) == layout:
                    return name
    name = "-".join(f"{count}x{_profile_in_name(profile)}" for profile, count in layout)
    if len(name) > 63 or not _LABEL_VALUE.match(name):
        name = "mig-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return name


def _entry(devices, profiles: Mapping[str, int], device_filter: Sequence[str]) -> dict:
    entry: dict = {}
    if device_filter:
        entry["device-filter"] = list(device_filter)
    entry["devices"] = devices
    entry["mig-enabled"] = True
    entry["mig-devices"] = {name: int(count) for name, count in canonical_layout(profiles)}
    return entry


def mig_manager_config(layouts_by_name: Mapping[str, ConfigSpec],
                       device_filter: Sequence[str] = (), include_disabled: bool = True) -> dict:
    """The mig-parted `version: v1` document with one `mig-configs` entry per name.

    A mapping value applies to `devices: all`; a list of (indices, layout) pairs gives one entry
    per index list. `device_filter` (PCI ids) restricts entries to one GPU family."""
    configs: dict[str, list[dict]] = {}
    for name in sorted(layouts_by_name):
        spec = layouts_by_name[name]
        if isinstance(spec, Mapping):
            configs[name] = [_entry("all", spec, device_filter)]
        else:
            configs[name] = [_entry(sorted(int(i) for i in devices), layout, device_filter)
                             for devices, layout in sorted(spec, key=lambda item: min(item[0]))]
    if include_disabled and DISABLED_CONFIG not in configs:
        configs[DISABLED_CONFIG] = [{"devices": "all", "mig-enabled": False}]
    return {"version": "v1", "mig-configs": dict(sorted(configs.items()))}


def mig_manager_configmap(config: dict, name: str = "kueue-policy-mig-parted-config",
                          namespace: str = "gpu-operator") -> dict:
    """The ConfigMap (key `config.yaml`) the GPU Operator's `migManager.config.name` points at."""
    return render_object("mig/mig-parted-configmap.yaml.j2", name=name, namespace=namespace,
                         config_text=yamlio.dump(config))


@dataclass(frozen=True)
class NodeGroup:
    """`nodes` nodes that get label nvidia.com/mig.config=`config`."""

    config: str
    nodes: int
    gpu_layouts: tuple[tuple[tuple[int, ...], tuple[tuple[str, int], ...]], ...]  # (indices, layout)

    def to_dict(self) -> dict:
        return {"config": self.config, "nodes": self.nodes,
                "gpus": [{"devices": list(devices), "profiles": dict(layout)}
                         for devices, layout in self.gpu_layouts]}


@dataclass(frozen=True)
class NodeAssignment:
    groups: tuple[NodeGroup, ...]
    configs: dict          # name -> ConfigSpec, ready for mig_manager_config

    def labels(self) -> dict[str, int]:
        """Node counts per `nvidia.com/mig.config` value."""
        return {group.config: group.nodes for group in self.groups}


def assign_nodes(layout_counts: Sequence[tuple[int, Mapping[str, int]]], nodes: int,
                 gpus_per_node: int, model: GpuModel | str | None = None,
                 catalogue: Catalogue | None = None) -> NodeAssignment:
    """Which nodes get which config, for a plan given as (GPU count, layout) pairs.

    Raises ValueError if the plan needs more GPUs than `nodes * gpus_per_node` (the caller checks
    capacity first and reports it as a policy error)."""
    if gpus_per_node <= 0 or nodes < 0:
        raise ValueError("nodes must be >= 0 and gpus_per_node > 0")
    layouts = sorted(((int(c), canonical_layout(p)) for c, p in layout_counts if c),
                     key=lambda item: (-item[0], item[1]))
    needed = sum(count for count, _ in layouts)
    if needed > nodes * gpus_per_node:
        raise ValueError(f"the plan needs {needed} GPUs, the pool has {nodes * gpus_per_node}")
    node_layouts: list[tuple[tuple[str, int], ...]] = []    # per node: layout per GPU index
    remainders: list[tuple[tuple[str, int], ...]] = []
    for count, layout in layouts:
        full, rest = divmod(count, gpus_per_node)
        node_layouts.extend([tuple([layout] * gpus_per_node)] * full)  # type: ignore[list-item]
        remainders.extend([layout] * rest)
    for start in range(0, len(remainders), gpus_per_node):
        chunk = remainders[start:start + gpus_per_node]
        chunk = chunk + [chunk[-1]] * (gpus_per_node - len(chunk))   # spare copies of the last
        node_layouts.append(tuple(chunk))  # type: ignore[arg-type]

    counts: dict[tuple, int] = {}
    for per_gpu in node_layouts:
        counts[per_gpu] = counts.get(per_gpu, 0) + 1
    groups: list[NodeGroup] = []
    configs: dict = {}
    for per_gpu, how_many in counts.items():
        distinct = sorted(set(per_gpu))
        if len(distinct) == 1:
            name = layout_config_name(dict(distinct[0]), model, catalogue)
            configs[name] = dict(distinct[0])
            gpu_layouts = ((tuple(range(gpus_per_node)), distinct[0]),)
        else:
            by_layout = [(tuple(i for i, l in enumerate(per_gpu) if l == layout), layout)
                         for layout in distinct]
            by_layout.sort(key=lambda item: item[0])
            key = ";".join(f"{list(ix)}:{layout}" for ix, layout in by_layout)
            name = "mixed-" + hashlib.sha256(key.encode()).hexdigest()[:10]
            configs[name] = [(list(ix), dict(layout)) for ix, layout in by_layout]
            gpu_layouts = tuple(by_layout)
        groups.append(NodeGroup(name, how_many, gpu_layouts))
    unused = nodes - len(node_layouts)
    if unused:
        groups.append(NodeGroup(DISABLED_CONFIG, unused, ()))
    groups.sort(key=lambda g: (g.config == DISABLED_CONFIG, -g.nodes, g.config))
    return NodeAssignment(tuple(groups), dict(sorted(configs.items())))
