"""Where Kueue's CRDs come from in the tests: the Kueue Go module kueue-oracle builds against.

The version is the one oracle/go.mod requires, the directory `go env GOMODCACHE` holds
(`make oracle`, which `make test` runs when Go is installed, downloads the module). Without Go or
without the module the CRD cross-checks skip, saying which of the two is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_GO_MOD = REPO_ROOT / "oracle" / "go.mod"
KUEUE_MODULE = "sigs.k8s.io/kueue"


def kueue_module_version(go_mod: Path = ORACLE_GO_MOD) -> str:
    """The sigs.k8s.io/kueue version oracle/go.mod requires."""
    match = re.search(r"^\s*(?:require\s+)?sigs\.k8s\.io/kueue\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"{go_mod} does not require {KUEUE_MODULE}")
    return match.group(1)


def kueue_crd_dir() -> tuple[Path | None, str]:
    """(the module's config/components/crd/bases, "") or (None, why it is not there)."""
    version = kueue_module_version()
    go = shutil.which("go")
    if go is None:
        return None, f"Kueue's CRDs come from the Go module {KUEUE_MODULE}@{version}: go not on PATH"
    done = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, check=False)
    cache = done.stdout.strip()
    if done.returncode != 0 or not cache:
        return None, f"`go env GOMODCACHE` failed: {done.stderr.strip()}"
    crds = Path(cache) / f"{KUEUE_MODULE}@{version}" / "config" / "components" / "crd" / "bases"
    if not crds.is_dir():
        return None, (f"{KUEUE_MODULE}@{version} is not in the Go module cache ({crds} absent); "
                      "`make oracle` downloads it")
    return crds, ""
