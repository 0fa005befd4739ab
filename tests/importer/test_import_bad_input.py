"""Bad input to `import`: file, line and cause, a non-zero exit, no traceback, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kp_testing import run_cli
from kp_testing.policies import snapshot

from roundtrip_helpers import FIXTURES

FLAVOR = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
spec: {nodeLabels: {pool: gpu}}
"""

QUEUE = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: FLAVOR
      resources:
      - {name: nvidia.com/gpu, nominalQuota: "8"}
"""

CASES = {
    "not-yaml": ("kind: ResourceFlavor\nmetadata: {name: [unclosed\n", 3, "not valid YAML"),
    "missing-flavor": (FLAVOR + "---\n" + QUEUE.replace("FLAVOR", "h100"), 6,
                       "ClusterQueue q names ResourceFlavor h100, which the export does not hold"),
    "unknown-kind": (FLAVOR + "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", 6,
                     "unknown kind Widget"),
    "not-an-object": (FLAVOR + "---\n- just\n- a list\n", 6, "not a Kubernetes object"),
    "twice": (FLAVOR + "---\n" + FLAVOR, 6, "ResourceFlavor gpu is defined twice"),
    # The admission engine's readers check each Kueue object as `evaluate` reads it.
    "bad-quantity": (FLAVOR + "---\n" + QUEUE.replace("FLAVOR", "gpu").replace('"8"', "12Gx"), 6,
                     "ClusterQueue q:"),
    "selector-not-a-mapping": (FLAVOR + "---\n" + QUEUE.replace("FLAVOR", "gpu").replace("{}", "[]"), 6,
                               "spec.namespaceSelector must be a mapping"),
    "queue-without-namespace": (FLAVOR + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                                "metadata: {name: l}\nspec: {clusterQueue: q}\n", 6,
                                "LocalQueue l has no metadata.namespace"),
    "bad-config": (FLAVOR + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config}\n"
                   "data:\n  controller_manager_config.yaml: |\n    kind: Deployment\n", 6,
                   "does not hold a Kueue Configuration"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_export_names_file_and_line(case: str, tmp_path: Path) -> None:
    text, line, cause = CASES[case]
    export = tmp_path / "export.yaml"
    export.write_text(text)
    out = tmp_path / "policy"
    result = run_cli("import", str(export), "--out", str(out))
    assert result.returncode == 1, result.stderr
    assert f"{export}:{line}:" in result.stderr and cause in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def test_non_empty_out_is_refused_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "policy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    refused = run_cli("import", str(FIXTURES / "flat-cohort.yaml"), "--out", str(out))
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert snapshot(out) == before
    forced = run_cli("import", str(FIXTURES / "flat-cohort.yaml"), "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert not (out / "notes.txt").exists() and (out / "cluster.yaml").is_file()


def test_a_failed_import_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "policy"
    assert run_cli("import", str(FIXTURES / "flat-cohort.yaml"), "--out", str(out)).returncode == 0
    before = snapshot(out)
    bad = tmp_path / "bad.yaml"
    bad.write_text("{not: [yaml")
    result = run_cli("import", str(bad), "--out", str(out), "--force")
    assert result.returncode == 1 and f"{bad}:2:" in result.stderr
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "policy"]  # no staging folder left


def test_what_the_policy_cannot_emit_is_listed_and_strict_refuses_it(tmp_path: Path) -> None:
    """A LocalQueue pointing to no ClusterQueue has no team to belong to: listed with its line,
    and `--strict` fails without writing."""
    export = tmp_path / "export.yaml"
    export.write_text(FLAVOR + "---\n" + QUEUE.replace("FLAVOR", "gpu") + "---\napiVersion: kueue.x-k8s.io/v1beta2\n"
                      "kind: LocalQueue\nmetadata: {name: lost, namespace: ns}\nspec: {clusterQueue: gone}\n")
    loose = run_cli("import", str(export), "--out", str(tmp_path / "loose"))
    assert loose.returncode == 0, loose.stderr
    assert f"{export}:18:" in loose.stderr and "warning[KP942]: LocalQueue ns/lost" in loose.stderr
    assert "1 not reproduced (KP942)" in loose.stderr
    strict = run_cli("import", str(export), "--out", str(tmp_path / "strict"), "--strict")
    assert strict.returncode == 1 and "error[KP942]" in strict.stderr
    assert not (tmp_path / "strict").exists()


@pytest.mark.parametrize("option", [("--name", "Bad_Name"), ("--kueue-version", "1")])
def test_bad_options_are_usage_errors(option: tuple[str, str], tmp_path: Path) -> None:
    result = run_cli("import", str(FIXTURES / "flat-cohort.yaml"), "--out", str(tmp_path / "p"), *option)
    assert result.returncode == 2 and option[0] in result.stderr
    assert not (tmp_path / "p").exists()
