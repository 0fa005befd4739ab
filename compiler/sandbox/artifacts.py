"""Where `make sandbox` puts what a sandbox runs: three binaries and Kueue's own manifests.

`make sandbox` builds in oracle/sandbox/ (a Go module of this repository) and leaves:

    bin/etcd, bin/kube-apiserver, bin/kueue        the three servers
    manifests/kueue-crds.yaml                      Kueue's CRDs, with its conversion-webhook patches
    manifests/kueue-webhooks.yaml                  Kueue's webhook configurations (kustomize-built)
    manifests/jobs/*.yaml                          the CRDs of the job kinds Kueue integrates

The manifests are rendered from the Kueue module's own `config/components/` with kustomize, so
the sandbox installs exactly what Kueue's release installs; only the webhooks' Service references
are rewritten at `up` (this control plane has no Service network).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from compiler.core.errors import EnvironmentFailure

BUILD_ENV = "KUEUE_POLICY_SANDBOX_BUILD"
# The repository layout: compiler/sandbox/artifacts.py -> <repo>/oracle/sandbox.
DEFAULT_BUILD = Path(__file__).resolve().parents[2] / "oracle" / "sandbox"


class UnknownJobCrd(ValueError):
    """A job CRD name the build does not have (a usage error)."""


@dataclass(frozen=True)
class Artifacts:
    """The files of one `make sandbox` build."""

    root: Path

    @property
    def etcd(self) -> Path:
        return self.root / "bin" / "etcd"

    @property
    def kube_apiserver(self) -> Path:
        return self.root / "bin" / "kube-apiserver"

    @property
    def kueue_manager(self) -> Path:
        return self.root / "bin" / "kueue"

    @property
    def kueue_crds(self) -> Path:
        return self.root / "manifests" / "kueue-crds.yaml"

    @property
    def kueue_webhooks(self) -> Path:
        return self.root / "manifests" / "kueue-webhooks.yaml"

    def job_crd_names(self) -> dict[str, Path]:
        """CRD name (plural.group) -> file; the files are named group_plural.yaml."""
        names = {}
        for path in sorted((self.root / "manifests" / "jobs").glob("*_*.yaml")):
            group, plural = path.stem.split("_", 1)
            names[f"{plural}.{group}"] = path
        return names

    def job_crd_files(self, wanted: tuple[str, ...]) -> list[Path]:
        """The files of the job CRDs named (CRD names, or "all"); UnknownJobCrd for another name."""
        available = self.job_crd_names()
        if "all" in wanted:
            return list(available.values())
        unknown = [name for name in wanted if name not in available]
        if unknown:
            raise UnknownJobCrd(f"no job CRD named {', '.join(unknown)} in this build; "
                                f"known: {', '.join(available)} (or all)")
        return [available[name] for name in wanted]

    def missing(self) -> list[Path]:
        needed = [self.etcd, self.kube_apiserver, self.kueue_manager, self.kueue_crds,
                  self.kueue_webhooks]
        return [path for path in needed if not path.is_file()]


def find_artifacts() -> Artifacts:
    """The build named by $KUEUE_POLICY_SANDBOX_BUILD, else this checkout's oracle/sandbox.

    Raises EnvironmentFailure (exit 3) naming `make sandbox` when anything is missing."""
    configured = os.environ.get(BUILD_ENV)
    artifacts = Artifacts(Path(configured) if configured else DEFAULT_BUILD)
    missing = artifacts.missing()
    if missing:
        where = f"${BUILD_ENV}={configured}" if configured else str(artifacts.root)
        names = ", ".join(str(path.relative_to(artifacts.root)) for path in missing)
        raise EnvironmentFailure(
            f"the sandbox is not built ({names} missing under {where}); run `make sandbox` "
            f"(needs Go; the first build takes about 15 minutes), or set ${BUILD_ENV} to a build")
    return artifacts
