"""One adapter per job kind: the Workloads Kueue v0.19 creates for each (pod set names, counts,
minCount, priority, Workload name), read through the public loader."""

from __future__ import annotations

import pytest

from compiler.evaluator import load_manifests
from compiler.evaluator.jobs import JobContext, JobObject, adapter_for, workload_name
from kp_testing.kueue_gave import ONE_CPU_ROLE_HASH

Q = {"kueue.x-k8s.io/queue-name": "lq"}


def pod(cpu: str = "1", **spec: object) -> dict:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}}


def obj(api_version: str, kind: str, spec: dict, name: str = "j", labels: dict | None = None,
        annotations: dict | None = None, **meta: object) -> dict:
    metadata = {"name": name, "namespace": "ns", "labels": {**Q, **(labels or {})}, **meta}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def load(*docs: dict):
    state = load_manifests(list(docs), [f"in.yaml:{10 * (i + 1)}" for i in range(len(docs))])
    return state, {w.name: w for w in state.workloads}


def shape(workload) -> dict:
    return {ps.name: ps.count for ps in workload.podsets}


def messages(state) -> str:
    return "\n".join(d.message for d in state.warnings)


def test_workload_names_match_kueues_own_test_vectors() -> None:
    # pkg/controller/jobframework/workload_names_test.go (ShortWorkloadNames off, the default)
    assert workload_name("Job", "batch", "name", "uid") == "job-name-ef3a1"
    assert workload_name("Job", "batch", "name", "uid", "1") == "job-name-2514c"
    assert len(workload_name("Job", "batch", "x" * 300, "uid")) == 253


def test_batch_job_count_min_parallelism_and_priority() -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"}, "value": 50}
    job = obj("batch/v1", "Job", {"parallelism": 5, "completions": 3, "template": pod(priorityClassName="hi")},
              annotations={"kueue.x-k8s.io/job-min-parallelism": "2"})
    state, by_name = load(pc, job)
    [w] = by_name.values()
    assert shape(w) == {"main": 3} and w.podsets[0].min_count == 2 and w.priority == 50
    assert w.podsets[0].per_pod == {"cpu": 1000} and w.queue_name == "lq" and w.namespace == "ns"
    bad = obj("batch/v1", "Job", {"template": pod()}, annotations={"kueue.x-k8s.io/job-min-parallelism": "two"})
    state, by_name = load(bad)
    assert not by_name and "webhook rejects it (metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: " \
        "'two' is not an integer)" in messages(state)
    too_big = obj("batch/v1", "Job", {"parallelism": 3, "template": pod()},
                  annotations={"kueue.x-k8s.io/job-min-parallelism": "3"})
    state, by_name = load(too_big)
    assert not by_name and "3 should be between 0 and 2" in messages(state)


def test_priority_order_label_then_class_then_global_default() -> None:
    wpc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "w"},
           "value": 7}
    default = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "d"},
               "value": 3, "globalDefault": True}
    labelled = obj("batch/v1", "Job", {"template": pod()}, name="a", labels={"kueue.x-k8s.io/priority-class": "w"})
    plain = obj("batch/v1", "Job", {"template": pod()}, name="b")
    _, by_name = load(wpc, default, labelled, plain)
    assert {n.split("-")[1]: w.priority for n, w in by_name.items()} == {"a": 7, "b": 3}
    missing = obj("batch/v1", "Job", {"template": pod()}, labels={"kueue.x-k8s.io/priority-class": "nope"})
    state, by_name = load(missing)
    assert not by_name and "WorkloadPriorityClass nope" in messages(state)


def test_jobset_replicated_jobs() -> None:
    js = obj("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": [
        {"name": "Driver", "template": {"spec": {"template": pod()}}},
        {"name": "workers", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2,
                                                                  "template": pod()}}}]})
    _, by_name = load(js)
    [(name, w)] = by_name.items()
    assert shape(w) == {"driver": 1, "workers": 6}
    assert name == workload_name("JobSet", "jobset.x-k8s.io", "j", "")


@pytest.mark.parametrize("kind,field,roles,expected", [
    ("PyTorchJob", "pytorchReplicaSpecs", {"Worker": 3, "Master": None}, {"master": 1, "worker": 3}),
    ("TFJob", "tfReplicaSpecs", {"Worker": 2, "PS": 1, "Chief": 1, "Other": 5}, {"chief": 1, "ps": 1, "worker": 2}),
    ("XGBoostJob", "xgbReplicaSpecs", {"Master": 1, "Worker": 2}, {"master": 1, "worker": 2}),
    ("PaddleJob", "paddleReplicaSpecs", {"Worker": 4}, {"worker": 4}),
    ("JAXJob", "jaxReplicaSpecs", {"Worker": 2}, {"worker": 2}),
])
def test_kubeflow_training_jobs(kind: str, field: str, roles: dict, expected: dict) -> None:
    specs = {role: {"template": pod(), **({"replicas": n} if n is not None else {})} for role, n in roles.items()}
    _, by_name = load(obj("kubeflow.org/v1", kind, {field: specs}))
    [w] = by_name.values()
    assert shape(w) == expected
    assert [ps.name for ps in w.podsets] == list(expected)  # Kueue's fixed order, not the input's


