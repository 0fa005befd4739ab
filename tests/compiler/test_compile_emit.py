"""Emit: atomic replacement of a cluster's folder, foreign files kept, stale files removed."""

from __future__ import annotations

from kp_testing.policies import CLUSTER, TEAM_A, snapshot, team, write_policy
from kp_testing import run_cli


def test_failed_compile_leaves_out_exactly_as_it_was(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A})
    out = tmp_path / "out"
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    before = snapshot(out)
    (policies / "a.yaml").write_text(TEAM_A.replace("guaranteed: 8", "guaranteed: 800"))
    result = run_cli("compile", str(policies), "--out", str(out))
    assert result.returncode == 1 and "error[KP401]" in result.stderr
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "no staging folders left behind"


def test_files_the_compiler_did_not_write_are_kept(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A,
                                       "b.yaml": team("b", "namespaces: [b]")})
    out = tmp_path / "out"
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    (out / "lab" / "NOTES.md").write_text("hand-written notes\n")
    (out / "lab" / "kueue" / "extra").mkdir()
    (out / "lab" / "kueue" / "extra" / "quota-alerts.yaml").write_text("kind: PrometheusRule\n")
    (out / "README.md").write_text("mine\n")
    # Removing team b removes its generated files and nothing else.
    (policies / "b.yaml").unlink()
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    assert (out / "lab" / "NOTES.md").read_text() == "hand-written notes\n"
    assert (out / "lab" / "kueue" / "extra" / "quota-alerts.yaml").exists()
    assert (out / "README.md").read_text() == "mine\n"
    assert not (out / "lab" / "kueue" / "clusterqueues" / "b.yaml").exists()
    assert not (out / "lab" / "kueue" / "localqueues" / "b.default.yaml").exists()
    assert (out / "lab" / "kueue" / "clusterqueues" / "a.yaml").exists()


def test_a_foreign_file_where_a_generated_one_goes_is_never_overwritten(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A})
    out = tmp_path / "out"
    target = out / "lab" / "kueue" / "clusterqueues" / "a.yaml"
    target.parent.mkdir(parents=True)
    target.write_text("# my own ClusterQueue\n")
    before = snapshot(out)
    result = run_cli("compile", str(policies), "--out", str(out))
    assert result.returncode == 1
    assert "was not written by kueue-policy" in result.stderr
    assert snapshot(out) == before


def test_a_removed_cluster_loses_its_generated_folder(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A})
    out = tmp_path / "out"
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    renamed = CLUSTER.replace("name: lab", "name: lab2")
    (policies / "cluster.yaml").write_text(renamed)
    (policies / "a.yaml").write_text(TEAM_A.replace("cluster: lab", "cluster: lab2"))
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    assert not (out / "lab").exists()
    assert (out / "lab2" / "kueue" / "clusterqueues" / "a.yaml").exists()


def test_cluster_option_compiles_one_cluster_and_leaves_the_others(tmp_path):
    second = CLUSTER.replace("name: lab", "name: other")
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "other.yaml": second, "a.yaml": TEAM_A,
                                       "z.yaml": team("z", "namespaces: [z]", cluster="other")})
    out = tmp_path / "out"
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    other_before = snapshot(out / "other")
    (policies / "a.yaml").write_text(TEAM_A.replace("guaranteed: 8", "guaranteed: 4"))
    result = run_cli("compile", str(policies), "--out", str(out), "--cluster", "lab")
    assert result.returncode == 0, result.stderr
    assert snapshot(out / "other") == other_before
    assert "nominalQuota: '4'" in (out / "lab" / "kueue" / "clusterqueues" / "a.yaml").read_text()
    bad = run_cli("compile", str(policies), "--out", str(out), "--cluster", "nope")
    assert bad.returncode == 1 and "--cluster nope" in bad.stderr


def test_validate_writes_nothing(tmp_path):
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A})
    result = run_cli("validate", str(policies), cwd=tmp_path)
    assert result.returncode == 0
    assert "valid policy" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policies"]


def test_a_recompile_keeps_unchanged_files_and_rewrites_changed_ones(tmp_path):
    """Unchanged files keep their inode (make, rsync and file watchers see no change);
    a changed file is a new file with the new bytes."""
    policies = write_policy(tmp_path, {"cluster.yaml": CLUSTER, "a.yaml": TEAM_A,
                                       "b.yaml": team("b", "namespaces: [b]")})
    out = tmp_path / "out"
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    queues = out / "lab" / "kueue" / "clusterqueues"
    before = {p.name: p.stat().st_ino for p in queues.iterdir()}
    (policies / "a.yaml").write_text(TEAM_A.replace("guaranteed: 8", "guaranteed: 4"))
    assert run_cli("compile", str(policies), "--out", str(out)).returncode == 0
    assert (queues / "b.yaml").stat().st_ino == before["b.yaml"]
    assert (queues / "b.yaml").stat().st_nlink == 1, "the replaced folder is gone, one link remains"
    assert (queues / "a.yaml").stat().st_ino != before["a.yaml"]
    assert "nominalQuota: '4'" in (queues / "a.yaml").read_text()
    assert not [p for p in (out / "lab").parent.iterdir() if p.name.startswith(".")]
