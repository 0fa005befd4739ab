"""The MIG catalogue: GPU models and their MIG profiles, keyed by (model, profile).

The data lives in `catalogue.yaml` beside this module (the project's own file, cross-checked by
tests against the reference data). This module turns it into frozen, typed objects and answers
the questions the compiler asks: does this model have this profile, which profile holds N GiB.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from compiler.core import yamlio
from compiler.core.resources import MIG_PREFIX, mig_resource_name  # noqa: F401 - part of the catalogue's API

CATALOGUE_PATH = Path(__file__).with_name("catalogue.yaml")

# Where no usable memory was observed, the nominal size in the name is scaled by the worst
# observed usable/nominal ratio (H100 NVL 1g.12gb: 10.62 GiB of "12gb"), so estimates err low.
ESTIMATE_RATIO = 0.88

_NOMINAL_GB = re.compile(r"^\d+g\.(\d+)gb")


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one model."""

    name: str
    model: str
    shape: str
    compute_slices: int
    memory_slices: int
    placement_starts: tuple[int, ...]
    max_count: int
    is_media_extension: bool
    memory_gib: float          # usable GiB (observed, or estimated when memory_observed is False)
    memory_observed: bool
    nominal_gb: int            # the number in the name: a label, not a guarantee

    @property
    def resource_name(self) -> str:
        """The device-plugin (mixed strategy) resource name: `+` becomes `.`."""
        return mig_resource_name(self.name)


@dataclass(frozen=True)
class GpuModel:
    name: str
    product_names: tuple[str, ...]     # NVML names, as the DRA driver publishes `productName`
    architecture: str
    memory_gb_nominal: int
    compute_slices: int
    memory_slices: int
    device_filter: tuple[str, ...]     # PCI ids for mig-parted `device-filter`
    balanced_layout: Mapping[str, int]
    profiles: Mapping[str, MigProfile]
    confidence: str = "verified"

    @property
    def product_name(self) -> str | None:
        """The first (most common) product name, or None when the sources did not give one."""
        return self.product_names[0] if self.product_names else None

    @property
    def memory_gib(self) -> float:
        """Usable memory of the whole GPU: that of the full-size profile (7g / 4g on A30)."""
        full = max(self.profiles.values(), key=lambda p: (p.memory_slices, p.compute_slices))
        return full.memory_gib

    def profile(self, name: str) -> MigProfile | None:
        return self.profiles.get(name)

    def profile_named(self, name: str) -> MigProfile | None:
        """The profile by its name as written, or as spelled canonically (see canonical_profile_name)."""
        return self.profiles.get(name) or self.profiles.get(canonical_profile_name(name))

    def shipped_layouts(self) -> dict[str, dict[str, int]]:
        """The configs nvidia-mig-manager ships for this model: all-balanced and all-<profile>.

        Config names follow mig-parted: `+` is written as `.` in names (all-1g.10gb.me)."""
        layouts: dict[str, dict[str, int]] = {"all-balanced": dict(self.balanced_layout)}
        for profile in self.profiles.values():
            layouts[f"all-{profile.name.replace('+', '.')}"] = {profile.name: profile.max_count}
        return layouts


def canonical_profile_name(name: str) -> str:
    """nvidia-smi spelling of a profile written as a resource or config name:
    `nvidia.com/mig-1g.10gb.me` / `mig-1g.10gb.me` / `1g.10gb.me` -> `1g.10gb+me`."""
    text = str(name).strip()
    for prefix in (MIG_PREFIX, "mig-"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    if text.endswith(".me"):
        text = text[: -len(".me")] + "+me"
    return text




@dataclass(frozen=True)
class Catalogue:
    models: Mapping[str, GpuModel] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)   # upper-cased alias -> model name

    def model(self, name: str) -> GpuModel | None:
        """The model by its catalogue name, or by an alias / different case (h100-sxm5-80gb)."""
        if name in self.models:
            return self.models[name]
        canonical = self.aliases.get(str(name).upper())
        return self.models.get(canonical) if canonical else None

    def profile(self, model: str, profile: str) -> MigProfile | None:
        gpu = self.model(model)
        return None if gpu is None else gpu.profile_named(profile)

    def models_with_profile(self, profile: str) -> list[str]:
        """Models that have a profile of this name (to explain 'a profile of another model')."""
        return sorted(name for name, gpu in self.models.items() if profile in gpu.profiles)

    def smallest_profile_for_memory(self, model: str, gib: float) -> MigProfile | None:
        """The smallest profile whose *usable* memory covers `gib`.

        Smallest = fewest memory slices, then fewest compute slices (the least GPU taken away
        from others). Media-extension profiles are never chosen: only one fits per GPU."""
        gpu = self.model(model)
        if gpu is None:
            return None
        fitting = [p for p in gpu.profiles.values()
                   if not p.is_media_extension and p.memory_gib + 1e-9 >= gib]
        if not fitting:
            return None
        return min(fitting, key=lambda p: (p.memory_slices, p.compute_slices, p.memory_gib, p.name))

    def describe_unknown_model(self, model: str) -> str:
        return f"unknown GPU model {model!r}; MIG-capable models: {', '.join(sorted(self.models))}"

    def describe_unknown_profile(self, model: str, profile: str) -> str:
        """A message for a profile the model lacks, naming the models that do have it."""
        gpu = self.model(model)
        if gpu is None:
            return f"unknown GPU model {model!r}; known MIG-capable models: {', '.join(sorted(self.models))}"
        others = [m for m in self.models_with_profile(profile) if m != gpu.name]
        text = f"MIG profile {profile!r} does not exist on {gpu.name}"
        if others:
            text += f" (it is a profile of {', '.join(others)})"
        return text + f"; {gpu.name} profiles: {', '.join(sorted(gpu.profiles))}"


