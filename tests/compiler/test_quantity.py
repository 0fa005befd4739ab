"""The one quantity module: every reader (policy, engine, verify, CEL) gets the same exact value
from the same parser, worded its own way, and absurd input fails at once instead of hanging."""

from __future__ import annotations

import math
import signal
from fractions import Fraction

import pytest

from compiler.cel.engine import CelEvaluationError, evaluate
from compiler.cel.k8s_ext import CelFunctionError, Quantity
from compiler.language.policy import _quantity as policy_quantity
from compiler.core.quantity import (
    MAX_DIGITS, MAX_EXPONENT, QuantityError, format_quantity, format_units, parse_quantity, round_memory, to_units,
)
from compiler.verify.kueue_webhook import parse_quantity as verify_quantity
from kp_testing import run_cli

VALUES = [("16", Fraction(16)), ("500m", Fraction(1, 2)), ("128Gi", Fraction(128 * 2**30)), ("1.5", Fraction(3, 2)),
          ("1e3", Fraction(1000)), ("1k", Fraction(1000)), ("100n", Fraction(1, 10**7)), ("+.5E-2", Fraction(1, 200)),
          ("-3", Fraction(-3)), ("1Ei", Fraction(2**60)), ("12.", Fraction(12))]


@pytest.fixture(autouse=True)
def hang_guard():
    """A parser that takes `1e99999999` literally runs for minutes: fail instead of hanging."""
    def timeout(*_):
        raise TimeoutError("quantity parsing hung")
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("text,value", VALUES)
def test_every_reader_gets_the_same_exact_value(text, value):
    assert parse_quantity(text) == value
    assert verify_quantity(text) == value
    assert Quantity.parse(text).value == value
    assert to_units("cpu", text) == math.ceil(value * 1000)
    if 0 <= value <= 10**15:
        assert policy_quantity(text) == text


def test_readers_keep_their_own_types_and_wording():
    with pytest.raises(QuantityError, match="is not a quantity"):
        parse_quantity(True)
    assert parse_quantity(0.1) == Fraction(1, 10)  # the float YAML read, not its binary expansion
    with pytest.raises(QuantityError, match="must be an integer or a string"):
        verify_quantity(1.5)
    with pytest.raises(QuantityError, match="must match the regular expression"):
        verify_quantity(" 1")  # the apiserver does not trim
    with pytest.raises(CelFunctionError, match="quantity\\(\\) takes a string, got int"):
        Quantity.parse(1)  # type: ignore[arg-type]
    with pytest.raises(CelFunctionError, match="is not a Kubernetes quantity \\(e.g. 40Gi"):
        Quantity.parse(" 1")
    with pytest.raises(ValueError, match="such as 16, 500m or 128Gi"):
        policy_quantity(None)
    with pytest.raises(QuantityError, match="exponent must be a whole number"):
        parse_quantity("1e1.5")


ABSURD = ["1e99999999", "1e-99999999", "1E" + "9" * 40, "9" * (MAX_DIGITS + 1), "0." + "0" * MAX_DIGITS + "1",
          f"1e{MAX_EXPONENT + 1}", "1" * 10**6]


@pytest.mark.parametrize("text", ABSURD, ids=lambda t: t[:20])
def test_absurd_quantities_fail_with_a_reason_in_every_reader(text):
    with pytest.raises(QuantityError, match="at most 64 digits and an exponent between -64 and 64"):
        parse_quantity(text)
    with pytest.raises(QuantityError):
        verify_quantity(text)
    with pytest.raises(QuantityError):
        to_units("memory", text)
    with pytest.raises(CelEvaluationError, match="at most 64 digits"):
        evaluate(f"quantity('{text[:1000]}').sign()")  # CEL bounds an expression's length
    with pytest.raises(ValueError):
        policy_quantity(text)


def test_the_bounds_still_admit_every_real_quantity():
    assert parse_quantity(f"1e{MAX_EXPONENT}") == 10**MAX_EXPONENT
    assert parse_quantity(f"1e-{MAX_EXPONENT}") == Fraction(1, 10**MAX_EXPONENT)
    assert parse_quantity("9" * MAX_DIGITS) == 10**MAX_DIGITS - 1
    assert parse_quantity(10**100) == 10**100  # a YAML int is already a number: nothing to bound
    with pytest.raises(QuantityError):
        parse_quantity(1e300)  # a float is read through its text, so the same bound applies


@pytest.mark.parametrize("resource,amount,text", [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("cpu", -1500, "-1500m"), ("memory", 10 * 2**20, "10Mi"),
    ("memory", -(2**30), "-1Gi"), ("memory", 0, "0"), ("memory", 1536 * 2**20, "1536Mi"),
    ("hugepages-2Mi", 2**21, "2Mi"), ("nvidia.com/gpu", 2**20, "1048576"), ("memory", 1000, "1000")])
def test_one_formatter_for_engine_amounts_and_compiler_values(resource, amount, text):
    assert format_units(resource, amount) == text
    assert to_units(resource, text) == amount


def test_formatting_rounds_up_only_where_output_is_written():
    assert format_quantity(Fraction(1, 3)) == "334m"
    assert format_quantity(Fraction(3, 7) * 128 * 2**30, binary=True) == "58902408630858m"
    assert format_quantity(round_memory(Fraction(3, 7) * 128 * 2**30), binary=True) == "56174Mi"
    assert round_memory(Fraction(2**30)) == 2**30


EVALUATE_INPUT = """\
apiVersion: v1
kind: List
items:
- {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default}}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: cq}
  spec:
    namespaceSelector: {}
    resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: "1e99999999"}]}]}]
- {apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: lq, namespace: ns}, spec: {clusterQueue: cq}}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: Workload
  metadata: {name: w, namespace: ns}
  spec: {queueName: lq, podSets: [{name: main, count: 1, template: {spec: {containers: [
    {name: c, resources: {requests: {cpu: "1e99999999"}}}]}}}]}
"""


def test_evaluate_names_an_absurd_quantity_at_its_document(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(EVALUATE_INPUT)
    result = run_cli("evaluate", str(path), "--format", "json")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert f"{path}:5:1: warning[KP904]: ClusterQueue cq: flavor default resource cpu nominalQuota: '1e99999999': " \
           "a quantity may have at most 64 digits" in result.stderr
    assert f"{path}:12:1: warning[KP904]: Workload ns/w: pod set main container c: resource cpu: '1e99999999'" \
           in result.stderr
