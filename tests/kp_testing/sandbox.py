"""Live sandboxes for the end-to-end tier: started with the real CLI, stopped for sure.

`running_sandbox(folder, tree)` runs `kueue-policy sandbox up` as a subprocess (as a user would),
yields a `LiveCluster` and runs `sandbox down` on the way out, whatever happened; it then checks
that none of the sandbox's servers still runs. The tier needs Go (`make sandbox` builds the
control plane); without Go `sandbox_build()` says so and the test skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import yaml

from kp_testing import REPO_ROOT, run_cli

T = TypeVar("T")
BUILD = REPO_ROOT / "oracle" / "sandbox"
V1BETA2 = "/apis/kueue.x-k8s.io/v1beta2"


def sandbox_build() -> tuple[bool, str]:
    """(usable, reason): the tier runs where Go is, building the sandbox if a bare pytest run
    comes before `make sandbox` (as `make test` does not)."""
    if shutil.which("go") is None:
        return False, "the end-to-end tier needs Go on PATH (make sandbox builds etcd, kube-apiserver and Kueue)"
    needed = [BUILD / "bin" / name for name in ("etcd", "kube-apiserver", "kueue")]
    needed.append(BUILD / "manifests" / "kueue-crds.yaml")
    if not all(path.is_file() for path in needed):
        built = subprocess.run(["make", "--no-print-directory", "sandbox"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=False)
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return True, ""


@dataclass
class LiveCluster:
    folder: Path
    kubeconfig: Path
    up_stderr: str

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args], input=input,
                              capture_output=True, text=True, timeout=120)
        if check:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done

    def apply(self, objects: list[dict] | str, *, check: bool = True) -> subprocess.CompletedProcess:
        text = objects if isinstance(objects, str) else yaml.safe_dump_all(objects, sort_keys=False)
        return self.kubectl("apply", "--server-side", "-f", "-", input=text, check=check)

    def create(self, objects: list[dict], *, check: bool = True) -> subprocess.CompletedProcess:
        return self.kubectl("create", "-f", "-", input=yaml.safe_dump_all(objects, sort_keys=False), check=check)

    def get(self, path: str) -> Any:
        from compiler.sandbox.lifecycle import client_for
        return client_for(self.folder).get(path)

    def items(self, resource: str, api: str = V1BETA2) -> list[dict]:
        return self.get(f"{api}/{resource}").get("items") or []

    def workloads(self) -> list[dict]:
        return self.items("workloads")

    def state(self) -> dict:
        return json.loads((self.folder / "sandbox.json").read_text())

    def export(self, *resources: str) -> str:
        """What `kubectl get ... -o yaml` prints for these resources in every namespace."""
        return self.kubectl("get", ",".join(resources), "-A", "-o", "yaml").stdout


def compile_tree(policy: Path, out: Path) -> Path:
    """`kueue-policy compile` (declared workloads Kueue would never admit allowed) into `out`;
    the one cluster folder it wrote."""
    done = run_cli("compile", str(policy), "--out", str(out), "--allow-inadmissible")
    assert done.returncode == 0, done.stderr
    clusters = [path for path in out.iterdir() if (path / "kustomization.yaml").is_file()]
    assert len(clusters) == 1
    return clusters[0]


def mappings(tree: Path) -> list[dict]:
    """The deviceClassMappings of the Kueue Configuration a compiled tree ships."""
    from compiler.sandbox.kueue_setup import tree_configuration
    configuration, _source = tree_configuration(tree)
    return (configuration.get("resources") or {}).get("deviceClassMappings") or []


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 60.0, interval: float = 0.25) -> T:
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None and result is not False:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def recorded_processes(folder: Path) -> list[dict]:
    state_file = folder / "sandbox.json"
    return json.loads(state_file.read_text())["processes"] if state_file.is_file() else []


def none_running(records: list[dict]) -> bool:
    from compiler.sandbox.processes import is_running
    return not any(is_running(record["pid"], record["start_time"]) for record in records)


@contextmanager
def running_sandbox(folder: Path, tree: Path | None = None, *extra: str) -> Iterator[LiveCluster]:
    """A sandbox in `folder` (with `tree` applied), stopped and removed when the block ends."""
    args = ["sandbox", "up", "--dir", str(folder), *extra]
    if tree is not None:
        args += ["--out", str(tree)]
    try:
        done = run_cli(*args)
        assert done.returncode == 0, f"sandbox up failed ({done.returncode}):\n{done.stderr[-5000:]}"
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith("KUBECONFIG="), done.stdout
        yield LiveCluster(folder, Path(last.split("=", 1)[1]), done.stderr)
    finally:
        records = recorded_processes(folder)
        stopped = run_cli("sandbox", "down", "--dir", str(folder))
        assert stopped.returncode == 0, stopped.stderr
        assert none_running(records), f"still running after down: {records}"