def _nominal_gb(profile_name: str) -> int:
    match = _NOMINAL_GB.match(profile_name)
    if not match:
        raise ValueError(f"catalogue: profile name {profile_name!r} is not <N>g.<M>gb")
    return int(match.group(1))


def _build_model(name: str, raw: dict, geometries: dict) -> GpuModel:
    geometry = geometries[raw["geometry"]]
    shapes = geometry["shapes"]
    observed_by_slices: dict[int, float] = {}
    for pname, praw in raw["profiles"].items():
        if praw.get("gib") is not None:
            slices = shapes[praw["shape"]]["memory"]
            observed_by_slices[slices] = min(observed_by_slices.get(slices, float("inf")),
                                             float(praw["gib"]))
    profiles: dict[str, MigProfile] = {}
    for pname, praw in raw["profiles"].items():
        shape = shapes[praw["shape"]]
        nominal = _nominal_gb(pname)
        observed = praw.get("gib")
        if observed is not None:
            gib, is_observed = float(observed), True
        elif shape["memory"] in observed_by_slices:
            # Usable memory depends on the memory slices only, not on compute.
            gib, is_observed = observed_by_slices[shape["memory"]], False
        else:
            gib, is_observed = round(nominal * ESTIMATE_RATIO, 2), False
        profiles[pname] = MigProfile(
            name=pname, model=name, shape=praw["shape"],
            compute_slices=int(shape["compute"]), memory_slices=int(shape["memory"]),
            placement_starts=tuple(int(s) for s in shape["starts"]),
            max_count=int(praw.get("max", shape["max"])),
            is_media_extension=bool(shape.get("me", False)) or "+me" in pname,
            memory_gib=gib, memory_observed=is_observed, nominal_gb=nominal,
        )
    for pname in raw.get("balanced", {}):
        if pname not in profiles:
            raise ValueError(f"catalogue: balanced layout of {name} names unknown profile {pname}")
    return GpuModel(
        name=name, product_names=tuple(raw.get("productNames") or ()),
        architecture=raw["architecture"], memory_gb_nominal=int(raw["nominalGB"]),
        compute_slices=int(geometry["computeSlices"]), memory_slices=int(geometry["memorySlices"]),
        device_filter=tuple(raw.get("deviceFilter") or ()),
        balanced_layout=dict(raw.get("balanced") or {}), profiles=profiles,
        confidence=raw.get("confidence", "verified"),
    )


@functools.lru_cache(maxsize=4)
def load_catalogue(path: Path | str | None = None) -> Catalogue:
    """Load (once) the catalogue shipped with kueue-policy, or one at `path` (tests)."""
    source = Path(path) if path is not None else CATALOGUE_PATH
    data = yamlio.load(source.read_text(encoding="utf-8"))
    geometries = data["geometries"]
    models = {name: _build_model(name, raw, geometries) for name, raw in data["models"].items()}
    aliases: dict[str, str] = {name.upper(): name for name in models}
    for name, raw in data["models"].items():
        for alias in raw.get("aliases") or ():
            if aliases.setdefault(str(alias).upper(), name) != name:
                raise ValueError(f"catalogue: alias {alias} names two models")
    return Catalogue(models=models, aliases=aliases)
