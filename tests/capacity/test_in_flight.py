"""How far the simulations under way have got (compiler/capacity/in_flight.py): told as the
simulation goes, in this process and from forked workers, and never part of a decision."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conftest import lab_trace

from compiler.capacity import problem as problem_module, targets as targets_module
from compiler.capacity.in_flight import IDLE, Reporting, SharedSlots, throttled
from compiler.capacity.search import Search
from compiler.capacity.workers import InProcess, LocalProcesses


def _problem(lab: Path, tmp_path: Path, jobs: int = 60):
    requirements = targets_module.from_flags(("p95-wait<=30m",), (), ())
    trace = lab_trace(tmp_path / "trace.csv", jobs=jobs)
    problem, space, _ = problem_module.prepare(lab, trace, None, requirements, (), "demand", False)
    return problem, space


def _comparable(evaluations) -> list[dict]:
    return [dataclasses.asdict(evaluation) for evaluation in evaluations]


def test_a_simulation_in_this_process_tells_its_moments_and_decides_the_same(lab: Path, tmp_path: Path,
                                                                             monkeypatch) -> None:
    import compiler.capacity.workers as workers

    monkeypatch.setattr(workers, "throttled", lambda running: throttled(running, interval=0.0))  # every moment
    problem, space = _problem(lab, tmp_path)
    told: list[list[int]] = []
    silent = Search(space, InProcess(problem), lambda evaluation, best: None).run()
    heard = Search(space, InProcess(problem), lambda evaluation, best: None, told.append).run()
    assert told, "no moment was told"
    assert all(len(reached) == 1 for reached in told)
    assert max(reached[0] for reached in told) > 0
    assert _comparable(heard.evaluations) == _comparable(silent.evaluations)
    assert heard.best.answer.candidate == silent.best.answer.candidate


def test_the_watch_passes_moments_on_and_stops_when_the_inner_watch_does() -> None:
    class Inner:
        def __init__(self) -> None:
            self.started, self.moments = None, []

        def start(self, runs) -> None:
            self.started = runs

        def after(self, now: int, preempted) -> bool:
            self.moments.append(now)
            return now >= 30

    inner, reached = Inner(), []
    watch = Reporting(inner, reached.append)
    watch.start(["run"])
    assert [watch.after(now, []) for now in (10, 20, 30)] == [False, False, True]
    assert inner.started == ["run"] and inner.moments == [10, 20, 30] and reached == [10, 20, 30]
    alone = Reporting(None, reached.append)
    alone.start([])
    assert alone.after(40, []) is False and reached[-1] == 40


def test_throttled_tells_at_most_once_an_interval() -> None:
    told: list[list[int]] = []
    reach = throttled(told.append, interval=3600.0)
    for now in range(100):
        reach(now)
    assert told == []
    reach = throttled(told.append, interval=0.0)
    for now in range(3):
        reach(now)
    assert told == [[0], [1], [2]]


def test_shared_slots_hold_what_workers_reach() -> None:
    slots = SharedSlots(3)
    assert [slots.take() for _ in range(3)] == [0, 1, 2]
    assert slots.reached() == []
    slots.values[1] = 7200
    slots.values[2] = 0
    assert slots.reached() == [7200, 0]
    slots.values[1] = IDLE
    assert slots.reached() == [0]


def test_forked_workers_report_while_the_search_waits(lab: Path, tmp_path: Path, monkeypatch) -> None:
    import compiler.capacity.workers as workers

    monkeypatch.setattr(workers, "POLL_SECONDS", 0.001)
    problem, space = _problem(lab, tmp_path, jobs=400)
    told: list[list[int]] = []
    executor = LocalProcesses(problem, 2)
    try:
        heard = Search(space, executor, lambda evaluation, best: None, told.append).run()
    finally:
        executor.close()
    silent = Search(space, InProcess(problem), lambda evaluation, best: None).run()
    assert any(reached and max(reached) > 0 for reached in told), told[:5]
    assert all(len(reached) <= 2 for reached in told)
    assert _comparable(heard.evaluations) == _comparable(silent.evaluations)
