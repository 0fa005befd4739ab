"""Two computations side by side (compiler/runtime/parallel.py): the outcomes of one after the other."""

from __future__ import annotations

import os

import pytest

from compiler.runtime import parallel as forked
from compiler.core.errors import Diagnostic, EnvironmentFailure, InputError, SourcePosition


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    monkeypatch.delenv(forked.WORKERS_ENV, raising=False)


def test_the_background_call_runs_in_another_process(two_cpus):
    here = os.getpid()
    background, foreground = forked.beside(os.getpid, os.getpid)
    assert background.get() != here and foreground.get() == here


def test_one_worker_runs_both_here(two_cpus, monkeypatch):
    monkeypatch.setenv(forked.WORKERS_ENV, "1")
    here = os.getpid()
    background, foreground = forked.beside(os.getpid, os.getpid)
    assert (background.get(), foreground.get()) == (here, here)


def test_a_large_answer_comes_back_whole(two_cpus):
    # Bigger than a pipe's buffer: the child waits for the reader, which reads once its own
    # call is done.
    answer = {f"job-{i}": {"waited": i, "flavor": "pool-000"} for i in range(200_000)}
    background, foreground = forked.beside(lambda: answer, lambda: len(answer))
    assert background.get() == answer and foreground.get() == 200_000


def test_a_policy_error_of_the_child_is_raised_with_its_diagnostics(two_cpus):
    diagnostic = Diagnostic("KP700", "jobs[0]: unknown team 'c'", SourcePosition("jobs.yaml", 2, 5))

    def bad_trace():
        raise InputError([diagnostic])

    def no_git():
        raise EnvironmentFailure("git is not installed", "KP801")

    background, _ = forked.beside(bad_trace, lambda: None)
    with pytest.raises(InputError) as raised:
        background.get()
    assert raised.value.diagnostics == [diagnostic] and str(raised.value) == str(InputError([diagnostic]))
    background, _ = forked.beside(no_git, lambda: None)
    with pytest.raises(EnvironmentFailure) as failed:
        background.get()
    assert (failed.value.message, failed.value.code) == ("git is not installed", "KP801")


def test_a_bug_in_the_child_is_met_again_here(two_cpus):
    """Anything but a kueue-policy error is not carried over: the call runs again in this
    process (here it succeeds, proving it ran here), so a real bug shows this traceback."""
    here = os.getpid()

    def fails_elsewhere():
        if os.getpid() != here:
            raise ValueError("a bug")
        return "ran here"

    background, _ = forked.beside(fails_elsewhere, lambda: None)
    assert background.get() == "ran here"


def test_an_answer_that_does_not_pickle_is_computed_here(two_cpus):
    here = os.getpid()
    background, _ = forked.beside(lambda: (lambda: os.getpid()), lambda: None)
    assert background.get()() == here


def test_the_foreground_error_is_kept_and_the_background_answer_too(two_cpus):
    def broken():
        raise KeyError("x")

    background, foreground = forked.beside(lambda: 42, broken)
    assert background.get() == 42
    with pytest.raises(KeyError):
        foreground.get()
