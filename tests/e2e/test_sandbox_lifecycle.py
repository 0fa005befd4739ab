"""`kueue-policy sandbox up|down|status`: a real Kueue that admits a Job, started and stopped clean."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kp_testing import REPO_ROOT, run_cli
from kp_testing.sandbox import (LiveCluster, none_running, recorded_processes, running_sandbox,
                                wait_until)

pytestmark = pytest.mark.usefixtures("sandbox_built")

QUEUE = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{
         "coveredResources": ["cpu"],
         "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
     "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"}},
]


def job(name: str, cpu: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}}


def suspended(cluster: LiveCluster, name: str) -> bool:
    return cluster.get(f"/apis/batch/v1/namespaces/default/jobs/{name}")["spec"].get("suspend", False)


def admits_jobs(cluster: LiveCluster) -> None:
    """Kueue's webhook suspends a queued Job, its scheduler admits what fits, its job
    controller unsuspends the admitted one; the Job that does not fit stays suspended."""
    cluster.apply(QUEUE)
    wait_until("the ClusterQueue to be Active", lambda: all(
        any(c["type"] == "Active" and c["status"] == "True" for c in q.get("status", {}).get("conditions", []))
        for q in cluster.items("clusterqueues")))
    cluster.create([job("fits", "3")])
    wait_until("Kueue to unsuspend the Job that fits", lambda: not suspended(cluster, "fits"))
    cluster.create([job("waits", "2")])
    wait_until("a Workload for the second Job", lambda: len(cluster.workloads()) == 2)
    workloads = {w["metadata"]["ownerReferences"][0]["name"]: w for w in cluster.workloads()}
    assert set(workloads) == {"fits", "waits"}
    assert suspended(cluster, "waits")
    assert workloads["fits"]["status"]["admission"]["clusterQueue"] == "cq"
    assert "admission" not in workloads["waits"].get("status", {})


def test_up_admits_a_job_status_reports_and_down_removes_everything(tmp_path: Path) -> None:
    folder = tmp_path / "sandbox"
    with running_sandbox(folder) as cluster:
        status = run_cli("sandbox", "status", "--dir", str(folder), "--format", "json")
        assert status.returncode == 0, status.stderr
        report = json.loads(status.stdout)
        assert report["ready"] and report["servers"] == {"etcd": True, "kube-apiserver": True, "kueue": True}
        assert cluster.kubeconfig == folder / "kubeconfig"
        # The kubeconfig verifies the server (no insecure-skip-tls-verify) and kubectl works with it.
        assert "insecure" not in cluster.kubeconfig.read_text()
        version = json.loads(cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
        assert (version["major"], version["minor"]) == ("1", "36")
        admits_jobs(cluster)
        records = recorded_processes(folder)
        assert len(records) == 3
    assert not folder.exists()
    assert none_running(records)
    stopped = run_cli("sandbox", "status", "--dir", str(folder))
    assert stopped.returncode == 1 and "no sandbox" in stopped.stdout


def test_two_sandboxes_run_side_by_side(tmp_path: Path) -> None:
    with running_sandbox(tmp_path / "one") as one, running_sandbox(tmp_path / "two") as two:
        assert one.state()["ports"]["apiserver"] != two.state()["ports"]["apiserver"]
        one.apply(QUEUE)
        assert [q["metadata"]["name"] for q in one.items("clusterqueues")] == ["cq"]
        assert two.items("clusterqueues") == []   # two API servers, two etcds: nothing shared


def test_nothing_is_written_outside_the_folder(tmp_path: Path) -> None:
    """Kueue's manager reads its metrics certificate from /etc/kueue/metrics/certs: it sees one
    there through a private mount, and the machine's /etc never gets one."""
    assert not Path("/etc/kueue").exists()
    with running_sandbox(tmp_path / "sandbox") as cluster:
        manager = next(r for r in cluster.state()["processes"] if r["name"] == "kueue")
        assert Path(f"/proc/{manager['pid']}/root/etc/kueue/metrics/certs/tls.crt").is_file()
        assert not Path("/etc/kueue").exists()
    assert not Path("/etc/kueue").exists()


def test_without_the_build_up_exits_3_naming_make_sandbox(tmp_path: Path) -> None:
    folder = tmp_path / "sandbox"
    done = run_cli("sandbox", "up", "--dir", str(folder),
                   env={"KUEUE_POLICY_SANDBOX_BUILD": str(tmp_path / "nothing")})
    assert done.returncode == 3
    assert "make sandbox" in done.stderr and "Traceback" not in done.stderr
    assert not folder.exists()


def test_a_second_up_in_a_running_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "sandbox"
    with running_sandbox(folder) as cluster:
        again = run_cli("sandbox", "up", "--dir", str(folder))
        assert again.returncode == 3 and "already runs" in again.stderr
        assert all(record["name"] for record in cluster.state()["processes"])
        assert run_cli("sandbox", "status", "--dir", str(folder)).returncode == 0


def test_a_folder_holding_other_files_is_not_used_or_removed(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    assert run_cli("sandbox", "up", "--dir", str(tmp_path)).returncode == 3
    assert run_cli("sandbox", "down", "--dir", str(tmp_path)).returncode == 3
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_a_tree_the_api_server_refuses_fails_up_and_leaves_no_process(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    # A LocalQueue in a namespace that does not exist: what a tree without its namespaces got.
    (tree / "lq.yaml").write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata: {name: lq, namespace: nowhere}\nspec: {clusterQueue: cq}\n")
    folder = tmp_path / "sandbox"
    done = run_cli("sandbox", "up", "--dir", str(folder), "--out", str(tree))
    assert done.returncode == 1, done.stderr
    assert "KP530" in done.stderr and 'namespaces "nowhere" not found' in done.stderr
    records = recorded_processes(folder)
    assert len(records) == 3 and none_running(records)
    assert run_cli("sandbox", "down", "--dir", str(folder)).returncode == 0
    assert not folder.exists()


def test_an_interrupted_up_stops_what_it_started(tmp_path: Path) -> None:
    folder = tmp_path / "sandbox"
    exe = Path(sys.executable).parent / "kueue-policy"
    up = subprocess.Popen([str(exe), "sandbox", "up", "--dir", str(folder)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    try:
        for line in up.stderr:
            if "Kueue's CRDs" in line:   # etcd and kube-apiserver run by now
                break
        assert len(recorded_processes(folder)) == 2
        up.send_signal(signal.SIGTERM)
        up.wait(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
    assert up.returncode != 0
    records = recorded_processes(folder)
    assert records and none_running(records)
    assert run_cli("sandbox", "down", "--dir", str(folder)).returncode == 0


def test_an_unreadable_configuration_in_the_tree_fails_before_anything_starts(tmp_path: Path) -> None:
    patch = tmp_path / "tree" / "kueue-config" / "kueue-manager-config.patch.yaml"
    patch.parent.mkdir(parents=True)
    patch.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config}\n"
                     "data:\n  controller_manager_config.yaml: |\n    kind: NotAConfiguration\n")
    folder = tmp_path / "sandbox"
    done = run_cli("sandbox", "up", "--dir", str(folder), "--out", str(tmp_path / "tree"))
    assert done.returncode == 1, done.stderr
    assert "kueue-manager-config.patch.yaml" in done.stderr and "does not hold a Kueue Configuration" in done.stderr
    assert "Traceback" not in done.stderr and not folder.exists()
