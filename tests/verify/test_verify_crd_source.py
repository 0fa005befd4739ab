"""Kueue's CRDs for the verify cross-checks come from the Kueue Go module kueue-oracle builds
against (oracle/go.mod), not from outside the repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kp_testing.kueue_module import ORACLE_GO_MOD, kueue_module_version


def test_the_crds_are_the_oracle_modules(kueue_crd_dir: Path) -> None:
    version = kueue_module_version()
    assert version == "v0.19.2"
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    assert kueue_crd_dir == Path(cache) / f"sigs.k8s.io/kueue@{version}" / "config/components/crd/bases"
    assert (kueue_crd_dir / "kueue.x-k8s.io_clusterqueues.yaml").is_file()


def test_the_version_is_read_from_go_mod(tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kueue v0.18.1\n")
    assert kueue_module_version(go_mod) == "v0.18.1"
    assert kueue_module_version(ORACLE_GO_MOD).startswith("v0.")
