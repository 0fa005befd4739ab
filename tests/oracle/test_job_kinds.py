"""Job kinds as users apply them: the Workload Kueue's own integrations build must be the one the
Python adapters build.

Each manifest (Kueue's documentation examples in tests/evaluator/fixtures/kueue-docs, written
with `generateName` as the pages write them, plus the cases below: init containers, sidecars,
pod overhead, priority classes, pod groups) goes through `kueue-oracle --print-workloads`
(sigs.k8s.io/kueue's job integrations, oracle/jobs.go) and through `compiler.evaluator`'s
adapters. Workload names (so the generateName rule), queue, priority, and each pod set's name,
count, minCount and per-pod requests must agree; and `evaluate --engine kueue` and
`--engine python` must give the same verdicts on them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from compiler.evaluator import load_manifests
from kp_testing import REPO_ROOT, run_cli
from kp_testing.kueue_gave import NAMES_AND_POD_SETS, ONE_CPU_ROLE_HASH, POD_GROUP_FILE

DOCS = REPO_ROOT / "tests" / "evaluator" / "fixtures" / "kueue-docs"
CLUSTER = DOCS / "cluster.yaml"
EXAMPLES = sorted(p.name for p in DOCS.glob("*.yaml") if p != CLUSTER)

PRIORITIES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: batch-low}
value: 10
"""

# Beyond the pages: what changes the per-pod requests (init containers, a sidecar, overhead,
# limits without requests), the priority sources, a pod group of two roles.
EXTRA = {
    "job-init-overhead-priority.yaml": PRIORITIES + """
---
apiVersion: batch/v1
kind: Job
metadata:
  generateName: prep-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  parallelism: 2
  completions: 4
  template:
    spec:
      priorityClassName: high
      restartPolicy: Never
      overhead: {cpu: 100m, memory: 64Mi}
      initContainers:
      - name: fetch
        image: busybox
        resources: {requests: {cpu: "2", memory: 1Gi}}
      - name: proxy
        image: busybox
        restartPolicy: Always
        resources: {requests: {cpu: 250m}}
      containers:
      - name: main
        image: busybox
        resources: {limits: {cpu: 500m, memory: 512Mi}}
""",
    "tfjob-workload-priority.yaml": PRIORITIES + """
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  generateName: tf-dist-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/priority-class: batch-low}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template:
        spec:
          containers:
          - {name: tensorflow, image: tf, resources: {requests: {cpu: 500m, memory: 1Gi}}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: tensorflow, image: tf, resources: {requests: {cpu: "1", memory: 2Gi}}}
""",
    "pod-group-two-roles.yaml": "\n---\n".join(f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/pod-group-name: roles}}
  annotations: {{kueue.x-k8s.io/pod-group-total-count: "3"}}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    ports: [{{containerPort: 8080}}]
    resources: {{requests: {{cpu: "{cpu}", memory: 256Mi}}}}
""" for name, cpu in (("driver", "1"), ("worker-a", "500m"), ("worker-b", "500m"))),
}

# The kinds and modes the pages do not show: JAXJob, MPIJob with its own priority class, a
# RayJob in SidecarMode with multi-host workers, a LeaderWorkerSet without a leader template, a
# fast-admission pod group (3 of its 4 pods, requests from limits).
EXTRA["more-kinds.yaml"] = """apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata:
  generateName: jax-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: jax, image: jax, resources: {requests: {cpu: "1", memory: 1Gi}}}
---
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  generateName: mpi-prio-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  slotsPerWorker: 1
  runPolicy:
    schedulingPolicy: {priorityClass: high}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - {name: l, image: mpi, resources: {requests: {cpu: 100m}}}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - {name: w, image: mpi, resources: {requests: {cpu: "1"}}}
---
apiVersion: ray.io/v1
kind: RayJob
metadata:
  generateName: ray-sidecar-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  submissionMode: SidecarMode
  shutdownAfterJobFinishes: true
  entrypoint: python -c "print(1)"
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - {name: ray-head, image: ray, resources: {requests: {cpu: "1", memory: 2Gi}}}
    workerGroupSpecs:
    - groupName: workers
      replicas: 2
      numOfHosts: 2
      rayStartParams: {}
      template:
        spec:
          containers:
          - {name: ray-worker, image: ray, resources: {requests: {cpu: "1"}}}
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  generateName: lws-plain-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 3
    workerTemplate:
      spec:
        containers:
        - {name: w, image: nginx, resources: {requests: {cpu: 200m}}}
"""
FAST_POD = """apiVersion: v1
kind: Pod
metadata:
  generateName: fast-
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/pod-group-name: fast}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "4", kueue.x-k8s.io/pod-group-fast-admission: "true"}
spec:
  containers:
  - {name: c, image: busybox, resources: {limits: {cpu: 500m, memory: 1000Mi}}}
