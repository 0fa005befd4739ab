"""Kueue's documentation examples, as users apply them, through `kueue-policy evaluate`.

Each example (tests/evaluator/fixtures/kueue-docs/, same shape as the pages' YAML) is evaluated
as a subprocess next to the pages' one-ClusterQueue set-up; the Workload Kueue would create must
be admitted with the pod sets, counts and flavor Kueue gives it. When a Kueue source tree with
the real `site/static/examples/jobs/` is on this machine (KUEUE_SOURCE, or the Go module cache),
those files are evaluated too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kp_testing import run_cli
from kp_testing.kueue_gave import NAMES_AND_POD_SETS

DOCS = Path(__file__).parent / "fixtures" / "kueue-docs"
CLUSTER = DOCS / "cluster.yaml"

# example -> ({workload name prefix: {pod set: count}}, ClusterQueue cpu usage)
EXPECTED = {
    "sample-job.yaml": ({"default/job-sample-job-": {"main": 3}}, "3"),
    # 20 pods wanted, 9 CPUs of quota, at least 5: partial admission at 9.
    "sample-job-partial-admission.yaml": ({"default/job-sample-job-partial-": {"main": 9}}, "9"),
    "sample-jobset.yaml": ({"default/jobset-sleep-job-": {"leader": 1, "workers": 4}}, "5"),
    "sample-pytorchjob.yaml": ({"default/pytorchjob-pytorch-simple-": {"master": 1, "worker": 1}}, "2"),
    "sample-xgboostjob.yaml": ({"default/xgboostjob-xgboost-dist-iris-": {"master": 1, "worker": 2}}, "1500m"),
    "sample-paddlejob.yaml": ({"default/paddlejob-paddle-simple-cpu-": {"worker": 2}}, "2"),
    "sample-mpijob.yaml": ({"default/mpijob-pi-": {"launcher": 1, "worker": 2}}, "3"),
    # head 1 + worker 200m + KubeRay's default submitter pod 500m
    "ray-job-sample.yaml": ({"default/rayjob-rayjob-sample-": {"head": 1, "small-group": 1, "submitter": 1}},
                            "1700m"),
    "ray-cluster-sample.yaml": ({"default/raycluster-raycluster-complete-": {"head": 1, "small-group": 1}}, "2"),
    # one Workload per group, each leader (100m) + 2 workers (200m)
    "leaderworkerset-sample.yaml": ({"default/leaderworkerset-nginx-leaderworkerset-0-": {"leader": 1, "worker": 2},
                                     "default/leaderworkerset-nginx-leaderworkerset-1-": {"leader": 1, "worker": 2}},
                                    "1"),
    "sample-trainjob.yaml": ({"default/trainjob-pytorch-distributed-": {"node": 2}}, "2"),
    "kueue-pod.yaml": ({"default/pod-kueue-sleep-": {"main": 1}}, "3"),
    "kueue-pod-group.yaml": ({"default/sample-group": {"*": 2}}, "2"),
}


def evaluate(*files: Path) -> tuple[dict, str]:
    proc = run_cli("evaluate", *map(str, files), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_every_example_has_an_expectation() -> None:
    assert sorted(EXPECTED) == sorted(p.name for p in DOCS.glob("*.yaml") if p != CLUSTER)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_doc_example_is_admitted_as_kueue_would(example: str) -> None:
    wanted, cpu = EXPECTED[example]
    out, stderr = evaluate(CLUSTER, DOCS / example)
    assert "skipped" not in stderr and "not evaluated" not in stderr, stderr
    workloads = out["workloads"]
    assert len(workloads) == len(wanted), workloads
    for prefix, counts in wanted.items():
        [workload] = [w for w in workloads if w["name"].startswith(prefix)]
        assert workload["status"] == "admitted", workload
        assert workload["clusterQueue"] == "cluster-queue"
        if "*" in counts:  # a pod group's pod set is named by its role hash
            assert list(workload["count"].values()) == [counts["*"]]
        else:
            assert workload["count"] == counts
        for podset, flavors in workload["assignment"].items():
            assert set(flavors.values()) == {"default-flavor"}, (podset, flavors)
    [queue] = out["clusterQueues"]
    assert queue["usage"]["default-flavor"]["cpu"] == cpu


def test_generate_name_gives_the_same_names_every_run_and_two_jobs_for_two_copies(tmp_path: Path) -> None:
    text = (DOCS / "sample-job.yaml").read_text()
    twice = tmp_path / "twice.yaml"
    twice.write_text(text + "---\n" + text)
    first, _ = evaluate(CLUSTER, twice)
    second, _ = evaluate(CLUSTER, twice)
    assert first == second
    names = [w["name"] for w in first["workloads"]]
    assert len(set(names)) == 2 and all(n.startswith("default/job-sample-job-") for n in names)
    # the name comes from the object, not from where it was read
    moved = tmp_path / "elsewhere.yaml"
    moved.write_text("# another file\n" + text)
    alone, _ = evaluate(CLUSTER, moved)
    assert alone["workloads"][0]["name"] == names[0]


def _kueue_doc_examples() -> list[Path]:
    roots = [os.environ.get("KUEUE_SOURCE", "")]
    cache = os.environ.get("GOMODCACHE") or str(Path.home() / "go" / "pkg" / "mod")
    roots.append(str(Path(cache) / "sigs.k8s.io" / "kueue@v0.19.2"))
    for root in roots:
        folder = Path(root) / "site" / "static" / "examples" / "jobs" if root else None
        if folder is not None and folder.is_dir():
            names = ("sample-job.yaml", "sample-jobset.yaml", "sample-pytorchjob.yaml", "ray-job-sample.yaml",
                     "ray-cluster-sample.yaml", "sample-paddlejob.yaml")
            return [folder / name for name in names if (folder / name).is_file()]
    return []


def test_real_kueue_doc_examples_when_available(tmp_path: Path) -> None:
    examples = _kueue_doc_examples()
    if not examples:
        pytest.skip("no Kueue source tree with site/static/examples (set KUEUE_SOURCE); the Go module "
                    "zip leaves site/ out, so the copies in fixtures/kueue-docs stand in")
    # the pages submit to `user-queue` or `main`: give both, with ample quota
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER.read_text().replace("nominalQuota: 9", "nominalQuota: 1000")
                       .replace("36Gi", "4000Gi") + "---\n" + CLUSTER.read_text().split("---\n")[-1]
                       .replace("name: user-queue", "name: main"))
    for example in examples:
        out, stderr = evaluate(cluster, example)
        assert "skipped" not in stderr, (example, stderr)
        assert out["workloads"] and all(w["status"] == "admitted" for w in out["workloads"]), (example, out)


# Names and pod sets that Kueue v0.19.2's own code gives these examples (kp_testing/kueue_gave.py:
# kueue-oracle computes them again where Go is): the Python adapters must give the same.
def test_names_and_pod_sets_are_the_ones_kueues_code_gives() -> None:
    files = [DOCS / name for name in NAMES_AND_POD_SETS]
    out, _ = evaluate(CLUSTER, *files)
    got = {w["name"]: w["count"] for w in out["workloads"]}
    assert got == dict(NAMES_AND_POD_SETS.values())
