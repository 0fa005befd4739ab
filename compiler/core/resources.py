"""The names of the resources kueue-policy counts, defined once: Kubernetes' own (`cpu`,
`memory`) and the NVIDIA device plugin's (whole GPUs, and one resource per MIG profile)."""

from __future__ import annotations

CPU = "cpu"
MEMORY = "memory"
GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"   # + the profile, `+` written as `.`: nvidia.com/mig-1g.10gb.me


def is_mig(resource: str) -> bool:
    return resource.startswith(MIG_PREFIX)


def is_gpu(resource: str) -> bool:
    """A whole GPU or a MIG instance of one."""
    return resource == GPU_RESOURCE or is_mig(resource)


def mig_resource_name(profile_name: str) -> str:
    """`nvidia.com/mig-<profile>` with `+` written as `.`, as the device plugin names it."""
    return f"{MIG_PREFIX}{profile_name.replace('+', '.')}"
