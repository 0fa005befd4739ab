"""Random and mutated documents into the two readers of user input: the policy loader+validator
and `evaluate`'s manifest reader. Whatever the input, the answer is diagnostics (PolicyError,
InputError) or a result: never a traceback, never a hang.

Seeds are the example policy and the engine's test scenarios; hypothesis mutates their data
(tricky scalars, absurd quantities, wrong types, deleted keys) and their text (YAML punctuation
inserted or deleted). Examples are bounded and derandomized, so every run tries the same inputs;
each input runs under an alarm, so a hang fails with that input instead of stalling the suite.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.core import yamlio
from compiler.core.errors import DiagnosticSink, InputError, PolicyError
from compiler.evaluator.loader import load_documents
from compiler.evaluator.reader import parse_text
from compiler.language.load import PolicySourceFile, load_sources
from compiler.stages.resolve import resolve
from compiler.language.validate import validate_documents
from kp_testing import REPO_ROOT, node_paths

PER_INPUT_SECONDS = 20  # generous on a loaded 2-core machine; a hang is minutes
SETTINGS = settings(max_examples=120, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

POLICY_FILES = {p.relative_to(REPO_ROOT).as_posix(): p.read_text() for p in sorted((REPO_ROOT / "policies").rglob("*.yaml"))}
SCENARIOS = [yamlio.load(p.read_text())["objects"] for p in sorted((REPO_ROOT / "tests/evaluator/scenarios").glob("*.yaml"))]

TRICKY = ["1e99999999", "-1e-99999999", "9" * 200, "1e64", "1e65", "12Gx", "1Ei", "-1", ".5", "1e1.5", "0.000000001n",
          "no", "on", "null", "~", "0123", "0x1f", "1e3", "", " ", "a" * 300, "Ω", "-", "*", "&a", "!!int x", "{", "["]
VALUES = st.one_of(st.sampled_from(TRICKY), st.integers(-2**80, 2**80), st.floats(), st.booleans(), st.none(),
                   st.text(max_size=12), st.just([]), st.just({}), st.just({"a": [1, {"b": None}]}))
# Quantities in the grammar with any exponent, and the absurd ones above.
QUANTITIES = st.one_of(st.sampled_from(TRICKY[:11]),
                       st.builds("{}{}e{}".format, st.sampled_from(["", "-", "+", "."]), st.integers(0, 10**6),
                                 st.integers(-10**9, 10**9)),
                       st.builds("{}{}".format, st.integers(0, 10**30), st.sampled_from(["", "m", "Ki", "Ei", "n", "E"])))
PUNCTUATION = list(":-[]{}#&*!|>'\"\t\n ,?%@`\\") + ["\n  ", ": ", "- ", "---\n", "\x00", "\ufeff"]


class Hang(Exception):
    pass


@contextmanager
def time_budget(seconds: int = PER_INPUT_SECONDS):
    def hung(*_):
        raise Hang(f"no answer within {seconds}s")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


QUANTITY_KEYS = {"cpu", "memory", "gpuMemory", "nominalQuota", "borrowingLimit", "lendingLimit", "weight", "count",
                 "nvidia.com/gpu", "requests", "limits"}


def _mutate_data(draw, data):
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in node_paths(data) if p]
        quantities = [p for p in paths if p[-1] in QUANTITY_KEYS]
        on_quantity = bool(quantities) and draw(st.booleans())
        if on_quantity:
            paths = quantities  # half the mutations hit a quantity: the grammar is where hangs hide
        if not paths:
            return draw(VALUES)
        path = draw(st.sampled_from(paths))
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(QUANTITIES if on_quantity else VALUES)
    return data


def _mutate_text(draw, text: str) -> str:
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(PUNCTUATION)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 8)):]
    return text


@st.composite
def policies(draw) -> dict[str, bytes]:
    files = dict(POLICY_FILES)
    name = draw(st.sampled_from(sorted(files)))
    documents = yamlio.load_all(files[name])
    documents = [_mutate_data(draw, d) if draw(st.booleans()) else d for d in documents]
    text = "---\n".join(yamlio.dump(d) for d in documents)
    files[name] = _mutate_text(draw, text) if draw(st.booleans()) else text
    return {path: text.encode("utf-8", "surrogatepass") for path, text in files.items()}


@st.composite
def manifests(draw) -> str:
    objects = _mutate_data(draw, [dict(o) for o in yamlio.load(yamlio.dump(draw(st.sampled_from(SCENARIOS))))])
    if draw(st.booleans()):
        text = yamlio.dump({"apiVersion": "v1", "kind": "List", "items": objects})
    else:
        text = "---\n".join(yamlio.dump(o) for o in objects)
    return _mutate_text(draw, text) if draw(st.booleans()) else text


@SETTINGS
@given(policies())
def test_the_policy_loader_and_validator_answer_with_diagnostics(files):
    sources = [PolicySourceFile(path, content) for path, content in sorted(files.items())]
    sink = DiagnosticSink()
    with time_budget():
        try:
            policy = validate_documents(load_sources(sources, sink), sink)
            resolve(policy, sink)
            sink.raise_if_errors()
        except PolicyError as error:
            assert error.diagnostics


@SETTINGS
@given(manifests())
def test_the_evaluate_reader_answers_with_diagnostics(text):
    with time_budget():
        try:
            load_documents(parse_text(text, "cluster.yaml"))
        except InputError as error:
            assert error.diagnostics


def test_the_seeds_themselves_are_accepted():
    sink = DiagnosticSink()
    sources = [PolicySourceFile(path, text.encode()) for path, text in POLICY_FILES.items()]
    resolve(validate_documents(load_sources(sources, sink), sink), sink)
    assert not sink.errors
    for objects in SCENARIOS:
        load_documents(parse_text(yamlio.dump({"apiVersion": "v1", "kind": "List", "items": objects}), "c.yaml"))


def test_an_absurd_quantity_in_a_policy_is_a_diagnostic_at_its_line(tmp_path: Path):
    team = POLICY_FILES["policies/teams/beta.yaml"].replace('cpu: "8"', 'cpu: "1e99999999"')
    files = {**POLICY_FILES, "policies/teams/beta.yaml": team}
    sources = [PolicySourceFile(path, text.encode()) for path, text in files.items()]
    sink = DiagnosticSink()
    with time_budget():
        validate_documents(load_sources(sources, sink), sink)
    [error] = sink.errors
    line = team.splitlines().index(next(ln for ln in team.splitlines() if "1e99999999" in ln)) + 1
    assert error.code.startswith("KP2") and error.position.line == line, error
    assert "at most 64 digits" in error.message
