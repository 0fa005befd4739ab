"""Version strings from the policy ("1.34", "v1.34.2", "0.19") as comparable tuples."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")


class VersionError(ValueError):
    pass


def parse_version(text: str, what: str) -> tuple[int, int, int]:
    match = _VERSION.match(str(text).strip())
    if not match:
        raise VersionError(f"{what} {text!r} is not a version like 1.34 or 1.34.2")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def show(version: tuple[int, ...]) -> str:
    return ".".join(str(p) for p in version[:2])


# Kueue API facts the verifier needs (Kueue's CHANGELOG and its CRDs per release).
KUEUE_V1BETA2_SINCE = (0, 15)   # kueue.x-k8s.io/v1beta2 first served
KUEUE_COHORT_V1BETA1_SINCE = (0, 13)  # Cohort graduated from v1alpha1 to v1beta1
