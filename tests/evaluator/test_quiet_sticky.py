"""A queue's trail and its sticky head: a trail is what the next moment repeats (quiet queues),
and a rescan forgets the sticky head, so a trail that began with a sticky head popped out of the
heap's order is not one the next moment repeats."""

from __future__ import annotations

import sys
from pathlib import Path

from kp_testing import REPO_ROOT, run_cli

from compiler.evaluator import load_manifests
from compiler.evaluator.info import WorkloadInfo
from compiler.evaluator.queue_manager import PendingQueue
from evaluator.test_fast_paths import _world


def _ordered_infos(count: int) -> list[WorkloadInfo]:
    infos = [WorkloadInfo(w) for w in load_manifests(_world(True, seed=0, workloads=count, queues=1)).workloads]
    return sorted(infos, key=lambda info: info.queue_order())


def test_a_sticky_head_popped_out_of_the_heaps_order_ends_the_trail() -> None:
    first, second = _ordered_infos(2)
    queue = PendingQueue(False, "q")
    for info in (first, second):
        queue.push(info)
    queue.sticky = second                     # a preempting head, sent back to be tried again
    queue.requeue_inadmissible()              # (a requeue starts a trail)
    assert queue.trail == []
    assert queue.pop() is second              # before `first`, which comes first in the heap
    assert queue.trail is None


def test_a_sticky_head_at_the_top_keeps_the_trail() -> None:
    first, second = _ordered_infos(2)
    queue = PendingQueue(False, "q")
    for info in (first, second):
        queue.push(info)
    queue.sticky = first
    queue.requeue_inadmissible()
    assert queue.pop() is first
    assert queue.trail == [], "the next moment pops the same head first: the trail stands"


def test_an_overloaded_fair_sharing_cluster_simulates(tmp_path: Path) -> None:
    """The busy cluster with fair sharing at 1.2 x its load: a queue whose sticky head was
    popped out of order after a requeue was once made quiet with that trail, and woken, popped
    another head first (`RuntimeError: quiet queue ...: popped ..., not ...`)."""
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    import generate_busy_trace

    policy, trace = tmp_path / "policy", tmp_path / "trace.csv"
    generate_busy_trace.write_policy(policy)
    cluster = policy / "cluster.yaml"
    text = cluster.read_text()
    assert "  preemption:" in text
    cluster.write_text(text.replace("  preemption:", "  fairSharing: {enabled: true}\n  preemption:", 1))
    generate_busy_trace.write_trace(trace, 6000, 5, rate=700)
    done = run_cli("simulate", str(policy), "--trace", str(trace), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