def test_mpijob_and_run_policy_priority() -> None:
    pcs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
           for n, v in (("launch", 10), ("policy", 20))]
    spec = {"mpiReplicaSpecs": {"Worker": {"replicas": 4, "template": pod()},
                                "Launcher": {"template": pod(priorityClassName="launch")}}}
    _, by_name = load(*pcs, obj("kubeflow.org/v2beta1", "MPIJob", spec))
    [w] = by_name.values()
    assert shape(w) == {"launcher": 1, "worker": 4} and w.priority == 10
    spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": "policy"}}
    _, by_name = load(*pcs, obj("kubeflow.org/v2beta1", "MPIJob", spec))
    assert next(iter(by_name.values())).priority == 20


def ray_cluster(**extra: object) -> dict:
    return {"headGroupSpec": {"template": pod("1")},
            "workerGroupSpecs": [{"groupName": "GPU-group", "replicas": 2, "numOfHosts": 2, "minReplicas": 0,
                                  "maxReplicas": 8, "template": pod("2")}], **extra}


def test_raycluster_counts_hosts_and_charges_what_kuberay_adds() -> None:
    _, by_name = load(obj("ray.io/v1", "RayCluster", ray_cluster()))
    [w] = by_name.values()
    assert shape(w) == {"head": 1, "gpu-group": 4}
    elastic = obj("ray.io/v1", "RayCluster", ray_cluster(enableInTreeAutoscaling=True),
                  annotations={"kueue.x-k8s.io/elastic-job": "true", "ray.io/ft-enabled": "true"})
    [w] = load(elastic)[1].values()
    # head: 1 CPU + autoscaler sidecar 500m; the Redis clean-up floor (200m) is below 1 CPU
    assert w.podsets[0].per_pod == {"cpu": 1500, "memory": 512 * 2**20 + 256 * 2**20}
    state, by_name = load(obj("ray.io/v1", "RayCluster", ray_cluster(enableInTreeAutoscaling=True)))
    assert not by_name and "only use autoscaling when workload slicing is enabled" in messages(state)
    assert state.warnings[0].position.line == 10


def test_rayjob_submitter_modes() -> None:
    base = {"shutdownAfterJobFinishes": True, "rayClusterSpec": ray_cluster()}
    [w] = load(obj("ray.io/v1", "RayJob", base))[1].values()
    assert shape(w) == {"head": 1, "gpu-group": 4, "submitter": 1}
    assert w.podsets[-1].per_pod == {"cpu": 500, "memory": 200 * 2**20}
    [w] = load(obj("ray.io/v1", "RayJob", {**base, "submissionMode": "SidecarMode"}))[1].values()
    assert shape(w) == {"head": 1, "gpu-group": 4} and w.podsets[0].per_pod["cpu"] == 1500
    [w] = load(obj("ray.io/v1", "RayJob", {**base, "submissionMode": "HTTPMode"}))[1].values()
    assert shape(w) == {"head": 1, "gpu-group": 4}
    state, by_name = load(obj("ray.io/v1", "RayJob", {"clusterSelector": {"ray.io/cluster": "shared"}}))
    assert not by_name and not state.warnings  # runs on an existing cluster: not Kueue's
    state, by_name = load(obj("ray.io/v1", "RayJob", {**base, "shutdownAfterJobFinishes": False}))
    assert not by_name and "should delete the cluster after finishing" in messages(state)


def test_leaderworkerset_one_workload_per_group() -> None:
    lws = obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {"replicas": 3, "leaderWorkerTemplate": {
        "size": 4, "leaderTemplate": pod("2"), "workerTemplate": pod("1")}}, uid="u1")
    _, by_name = load(lws)
    assert sorted(by_name) == sorted(workload_name("LeaderWorkerSet", "leaderworkerset.x-k8s.io", f"j-{i}", "u1")
                                     for i in range(3))
    assert {tuple(shape(w).items()) for w in by_name.values()} == {(("leader", 1), ("worker", 3))}
    no_leader = obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
                    {"leaderWorkerTemplate": {"size": 2, "workerTemplate": pod()}})
    [w] = load(no_leader)[1].values()
    assert shape(w) == {"main": 2}


