"""Guarantees spread over identical pools (compiler/stages/plan.py, _whole_fit), and each team's
flavor order starts with the pool holding its guarantee (_guarantees_first).

Packing identical pools in declaration order filled the first with guarantees, put every team's
burst there too, and left the last pool's GPUs out of everyone's reach."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ruamel.yaml import YAML

from compiler.stages.pipeline import PolicySource, compile_policy
from kp_testing.policies import pools_cluster, team, write_policy

def _team(name: str) -> str:
    return team(name, f"cohort: all\nnamespaces: [{name}]\ngpus: {{guaranteed: 8, burst: 8}}\n")


def _queues(tmp_path: Path, pools: list[str], teams: list[str]) -> dict[str, dict]:
    """team -> its ClusterQueue as emitted."""
    files = {"cluster.yaml": pools_cluster(pools), **{f"teams/{name}.yaml": _team(name) for name in teams}}
    root = write_policy(tmp_path, files)
    result = compile_policy(PolicySource.from_directory(root))
    yaml = YAML(typ="safe")
    return {name: yaml.load(result.files[f"lab/kueue/clusterqueues/{name}.yaml"]) for name in teams}


def _guarantee_pool(queue: dict) -> list[str]:
    return [flavor["name"] for group in queue["spec"]["resourceGroups"] for flavor in group["flavors"]
            for resource in flavor["resources"]
            if resource["name"] == "nvidia.com/gpu" and str(resource["nominalQuota"]) != "0"]


TEAMS = [f"team-{i}" for i in range(8)]


def test_identical_pools_share_the_guarantees_and_each_team_tries_its_own_first(tmp_path: Path) -> None:
    pools = [f"{{name: p{i}, gpu: H100-80GB, nodes: 2, gpusPerNode: 8}}" for i in range(4)]
    queues = _queues(tmp_path, pools, TEAMS)
    held = {name: _guarantee_pool(queue) for name, queue in queues.items()}
    assert all(len(on) == 1 for on in held.values()), held
    # 8 teams of 8 over four pools of 16: two teams each (packed, p0 and p1 would hold all).
    assert Counter(on[0] for on in held.values()) == {"p0": 2, "p1": 2, "p2": 2, "p3": 2}
    for name, queue in queues.items():
        flavors = [flavor["name"] for flavor in queue["spec"]["resourceGroups"][0]["flavors"]]
        assert flavors[0] == held[name][0] and sorted(flavors) == ["p0", "p1", "p2", "p3"], (name, flavors)


def test_spread_in_proportion_to_pool_size(tmp_path: Path) -> None:
    pools = ["{name: big, gpu: H100-80GB, nodes: 4, gpusPerNode: 8}",
             "{name: small, gpu: H100-80GB, nodes: 2, gpusPerNode: 8}"]
    held = Counter(_guarantee_pool(q)[0] for q in _queues(tmp_path, pools, TEAMS[:3]).values())
    assert held == {"big": 2, "small": 1}


def test_pools_that_differ_keep_the_declared_preference(tmp_path: Path) -> None:
    # Different node shape, price or capacity class: a reason to prefer the first; it is packed.
    for index, second in enumerate(["{name: p1, gpu: H100-80GB, nodes: 4, gpusPerNode: 4}",
                                    "{name: p1, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, cost: 3}",
                                    "{name: p1, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, capacity: reserved}"]):
        pools = ["{name: p0, gpu: H100-80GB, nodes: 2, gpusPerNode: 8}", second]
        held = Counter(_guarantee_pool(q)[0] for q in _queues(tmp_path / str(index), pools, TEAMS[:2]).values())
        assert held == {"p0": 2}, second


def test_one_team_more_or_less_moves_few_others(tmp_path: Path) -> None:
    # 40 teams of 8 over four identical pools of 104: each team's own order up to each pool's
    # share. A new team, or one gone, moves only a few others' guarantees (filling the
    # least full pool in team-name order instead moved 17 of them). A pool that reaches its cap
    # one team sooner sends one team on to its next pool: a short chain.
    pools = [f"{{name: p{i}, gpu: H100-80GB, nodes: 13, gpusPerNode: 8}}" for i in range(4)]
    teams = [f"team-{i:02d}" for i in range(40)]

    def held(name: str, members: list[str]) -> dict[str, str]:
        return {t: _guarantee_pool(q)[0] for t, q in _queues(tmp_path / name, pools, members).items()}

    before = held("before", teams)
    counts = Counter(before.values())
    assert max(counts.values()) - min(counts.values()) <= 2, counts
    for name, members in (("added", teams + ["team-05a"]), ("removed", teams[:12] + teams[13:])):
        after = held(name, members)
        moved = [t for t in after if t in before and after[t] != before[t]]
        assert len(moved) <= 4, (name, moved)


def test_pools_written_as_flavors_differ_by_their_taints(tmp_path: Path) -> None:
    # Imported pools carry their ResourceFlavor spec verbatim: its taints tell them apart.
    tainted = ("flavorSpec: {nodeLabels: {pool: p1}, nodeTaints: [{key: reserved, value: 'yes', "
               "effect: NoSchedule}]}")
    pools = ["{name: p0, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, flavorSpec: {nodeLabels: {pool: p0}}}",
             f"{{name: p1, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, {tainted}}}"]
    held = Counter(_guarantee_pool(q)[0] for q in _queues(tmp_path / "tainted", pools, TEAMS[:2]).values())
    assert held == {"p0": 2}
    same = [pools[0], "{name: p1, gpu: H100-80GB, nodes: 2, gpusPerNode: 8, flavorSpec: {nodeLabels: {pool: p1}}}"]
    held = Counter(_guarantee_pool(q)[0] for q in _queues(tmp_path / "same", same, TEAMS[:2]).values())
    assert held == {"p0": 1, "p1": 1}
