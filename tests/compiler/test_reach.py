"""KP402: a pool whose GPUs no team can ever use (compiler/stages/reach.py).

Two identical on-demand pools of 16 GPUs; three teams guaranteed 8 each: two fill one pool and
the third has the other to itself (guarantees whole on one flavor, spread over identical pools),
and each team's burst sits on the pool holding its guarantee."""

from __future__ import annotations

from pathlib import Path

from compiler.stages.pipeline import PolicySource, compile_policy
from kp_testing.policies import pools_cluster, team, write_policy

POOLS = ["{name: first, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}",
         "{name: second, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: on-demand}"]
CLUSTER = pools_cluster(POOLS)


def _team(name: str, gpus: str, cohort: bool = True) -> str:
    return team(name, f"namespaces: [{name}]\n" + ("cohort: all\n" if cohort else "") + f"gpus: {gpus}\n")


def _warnings(tmp_path: Path, teams: dict[str, str], cluster: str = CLUSTER) -> list:
    root = write_policy(tmp_path, {"cluster.yaml": cluster, **{f"teams/{n}.yaml": t for n, t in teams.items()}})
    return [w for w in compile_policy(PolicySource.from_directory(root)).warnings if w.code == "KP402"]


def test_a_pool_shut_by_the_teams_bursts_is_named_with_its_idle_gpus(tmp_path: Path) -> None:
    found = _warnings(tmp_path, {n: _team(n, "{guaranteed: 8, burst: 4}") for n in ("a", "b", "c")})
    [warning] = found
    # The pool of the lone team: its 8 guaranteed plus its burst of 4 (the other two put theirs
    # on the full pool, where their guarantees are and which can lend them 8): 12 of 16 usable,
    # 4 idle whatever the demand.
    pool = warning.message.split("'")[1]
    assert warning.message.startswith(f"pool '{pool}': at most 12 of its 16 GPUs can ever be in use, so 4 stay idle")
    assert warning.position.line == {"first": 9, "second": 10}[pool]
    assert str(warning.position.path).endswith("cluster.yaml")


def test_no_warning_when_borrowing_reaches_every_gpu(tmp_path: Path) -> None:
    # Positive controls of the warning above: no burst (no limit), or bursts that add up to the
    # unguaranteed GPUs of the pool.
    assert _warnings(tmp_path / "free", {n: _team(n, "{guaranteed: 8}") for n in ("a", "b", "c")}) == []
    assert _warnings(tmp_path / "enough", {n: _team(n, "{guaranteed: 8, burst: 8}") for n in ("a", "b", "c")}) == []


def test_without_cohorts_nobody_borrows(tmp_path: Path) -> None:
    alone = pools_cluster(POOLS, cohorts=())
    found = _warnings(tmp_path, {"solo": _team("solo", "{guaranteed: 8}", cohort=False)}, alone)
    assert sorted(w.message.split(":")[0] for w in found) == ["pool 'first'", "pool 'second'"]
    assert "pool 'first': at most 8 of its 16 GPUs" in found[0].message
    assert "pool 'second': at most 0 of its 16 GPUs" in found[1].message
    assert "no team that may borrow accepts it" in found[1].message