def runtime(kind: str = "ClusterTrainingRuntime", mpi: bool = False, **meta: object) -> dict:
    ml = {"numNodes": 1, **({"mpi": {"runLauncherAsNode": True}} if mpi else {"torch": {}})}
    jobs = [{"name": "dataset-initializer", "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
                "spec": {"template": pod("1")}}},
            {"name": "node", "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}}}]
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": {"name": "rt", **meta},
            "spec": {"mlPolicy": ml, "template": {"spec": {"replicatedJobs": jobs}}}}


def trainjob(ref: dict) -> dict:
    return obj("trainer.kubeflow.org/v1alpha1", "TrainJob", {"runtimeRef": ref, "trainer": {
        "numNodes": 3, "resourcesPerNode": {"limits": {"cpu": "4"}}}})


def test_trainjob_from_its_runtime() -> None:
    [w] = load(runtime(), trainjob({"name": "rt"}))[1].values()
    assert shape(w) == {"dataset-initializer": 1, "node": 3}
    assert w.podsets[1].per_pod == {"cpu": 4000}  # resourcesPerNode on the `node` container
    [w] = load(runtime("TrainingRuntime", mpi=True, namespace="ns"),
               trainjob({"name": "rt", "kind": "TrainingRuntime"}))[1].values()
    assert shape(w)["node"] == 2  # MPI with the launcher as a node
    state, by_name = load(trainjob({"name": "absent"}))
    assert not by_name and "runtime 'absent' not found" in messages(state)
    assert state.warnings[0].position.line == 10


def test_pods_and_groups() -> None:
    single = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-", "namespace": "ns", "labels": Q},
              "spec": pod()["spec"]}
    def member(i: int, cpu: str = "1", **annotations: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"g{i}", "namespace": "ns", "labels": {**Q, "kueue.x-k8s.io/pod-group-name": "grp"},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3", **annotations}}, "spec": pod(cpu)["spec"]}

    # 2 of 3 pods: Kueue waits for the whole group and builds no Workload yet
    state, by_name = load(single, member(0), member(1))
    assert "grp" not in by_name and "fewer runnable pods than expected" in messages(state)
    [solo] = [w for n, w in by_name.items() if n.startswith("pod-p-")]
    assert shape(solo) == {"main": 1}
    # complete, two roles: one pod set per role (named by Kueue's role hash), sorted by name
    _, by_name = load(member(0), member(1), member(2, cpu="2"))
    assert sorted(shape(by_name["grp"]).values()) == [1, 2]
    assert list(shape(by_name["grp"])) == sorted(shape(by_name["grp"]))
    # fast admission: the first pod's role for the whole group at once
    fast = {"kueue.x-k8s.io/pod-group-fast-admission": "true"}
    _, by_name = load(member(0, **fast), member(1, **fast))
    assert list(shape(by_name["grp"]).values()) == [3]
    # no total count: Kueue refuses to build the group's Workload
    bare = member(0)
    del bare["metadata"]["annotations"]
    state, by_name = load(bare)
    assert not by_name and "pod-group-total-count" in messages(state)


def test_role_hash_is_kueues() -> None:
    # The role hash is taken over the spec with quantities written as Kubernetes'
    # resource.Quantity prints them (its canonical form, as in `kubectl get -o yaml`)
    from compiler.evaluator.jobs.base import JobObject
    from compiler.evaluator.jobs.pod import role_hash
    from compiler.core.quantity import canonical_quantity
    assert [canonical_quantity(q) for q in ("1", "1000m", "1.5", "2048Mi", "1000", "100M", "0.5Gi", "1e3")] == \
        ["1", "1", "1500m", "2Gi", "1k", "100M", "512Mi", "1e3"]
    # one container requesting cpu "1": the role hash Kueue gives it (kp_testing/kueue_gave.py,
    # computed again by kueue-oracle where Go is); limits count as requests
    for spec in (pod()["spec"], {"containers": [{"name": "x", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]}):
        member = JobObject.of({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
        assert role_hash(member) == ONE_CPU_ROLE_HASH
    given = JobObject.of({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "annotations": {"kueue.x-k8s.io/role-hash": "mine"}}, "spec": pod()["spec"]})
    assert role_hash(given) == "mine"
    other = JobObject.of({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod("2")["spec"]})
    assert role_hash(other) != ONE_CPU_ROLE_HASH


def test_children_of_managed_jobs_and_default_local_queue() -> None:
    owner = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "x",
             "controller": True}
    child = obj("batch/v1", "Job", {"template": pod()}, name="js-child", ownerReferences=[owner])
    unlabelled = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "free", "namespace": "ns"},
                  "spec": {"template": pod()}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "default", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}
    _, by_name = load(child, unlabelled)
    assert not by_name  # the child is the JobSet's; the free Job has no queue
    _, by_name = load(unlabelled, lq)
    [w] = by_name.values()
    assert w.queue_name == "default"  # Kueue's webhook defaults to the namespace's `default` queue
    # the Kubeflow training-operator jobs' and the pod webhook do not
    pytorch = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt", "namespace": "ns"},
               "spec": {"pytorchReplicaSpecs": {"Master": {"template": pod()}}}}
    bare_pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": pod()["spec"]}
    _, by_name = load(pytorch, bare_pod, lq)
    assert not by_name


