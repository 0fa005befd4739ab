"""`kueue-policy import` on a live sandbox (etcd, kube-apiserver, Kueue's manager): hand-written
setups applied with kubectl, exported with `kubectl get ... -o yaml` (server-set fields, defaults
and all), imported, compiled; the compiled objects equal the live ones, semantically."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kp_testing import REPO_ROOT, run_cli
from kp_testing.sandbox import running_sandbox

from compiler.importer.semantic import differences

pytestmark = pytest.mark.usefixtures("sandbox_built")

FIXTURES = REPO_ROOT / "tests" / "importer" / "fixtures"
KINDS = "resourceflavors,cohorts,clusterqueues,localqueues,workloadpriorityclasses,topologies"


def _objects(path: Path) -> list[dict]:
    found = []
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "List":
            found.extend(doc["items"])
        elif isinstance(doc, dict):
            found.append(doc)
    return found


def _compiled(policy: Path, out: Path) -> list[dict]:
    done = run_cli("compile", str(policy), "--out", str(out))
    assert done.returncode == 0, done.stderr
    (cluster,) = [p for p in out.iterdir() if (p / "kueue").is_dir()]
    return [doc for file in sorted((cluster / "kueue").rglob("*.yaml")) for doc in _objects(file)]


@pytest.mark.parametrize("fixture", ["hierarchical-fair-sharing.yaml", "limits-and-checks.yaml",
                                     "cpu-next-to-gpu.yaml", "spot-on-demand.yaml", "flat-cohort.yaml"])
def test_live_setup_imports_and_compiles_back(fixture: str, tmp_path: Path) -> None:
    setup = [o for o in _objects(FIXTURES / fixture) if o["apiVersion"].startswith("kueue.x-k8s.io/")]
    namespaces = sorted({o["metadata"]["namespace"] for o in setup if o["metadata"].get("namespace")})
    with running_sandbox(tmp_path / "sandbox") as cluster:
        cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces])
        cluster.apply(setup)
        export = tmp_path / "export.yaml"
        export.write_text(cluster.export(KINDS))
    live = _objects(export)
    assert {o["kind"] for o in live} >= {"ResourceFlavor", "ClusterQueue", "LocalQueue"}
    assert any("uid" in o["metadata"] for o in live)  # a real export, server-set fields and all
    done = run_cli("import", str(export), "--out", str(tmp_path / "policy"), "--strict")
    assert done.returncode == 0, done.stderr
    recompiled = _compiled(tmp_path / "policy", tmp_path / "out")
    found = differences(live, recompiled)
    assert not found, "\n".join(d.describe() for d in found)
