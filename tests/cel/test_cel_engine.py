"""The CEL adapter: the real `cel` library plus the Kubernetes quantity and semver extensions."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from compiler.cel import (CelCompileError, CelEvaluationError, CelUnsupportedError, Quantity, Semver,
                          compile_expression, evaluate)
from compiler.core.errors import SourcePosition


@pytest.mark.parametrize("expression, expected", [
    ("quantity('1Gi') == quantity('1024Mi')", True),
    ("quantity('40Gi').compareTo(quantity('40960Mi'))", 0),
    ("quantity('80Gi').compareTo(quantity('40Gi'))", 1),
    ("quantity('500m').compareTo(quantity('1'))", -1),
    ("quantity('1.5').isGreaterThan(quantity('1'))", True),
    ("quantity('1k').isLessThan(quantity('1Ki'))", True),
    ("quantity('1e3') == quantity('1k')", True),
    ("quantity('2Gi').add(quantity('1Gi')).asInteger()", 3 * 2**30),
    ("quantity('2Gi').sub(1).asInteger()", 2 * 2**30 - 1),
    ("quantity('1.5').isInteger()", False),
    ("quantity('-3').sign()", -1),
    ("quantity('250m').asApproximateFloat()", 0.25),
    ("isQuantity('40Gi') && !isQuantity('40 GiB')", True),
    ("semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3", True),
    ("semver('570.158.1').compareTo(semver('570.0.0'))", 1),
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", True),
    ("semver('1.0.0+build.1') == semver('1.0.0+build.1')", True),
    ("semver('v1.2', true) == semver('1.2.0')", True),
    ("isSemver('1.2.3') && !isSemver('1.2') && isSemver('v1.2', true)", True),
    ("'NVIDIA H100 80GB HBM3'.lowerAscii().matches('^.*h100.*$')", True),
    ("'a,b'.split(',') == ['a', 'b']", True),
])
def test_kubernetes_functions(expression, expected):
    assert evaluate(compile_expression(expression)) == expected


def test_quantity_and_semver_values_come_back_as_objects():
    value = evaluate("quantity('40Gi')")
    assert isinstance(value, Quantity) and value.value == Fraction(40 * 2**30)
    version = evaluate("semver('1.2.3-rc.1')")
    assert isinstance(version, Semver) and version.prerelease == ("rc", "1")


def test_variables_may_hold_quantities():
    assert evaluate("q.isGreaterThan(quantity('1Gi'))", {"q": Quantity.parse("2Gi")}) is True


def test_plain_crd_rules():
    # Rules of the kind Kueue's CRDs carry (x-kubernetes-validations), with `self`.
    program = compile_expression("size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0")
    assert evaluate(program, {"self": ["a", "b"]}) is True
    assert evaluate(program, {"self": ["a", "a"]}) is False
    assert evaluate("has(self.cohortName) || !has(self.borrowingLimit)", {"self": {"borrowingLimit": 1}}) is False


@pytest.mark.parametrize("expression, line, column, text", [
    ("device.attributes[", 1, 19, "Syntax error"),
    ("a == \n  b)", 2, 4, "extraneous input ')'"),
    ("device.attributes['gpu.nvidia.com'].type.lowerAsci() == 'gpu'", 1, 42,
     "undeclared reference to function 'lowerAsci'"),
    ("isQuantity('1') && foo(1)", 1, 20, "undeclared reference to function 'foo'"),
])
def test_compile_errors_have_positions(expression, line, column, text):
    with pytest.raises(CelCompileError) as error:
        compile_expression(expression)
    assert (error.value.line, error.value.column) == (line, column)
    assert text in error.value.reason
    assert error.value.exit_code == 1


def test_compile_error_positioned_in_a_file():
    with pytest.raises(CelCompileError) as error:
        compile_expression("device.driver == 'x' &&")
    diagnostic = error.value.diagnostic(SourcePosition("out/dc.yaml", 7, 19), "DeviceClass x")
    assert diagnostic.code == "KP707"
    assert diagnostic.position == SourcePosition("out/dc.yaml", 7, 19 + error.value.column - 1)
    assert diagnostic.render().startswith("out/dc.yaml:7:")


def test_unsupported_constructs_are_reported_not_guessed():
    with pytest.raises(CelUnsupportedError) as error:
        compile_expression("cel.bind(a, device.attributes['gpu.nvidia.com'], a.type == 'gpu')")
    assert error.value.code == "KP713"
    with pytest.raises(CelUnsupportedError):
        compile_expression("device.attributes['gpu.nvidia.com'].?profile.orValue('') == ''")


def test_empty_and_oversized_expressions():
    with pytest.raises(CelCompileError):
        compile_expression("   ")
    with pytest.raises(CelCompileError, match="longer than"):
        compile_expression("true && " * 2000 + "true")


@pytest.mark.parametrize("expression, variables, text", [
    ("x.missing == 1", {"x": {}}, "no such key: missing"),
    ("quantity('forty')", {}, "'forty' is not a Kubernetes quantity"),
    ("'a'.compareTo('b') == 0", {}, "compareTo: no overload for string"),
    ("quantity('1').compareTo(semver('1.0.0')) == 0", {}, "expected a quantity, got semver"),
    ("semver('1.2') == semver('1.2.0')", {}, "not a semantic version"),
    ("1 + 'a'", {}, "No such overload"),
    ("quantity('1.5').asInteger()", {}, "not representable as int64"),
])
def test_evaluation_errors_are_clear(expression, variables, text):
    with pytest.raises(CelEvaluationError) as error:
        evaluate(expression, variables)
    assert text in error.value.reason
    assert error.value.code == "KP708"


def test_evaluation_does_not_write_to_stderr(capfd):
    with pytest.raises(CelEvaluationError):
        evaluate("quantity('bad')")
    assert capfd.readouterr().err == ""


QUANTITY_SUFFIXES = ["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(QUANTITY_SUFFIXES),
       st.integers(0, 10**6), st.sampled_from(QUANTITY_SUFFIXES))
def test_compare_to_matches_exact_arithmetic(a, sa, b, sb):
    left, right = Quantity.parse(f"{a}{sa}"), Quantity.parse(f"{b}{sb}")
    expected = (left.value > right.value) - (left.value < right.value)
    assert evaluate(f"quantity('{a}{sa}').compareTo(quantity('{b}{sb}'))") == expected
    assert evaluate(f"quantity('{a}{sa}') == quantity('{b}{sb}')") == (expected == 0)


@settings(max_examples=60, deadline=None)
@given(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
       st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)))
def test_semver_order_is_numeric(a, b):
    left, right = ".".join(map(str, a)), ".".join(map(str, b))
    assert evaluate(f"semver('{left}').compareTo(semver('{right}'))") == (a > b) - (a < b)


def test_list_attribute_and_regex_helpers():
    assert evaluate("xs.includes('b') && !xs.includes('z')", {"xs": ["a", "b"]}) is True
    assert evaluate("'gpu-12-mig'.find('[0-9]+') == '12'") is True
    assert evaluate("'a1b22c333'.findAll('[0-9]+') == ['1', '22', '333']") is True
