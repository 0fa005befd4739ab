"""The public trace the project ships (bench/data/alibaba-openb/): its converter, and the tools
on it (real arrivals and run times, not generated ones)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kp_testing import REPO_ROOT, run_cli

DATA = REPO_ROOT / "bench" / "data" / "alibaba-openb"
CONVERTER = REPO_ROOT / "bench" / "convert_public_trace.py"

PODS = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12000,10
openb-pod-0001,6000,8192,1,500,,BE,Succeeded,100,5000,200
openb-pod-0002,4000,4096,0,0,,LS,Running,150,9000,160
openb-pod-0003,8000,8192,2,1000,,Burstable,Pending,300,400,
openb-pod-0004,32000,65536,8,1000,,Guaranteed,Failed,90000,95000,90100
"""


def _convert(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    pods = tmp_path / "pods.csv"
    pods.write_text(PODS)
    return subprocess.run([sys.executable, str(CONVERTER), "trace", str(pods), "--out", str(tmp_path / "trace.csv"),
                           *options], capture_output=True, text=True)


def test_the_converter_keeps_what_a_trace_can_replay(tmp_path: Path) -> None:
    done = _convert(tmp_path, "--start-day", "0.05", "--days", "1")
    assert done.returncode == 0, done.stderr
    # Pods running at the window's start arrive at it with what is left of their run; a sharing
    # pod asks one whole GPU; the never-scheduled and the CPU-only pods are left out, and said.
    assert (tmp_path / "trace.csv").read_text() == (
        "team,name,at,duration,replicas,gpus,cpu,memory\n"
        "qos-ls,openb-pod-0000,0,7680,1,1,12,16384Mi\n"
        "qos-be,openb-pod-0001,0,680,1,1,6,8192Mi\n"
        "qos-guaranteed,openb-pod-0004,85680,4900,1,8,32,65536Mi\n")
    assert "never scheduled" in done.stderr and "CPU-only" in done.stderr and "carried in" in done.stderr


def test_the_converter_names_a_bad_cell(tmp_path: Path) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(PODS.replace("90000,95000,90100", "90000,soon,90100"))
    done = subprocess.run([sys.executable, str(CONVERTER), "trace", str(pods), "--out", str(tmp_path / "t.csv")],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{pods}:6: deletion_time: 'soon'" in done.stderr and not (tmp_path / "t.csv").exists()


def test_the_shipped_trace_replays_whole(tmp_path: Path) -> None:
    done = run_cli("simulate", str(DATA / "policy"), "--trace", str(DATA / "trace-2w.csv"), "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["run"]["jobs"] == 2815 and summary["notes"]["skipped"] == []
    assert {t["team"] for t in summary["teams"]} == {"qos-ls", "qos-be", "qos-burstable", "qos-guaranteed"}
