"""The compiled tree applies to a fresh cluster: every namespace its objects live in is created
first, labelled for the ClusterQueues' selectors, and never pruned by Argo CD or Flux."""

from __future__ import annotations

from ruamel.yaml import YAML

from kp_testing import REPO_ROOT, run_cli
from kp_testing.policies import CLUSTER, team, write_policy

yaml = YAML(typ="safe", pure=True)
TEAMS = {"a.yaml": team("a", "namespaces: [a-train, a-eval]\ngpus: {guaranteed: 8}"),
         "b.yaml": team("b", "namespaces: [b]\ngpus: {guaranteed: 4}")}


def _compile(tmp_path, cluster: str):
    policies = write_policy(tmp_path, {"cluster.yaml": cluster, **TEAMS})
    result = run_cli("compile", str(policies), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    return tmp_path / "out" / "lab"


def _resources(folder):
    """(kind, name, namespace) of every resource of the kustomization, in its order."""
    kustomization = yaml.load((folder / "kustomization.yaml").read_text())
    found = []
    for path in kustomization["resources"]:
        obj = yaml.load((folder / path).read_text())
        found.append((obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"), obj))
    return found


def _assert_namespaces_first(resources):
    created = {name for kind, name, _, _ in resources if kind == "Namespace"}
    needed = {namespace for _, _, namespace, _ in resources if namespace}
    assert needed and needed <= created, f"namespaces used but not created: {needed - created}"
    last_namespace = max(i for i, r in enumerate(resources) if r[0] == "Namespace")
    first_namespaced = min(i for i, r in enumerate(resources) if r[2])
    assert last_namespace < first_namespaced


def test_argocd_tree_creates_every_namespace_first_and_never_prunes_one(tmp_path):
    folder = _compile(tmp_path, CLUSTER + "  gitops: argocd\n")
    resources = _resources(folder)
    _assert_namespaces_first(resources)
    namespaces = {name: obj for kind, name, _, obj in resources if kind == "Namespace"}
    assert sorted(namespaces) == ["a-eval", "a-train", "b"]
    meta = namespaces["a-train"]["metadata"]
    assert meta["labels"]["kueue-policy.io/team"] == "a"
    assert meta["annotations"] == {"argocd.argoproj.io/sync-wave": "-1",
                                   "argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}
    # Sync waves: the namespaces' wave is below every other object's.
    waves = [int(obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
             for kind, _, _, obj in resources if kind != "Namespace"]
    assert min(waves) > -1
    # The ClusterQueue selects its namespaces by the label the API server puts on each Namespace.
    cq = yaml.load((folder / "kueue" / "clusterqueues" / "a.yaml").read_text())
    expression = cq["spec"]["namespaceSelector"]["matchExpressions"][0]
    assert expression["key"] == "kubernetes.io/metadata.name" and set(expression["values"]) == {"a-train", "a-eval"}


def test_flux_tree_marks_namespaces_unprunable(tmp_path):
    folder = _compile(tmp_path, CLUSTER + "  gitops: flux\n")
    resources = _resources(folder)
    _assert_namespaces_first(resources)
    for kind, _, _, obj in resources:
        if kind == "Namespace":
            assert obj["metadata"]["annotations"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}


def test_external_namespaces_are_not_emitted(tmp_path):
    folder = _compile(tmp_path, CLUSTER + "  namespaces: external\n")
    assert not (folder / "namespaces").exists()
    assert all(kind != "Namespace" for kind, *_ in _resources(folder))


def test_example_tree_creates_the_mig_config_namespace_too():
    resources = _resources(REPO_ROOT / "out" / "gpu-east")
    _assert_namespaces_first(resources)
    assert ("Namespace", "gpu-operator") in {(kind, name) for kind, name, *_ in resources}
