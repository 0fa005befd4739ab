"""The fork-and-pickle runner (compiler/runtime/parallel.py): a call computed in a forked child
gives the outcome it gives here. Every test that says "in the child" checks that the call did
run in another process (its pid), so a runner that silently stopped forking fails them."""

from __future__ import annotations

import os

import pytest

from compiler.runtime import parallel
from compiler.core.errors import Diagnostic, EnvironmentFailure, InputError, SourcePosition


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(parallel, "available_cpus", lambda: 2)
    for variable in parallel.ONE_PROCESS_ENV:
        monkeypatch.delenv(variable, raising=False)
    assert parallel.side_by_side()


def only_in_a_child(call):
    """`call`, refusing to run in this process: its outcome proves where it ran."""
    here = os.getpid()

    def elsewhere():
        assert os.getpid() != here, "ran in the parent"
        return call()
    return elsewhere


def test_the_background_call_runs_in_another_process(two_cpus):
    here = os.getpid()
    background, foreground = parallel.beside(os.getpid, os.getpid)
    assert background.get() != here and foreground.get() == here


@pytest.mark.parametrize("variable", parallel.ONE_PROCESS_ENV)
def test_one_worker_runs_both_here(two_cpus, monkeypatch, variable):
    monkeypatch.setenv(variable, "1")
    here = os.getpid()
    background, foreground = parallel.beside(os.getpid, os.getpid)
    assert (background.get(), foreground.get()) == (here, here)


def test_one_cpu_runs_both_here(two_cpus, monkeypatch):
    monkeypatch.setattr(parallel, "available_cpus", lambda: 1)
    here = os.getpid()
    background, _ = parallel.beside(os.getpid, lambda: None)
    assert background.get() == here


def test_a_large_answer_comes_back_whole(two_cpus):
    # Bigger than a pipe's buffer: the child waits for the reader, which reads once its own
    # call is done.
    answer = {f"job-{i}": {"waited": i, "flavor": "pool-000"} for i in range(200_000)}
    background, foreground = parallel.beside(only_in_a_child(lambda: answer), lambda: len(answer))
    assert background.get() == answer and foreground.get() == 200_000


def test_a_policy_error_of_the_child_is_raised_with_its_diagnostics(two_cpus):
    diagnostic = Diagnostic("KP700", "jobs[0]: unknown team 'c'", SourcePosition("jobs.yaml", 2, 5))

    def bad_trace():
        raise InputError([diagnostic])

    def no_git():
        raise EnvironmentFailure("git is not installed", "KP801")

    # Were the call run here, the assertion inside would fail first: an AssertionError, not these.
    background, _ = parallel.beside(only_in_a_child(bad_trace), lambda: None)
    with pytest.raises(InputError) as raised:
        background.get()
    assert raised.value.diagnostics == [diagnostic] and str(raised.value) == str(InputError([diagnostic]))
    background, _ = parallel.beside(only_in_a_child(no_git), lambda: None)
    with pytest.raises(EnvironmentFailure) as failed:
        background.get()
    assert (failed.value.message, failed.value.code) == ("git is not installed", "KP801")


def test_a_bug_in_the_child_is_met_again_here(two_cpus):
    """Anything but a kueue-policy error is not carried over: the call runs again in this
    process (here it succeeds, proving it ran here), so a real bug shows this traceback."""
    here = os.getpid()
    where = []

    def fails_elsewhere():
        where.append(os.getpid())  # (the child's append stays in the child)
        if os.getpid() != here:
            raise ValueError("a bug")
        return "ran here"

    background, _ = parallel.beside(fails_elsewhere, lambda: None)
    assert background.get() == "ran here" and where == [here]


def test_an_answer_that_does_not_pickle_is_computed_here(two_cpus):
    here = os.getpid()
    background, _ = parallel.beside(lambda: (lambda: os.getpid()), lambda: None)
    assert background.get()() == here


def test_the_foreground_error_is_kept_and_the_background_answer_too(two_cpus):
    def broken():
        raise KeyError("x")

    background, foreground = parallel.beside(only_in_a_child(lambda: 42), broken)
    assert background.get() == 42
    with pytest.raises(KeyError):
        foreground.get()


def test_a_background_job_forks_now_and_answers_later(two_cpus):
    job = parallel.Background(only_in_a_child(os.getpid), fork=True)
    try:
        assert job.forked
        assert job.outcome().get() != os.getpid()
    finally:
        job.close()


def test_a_background_job_not_asked_for_is_killed_and_reaped(two_cpus):
    job = parallel.Background(lambda: os.getpid(), fork=True)
    child = job._pid
    job.close()
    assert not job.forked
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(child, os.WNOHANG)


def test_a_background_job_without_fork_runs_here_when_asked(two_cpus):
    job = parallel.Background(os.getpid, fork=False)
    assert not job.forked and job.outcome().get() == os.getpid()
    job.close()
