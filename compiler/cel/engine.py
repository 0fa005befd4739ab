"""Compile and evaluate CEL expressions with the Kubernetes extensions.

    program = compile_expression("device.capacity['gpu.nvidia.com'].memory"
                                 ".compareTo(quantity('40Gi')) >= 0")
    evaluate(program, {"device": ...})

The `cel` library only parses at compile time; an undefined function would surface at the first
evaluation. Kubernetes type-checks when an object is created, so `compile_expression` also checks
every called function against the environment (the library's native functions, the Kubernetes
quantity/semver libraries and the strings/sets extensions) and reports an unknown one as a
compile error, with the line and column of the call. `cel.bind()` and optional syntax (`.?x`)
are valid in Kubernetes but not supported by the library: they raise `CelUnsupportedError`
rather than a misleading pass or failure.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from compiler.cel.library import cel
from compiler.cel.library import stdlib as cel_stdlib

from compiler.core import codes
from compiler.cel.k8s_ext import KUBERNETES_FUNCTIONS, CelFunctionError, to_cel, to_python
from compiler.core.errors import Diagnostic, InputError, SourcePosition

MAX_EXPRESSION_LENGTH = 10 * 1024    # the DRA selector limit (10 KiB)

# Functions the Rust core provides natively (macros like has/all/exists/map/filter never reach
# Program.functions()).
_NATIVE_FUNCTIONS = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double", "string",
    "bytes", "bool", "timestamp", "duration", "dyn", "type", "max", "min",
    "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek",
    "getHours", "getMinutes", "getSeconds", "getMilliseconds",
})
# Extensions Kubernetes also offers (strings ext, sets).
_EXTENSION_FUNCTIONS: dict[str, Any] = {
    **cel_stdlib.EXTENSIONS["strings"],
    **cel_stdlib.EXTENSIONS["sets"],
}
FUNCTIONS: dict[str, Any] = {**_EXTENSION_FUNCTIONS, **KUBERNETES_FUNCTIONS}
KNOWN_FUNCTIONS = frozenset(_NATIVE_FUNCTIONS | set(FUNCTIONS))

_FUNCTION_FAILURE = re.compile(r"Python function call failed: \w+: (.*?)(?:\. Check function arguments.*)?$", re.S)
_POSITION = re.compile(r"<input>:(\d+):(\d+):\s*(.*)")
_STRING_LITERAL = re.compile(
    r"""[rR]?(?:'''(?P<a>[\s\S]*?)'''|\"\"\"(?P<b>[\s\S]*?)\"\"\"|'(?P<c>(?:\\.|[^'\\\n])*)'|"(?P<d>(?:\\.|[^"\\\n])*)")""")


class CelError(InputError):
    """A CEL problem with a position inside the expression (1-based line and column)."""

    code = codes.CEL_COMPILE

    def __init__(self, expression: str, reason: str, line: int = 1, column: int = 1):
        self.expression = expression
        self.reason = reason
        self.line = line
        self.column = column
        super().__init__([Diagnostic(self.code, self.describe())])

    def describe(self) -> str:
        return f"CEL expression line {self.line}, column {self.column}: {self.reason}"

    def diagnostic(self, position: SourcePosition | None = None, subject: str = "",
                   block: bool = False) -> Diagnostic:
        """The error placed in a file: `position` is where the expression's first character is.

        `block`: the expression is a YAML block scalar (`|`), whose every line is indented by
        position.column - 1; otherwise only the first line is offset."""
        where = position
        if position is not None:
            offset = position.column - 1 if (block or self.line == 1) else 0
            where = SourcePosition(position.path, position.line + self.line - 1, self.column + offset)
        prefix = f"{subject}: " if subject else ""
        return Diagnostic(self.code, f"{prefix}{self.describe()}", where)


class CelCompileError(CelError):
    code = codes.CEL_COMPILE


class CelUnsupportedError(CelError):
    code = codes.CEL_UNSUPPORTED


class CelEvaluationError(CelError):
    code = codes.CEL_EVALUATION

    def describe(self) -> str:
        return f"CEL evaluation failed: {self.reason}"


@dataclass(frozen=True)
class Program:
    """A compiled expression: the library's program plus what static analysis found."""

    source: str
    compiled: Any = field(repr=False, compare=False)
    functions: frozenset[str] = frozenset()
    variables: frozenset[str] = frozenset()
    string_literals: tuple[str, ...] = ()


def _offset_to_position(source: str, offset: int) -> tuple[int, int]:
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column


def _call_position(source: str, name: str) -> tuple[int, int]:
    match = re.search(r"(?<![\w.])" + re.escape(name) + r"\s*\(", source) or \
        re.search(r"\." + re.escape(name) + r"\s*\(", source)
    if match is None:
        return 1, 1
    offset = match.start() + (1 if source[match.start()] == "." else 0)
    return _offset_to_position(source, offset)


def string_literals(source: str) -> tuple[str, ...]:
    """The string literals of an expression (escapes are kept as written)."""
    found = []
    for match in _STRING_LITERAL.finditer(source):
        found.append(next(group for group in match.group("a", "b", "c", "d") if group is not None))
    return tuple(found)


def compile_expression(expression: str) -> Program:
    """Parse and check an expression. Raises CelCompileError / CelUnsupportedError."""
    if not isinstance(expression, str):
        raise CelCompileError(str(expression), f"expected a string expression, got {type(expression).__name__}")
    if not expression.strip():
        raise CelCompileError(expression, "the expression is empty")
    if len(expression.encode("utf-8")) > MAX_EXPRESSION_LENGTH:
        raise CelCompileError(expression, f"the expression is longer than {MAX_EXPRESSION_LENGTH} bytes")
    optional = re.search(r"\.\?|\[\?", expression)
    try:
        compiled = cel.compile(expression)
    except ValueError as error:
        if optional is not None:
            line, column = _offset_to_position(expression, optional.start())
            raise CelUnsupportedError(expression, "optional syntax (.?field, [?key]) is valid in "
                                      "Kubernetes but not evaluated here; use has() instead",
                                      line, column) from None
        text = str(error)
        found = [m for m in (_POSITION.search(line) for line in text.splitlines()) if m]
        # The parser sometimes reports an internal "Incomplete ..." first; the syntax error
        # after it is the one a person can act on.
        preferred = [m for m in found if m.group(3).startswith("Syntax error")] or found
        if preferred:
            match = preferred[0]
            raise CelCompileError(expression, match.group(3).strip(), int(match.group(1)),
                                  int(match.group(2))) from None
        raise CelCompileError(expression, text.splitlines()[0]) from None
    references = compiled.references()
    functions = frozenset(references["functions"])
    variables = frozenset(references["variables"])
    if "bind" in functions and "cel" in variables:
        line, column = _call_position(expression, "bind")
        raise CelUnsupportedError(expression, "cel.bind() is valid in Kubernetes but not evaluated "
                                  "here; write the expression out", line, column)
    for name in sorted(functions):
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", name) or name.startswith("_"):
            continue     # operators: _+_, _[_], @in, !_ ...
        if name not in KNOWN_FUNCTIONS:
            line, column = _call_position(expression, name)
            raise CelCompileError(expression, f"undeclared reference to function {name!r}", line, column)
    return Program(expression, compiled, functions, variables, string_literals(expression))


def make_context(variables: Mapping[str, Any] | None, programs: Iterable[Program] = ()) -> Any:
    """A reusable evaluation context for many programs over the same variables (e.g. one device
    checked against every DeviceClass): building a context costs more than executing in it.
    Only the functions the programs call are registered (the library converts each registered
    function on every execution)."""
    names = set().union(*(program.functions for program in programs)) if programs else set(FUNCTIONS)
    needed = {name: FUNCTIONS[name] for name in names if name in FUNCTIONS}
    return cel.Context(variables={k: to_cel(v) for k, v in (variables or {}).items()}, functions=needed)


def execute(program: Program, context: Any) -> Any:
    """Run a compiled program in a context from make_context; errors as in evaluate()."""
    try:
        # The library echoes a failing Python function's exception on sys.stderr; the error
        # raised here carries the same text, so keep the terminal clean.
        with contextlib.redirect_stderr(io.StringIO()):
            result = program.compiled.execute(context)
    except KeyError as error:
        raise CelEvaluationError(program.source, f"no such key: {error.args[0]}") from None
    except (RuntimeError, TypeError, ValueError, CelFunctionError, OverflowError,
            ZeroDivisionError) as error:
        text = str(error)
        raised = _FUNCTION_FAILURE.search(text)
        if raised:
            text = raised.group(1)
        text = text.split(". Check")[0].split(". CEL does not coerce")[0]
        raise CelEvaluationError(program.source, text) from None
    return to_python(result)


def evaluate(program: Program | str, variables: Mapping[str, Any] | None = None) -> Any:
    """Evaluate with the Kubernetes functions; Quantity/Semver values are converted both ways.

    Raises CelEvaluationError with the reason (missing key, no such overload, bad quantity...)."""
    if isinstance(program, str):
        program = compile_expression(program)
    return execute(program, make_context(variables, [program]))
