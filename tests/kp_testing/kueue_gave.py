"""Values Kueue v0.19.2's own code gives, held here so that the engine's tests check them
without Go (tests/evaluator/test_jobs_docs.py, test_jobs_adapters.py), and computed again by
kueue-oracle --print-workloads (Kueue's job integrations, oracle/printworkloads.go) wherever Go
is (tests/oracle/test_job_kinds.py::test_the_values_the_offline_tests_hold_are_kueues).

Files are in tests/evaluator/fixtures/kueue-docs."""

# Each example's Workload name (GetWorkloadNameFor<Kind>: the kind, the job's name, a hash of its
# UID) and pod set counts (the integration's PodSets()).
NAMES_AND_POD_SETS = {
    "sample-pytorchjob.yaml": ("default/pytorchjob-pytorch-simple-be23d", {"master": 1, "worker": 1}),
    "sample-mpijob.yaml": ("default/mpijob-pi-63358", {"launcher": 1, "worker": 2}),
    "ray-job-sample.yaml": ("default/rayjob-rayjob-sample-fb770", {"head": 1, "small-group": 1, "submitter": 1}),
    "ray-cluster-sample.yaml": ("default/raycluster-raycluster-complete-4fc72", {"head": 1, "small-group": 1}),
}

# utilpod.GenerateRoleHash of a pod with one container requesting cpu "1": the name of the pod
# set of each role of kueue-pod-group.yaml, whose pods are such.
ONE_CPU_ROLE_HASH = "dc85db45"
POD_GROUP_FILE = "kueue-pod-group.yaml"
