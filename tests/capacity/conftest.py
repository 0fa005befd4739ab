"""The lab policy (tests/capacity/lab) and seeded traces for the capacity tests."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

LAB = Path(__file__).parent / "lab"
FIXTURES = Path(__file__).parent / "fixtures"


def lab_trace(path: Path, seed: int = 7, jobs: int = 60) -> Path:
    """Whole-GPU jobs of both teams, arriving every 1-15 minutes, running 30 minutes to 2 hours."""
    rng = random.Random(seed)
    rows = ["team,name,at,duration,replicas,gpus"]
    at = 0
    for index in range(jobs):
        at += rng.randint(60, 900)
        team = rng.choice(["team-a", "team-b"])
        rows.append(f"{team},j{index},{at},{rng.randint(1800, 7200)},1,{rng.choice([1, 2, 4])}")
    path.write_text("\n".join(rows) + "\n")
    return path


def with_nodes(folder: Path, nodes: dict[str, int]) -> None:
    """Set the nodes of the lab's pools by editing the cluster file's text (independent of capacity's editor)."""
    cluster = folder / "cluster.yaml"
    text = cluster.read_text()
    for pool, count in nodes.items():
        text = re.sub(rf"(- name: {pool}\n(?:\s+\w+: .*\n)*?\s+nodes: )\d+", rf"\g<1>{count}", text)
    cluster.write_text(text)


def one_team_policy(folder: Path, pools: list[str], guaranteed: int) -> Path:
    """A one-file policy: cluster `s` with the pools given (flow mappings of V100 pools), one cohort
    and team `a` in it, guaranteed that many GPUs."""
    folder.mkdir()
    (folder / "all.yaml").write_text(
        "apiVersion: kueue-policy/v1alpha1\nkind: Cluster\nmetadata: {name: s}\nspec:\n  pools:\n"
        + "".join(f"    - {pool}\n" for pool in pools)
        + "  cohorts: [{name: all}]\n---\napiVersion: kueue-policy/v1alpha1\nkind: Team\nmetadata: {name: a}\n"
        f"spec: {{cohort: all, namespaces: [a], gpus: {{guaranteed: {guaranteed}}}, models: [V100]}}\n")
    return folder


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    folder = tmp_path / "lab"
    shutil.copytree(LAB, folder)
    return folder