def test_adapters_are_pure_and_keyed_by_group_and_kind() -> None:
    assert adapter_for("kubeflow.org", "PyTorchJob") is not None
    assert adapter_for("example.org", "PyTorchJob") is None
    job = JobObject.of(obj("batch/v1", "Job", {"parallelism": 2, "template": pod()}))
    [spec] = adapter_for("batch", "Job").build(job, JobContext())
    assert (spec.name, [(p.name, p.count) for p in spec.podsets]) == (workload_name("Job", "batch", "j", ""),
                                                                       [("main", 2)])


def test_unknown_kind_with_queue_label_is_reported_with_file_and_line(tmp_path) -> None:
    from kp_testing import run_cli
    path = tmp_path / "jobs.yaml"
    path.write_text("apiVersion: example.org/v1\nkind: FancyJob\nmetadata:\n  name: f\n  labels:\n"
                    "    kueue.x-k8s.io/queue-name: lq\n---\napiVersion: apps/v1\nkind: Deployment\n"
                    "metadata:\n  generateName: web-\n  labels:\n    kueue.x-k8s.io/queue-name: lq\n")
    proc = run_cli("evaluate", str(path), "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert f"{path}:1:1: warning[KP903]: FancyJob (example.org/v1) f carries the label " \
           "kueue.x-k8s.io/queue-name=lq but the admission engine has no adapter for kind FancyJob" in proc.stderr
    assert f"{path}:8:1: warning[KP903]: Deployment (apps/v1) web- carries the label kueue.x-k8s.io/queue-name=lq " \
           "but the admission engine has no adapter for kind Deployment (Kueue v0.19 integrates it" in proc.stderr


def test_configuration_frameworks_decide_which_kinds_kueue_manages() -> None:
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
              "integrations": {"frameworks": ["batch/job"]}}
    job = obj("batch/v1", "Job", {"template": pod()}, name="a")
    ray = obj("ray.io/v1", "RayCluster", ray_cluster(), name="b")
    state, by_name = load(config, job, ray)
    assert [w.kind for w in by_name.values()] == ["Job"]
    assert "does not enable the integration ray.io/raycluster" in messages(state)
    assert state.warnings[-1].position.line == 30


def test_pods_of_a_leaderworkerset_group_are_not_counted_twice() -> None:
    lws = obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
              {"leaderWorkerTemplate": {"size": 2, "workerTemplate": pod()}}, uid="u")
    group = workload_name("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "j-0", "u")
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"j-0-{i}", "namespace": "ns", "labels": {**Q, "kueue.x-k8s.io/pod-group-name": group},
        "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}}, "spec": pod()["spec"]} for i in range(2)]
    state, by_name = load(lws, *pods)
    assert list(by_name) == [group] and not state.warnings


def test_templates_carry_placement_and_elastic_jobs_name_their_generation() -> None:
    template = pod(nodeSelector={"pool": "a"}, tolerations=[{"key": "gpu", "operator": "Exists"}])
    elastic = obj("batch/v1", "Job", {"template": template}, annotations={"kueue.x-k8s.io/elastic-job": "true"},
                  generation=3, uid="u")
    [(name, w)] = load(elastic)[1].items()
    assert name == workload_name("Job", "batch", "j", "u", "3")
    assert w.podsets[0].node_selector == {"pool": "a"} and w.podsets[0].tolerations[0]["key"] == "gpu"


def test_a_job_with_a_prebuilt_workload_is_that_workload() -> None:
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "pre", "namespace": "ns"},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": pod()}]}}
    job = obj("batch/v1", "Job", {"template": pod()}, annotations={"kueue.x-k8s.io/prebuilt-workload-name": "pre"})
    state, by_name = load(workload, job)
    assert list(by_name) == ["pre"] and not state.warnings
    state, by_name = load(job)
    assert not by_name and "prebuilt Workload ns/pre" in messages(state)


def test_an_export_with_the_jobs_workload_keeps_kueues_workload_and_its_admission() -> None:
    job = obj("batch/v1", "Job", {"parallelism": 2, "template": pod()}, uid="u")
    name = workload_name("Job", "batch", "j", "u")
    admitted = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": pod()}]},
                "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                           "admission": {"clusterQueue": "cq", "podSetAssignments": [
                               {"name": "main", "count": 2, "flavors": {"cpu": "f"}}]}}}
    state, by_name = load(job, admitted)
    assert list(by_name) == [name] and by_name[name].kind == "Workload" and by_name[name].admission
    assert not state.warnings