"""
EXTRA["more-kinds.yaml"] += "".join(f"---\n{FAST_POD}" for _ in range(3))

# No queue-name label: the webhooks of Job, JobSet, MPIJob, RayJob, RayCluster, LeaderWorkerSet
# and TrainJob give the namespace's `default` LocalQueue (not in kube-system); the Kubeflow
# training-operator jobs' and the pod webhook do not, so those stay unmanaged.
EXTRA["default-local-queue.yaml"] = """apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team}
spec: {clusterQueue: cluster-queue}
---
apiVersion: batch/v1
kind: Job
metadata: {generateName: nolabel-, namespace: team}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {generateName: nolabel-pt-, namespace: team}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: pt, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {generateName: nolabel-pod-, namespace: team}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {generateName: nolabel-lws-, namespace: team}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers: [{name: w, image: nginx, resources: {requests: {cpu: 200m}}}]
"""
# the same Job and a `default` LocalQueue in kube-system, which Kueue's default
# managedJobsNamespaceSelector leaves alone
EXTRA["default-local-queue.yaml"] += "---\n" + "---\n".join(
    doc.replace("namespace: team", "namespace: kube-system")
    for doc in EXTRA["default-local-queue.yaml"].split("---\n")[:2])

# Where Kueue builds no Workload at all. An incomplete pod group (2 of the 3 pods its
# total-count annotation announces): Kueue's pod integration waits for the whole group
# ("group has fewer runnable pods than expected"); the Python side does the same.
NO_WORKLOAD = {
    "pod-group-incomplete.yaml": EXTRA["pod-group-two-roles.yaml"].rsplit("\n---\n", 1)[0]
    .replace("pod-group-name: roles", "pod-group-name: partial"),
}


def manifest(name: str, tmp_path: Path) -> Path:
    if name in EXAMPLES:
        return DOCS / name
    path = tmp_path / name
    path.write_text({**EXTRA, **NO_WORKLOAD}[name])
    return path


def kueue_workloads(oracle_bin: Path, path: Path) -> tuple[dict, str]:
    done = subprocess.run([str(oracle_bin), "--print-workloads", str(path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return {f"{w['namespace']}/{w['name']}": w for w in json.loads(done.stdout)}, done.stderr


def python_workloads(path: Path) -> tuple[dict, str]:
    docs = list(YAML(typ="safe").load_all(path.read_text()))
    state = load_manifests(docs, [f"{path.name}:{i}" for i in range(len(docs))])
    return {w.key: w for w in state.workloads}, "\n".join(d.message for d in state.warnings)


def python_view(workload) -> dict:
    return {"queueName": workload.queue_name, "priority": workload.priority,
            "podSets": [{"name": ps.name, "count": ps.count, "minCount": ps.min_count,
                         "requests": dict(sorted(ps.per_pod.items()))} for ps in workload.podsets]}


def kueue_view(workload: dict) -> dict:
    return {"queueName": workload["queueName"], "priority": workload["priority"],
            "podSets": [{**ps, "requests": dict(sorted(ps["requests"].items()))} for ps in workload["podSets"]]}


@pytest.mark.parametrize("name", EXAMPLES + sorted(EXTRA))
def test_adapters_build_the_workloads_kueue_builds(oracle_bin, tmp_path, name):
    path = manifest(name, tmp_path)
    kueue, kueue_warnings = kueue_workloads(oracle_bin, path)
    python, python_warnings = python_workloads(path)
    assert kueue, kueue_warnings  # every example is a job Kueue manages
    assert sorted(python) == sorted(kueue), (kueue_warnings, python_warnings)
    for key, workload in kueue.items():
        assert python_view(python[key]) == kueue_view(workload), key


@pytest.mark.parametrize("name", sorted(NO_WORKLOAD))
def test_where_kueue_builds_no_workload_neither_does_python(oracle_bin, tmp_path, name):
    path = manifest(name, tmp_path)
    kueue, kueue_warnings = kueue_workloads(oracle_bin, path)
    python, python_warnings = python_workloads(path)
    assert kueue == {} and python == {}
    assert "fewer runnable pods than expected" in kueue_warnings
    assert "fewer runnable pods than expected" in python_warnings


def verdicts(engine: str, *files: Path) -> dict:
    done = run_cli("evaluate", "--engine", engine, *map(str, files), "--format", "json")
    assert done.returncode == 0, done.stderr
    return {w["name"]: (w["status"], w.get("clusterQueue"), w.get("count")) for w in
            json.loads(done.stdout)["workloads"]}


@pytest.mark.parametrize("name", EXAMPLES + sorted(EXTRA))
def test_both_engines_give_the_same_verdicts(oracle_bin, tmp_path, name, monkeypatch):
    monkeypatch.setenv("KUEUE_ORACLE", str(oracle_bin))
    path = manifest(name, tmp_path)
    python = verdicts("python", CLUSTER, path)
    assert python and python == verdicts("kueue", CLUSTER, path)


def test_the_values_the_offline_tests_hold_are_kueues(oracle_bin):
    """The names, pod sets and role hash that the engine's tests hold so as to run without Go
    (kp_testing/kueue_gave.py) are the ones Kueue's own code computes."""
    for name, (workload, counts) in NAMES_AND_POD_SETS.items():
        built, _ = kueue_workloads(oracle_bin, DOCS / name)
        assert list(built) == [workload], name
        assert {ps["name"]: ps["count"] for ps in built[workload]["podSets"]} == counts, name
    built, _ = kueue_workloads(oracle_bin, DOCS / POD_GROUP_FILE)
    assert built and all([ps["name"] for ps in w["podSets"]] == [ONE_CPU_ROLE_HASH] for w in built.values())
