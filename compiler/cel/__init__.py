"""CEL for kueue-policy: the `cel` library (common-expression-language) plus the Kubernetes
extensions DRA selectors use. Public API:

    compile_expression(expr) -> Program          (CelCompileError / CelUnsupportedError)
    evaluate(program, variables) -> value        (CelEvaluationError)
    make_context(variables, programs) / execute(program, context)   (many programs, one context)
    device_variable(device_dict, driver) -> dict (the `device` object of a DRA selector)
    Quantity, Semver                             (values of quantity()/semver() results)
"""

from compiler.cel.device import device_variable, device_variable_for
from compiler.cel.engine import (CelCompileError, CelError, CelEvaluationError, CelUnsupportedError,
                                 Program, compile_expression, evaluate, execute, make_context)
from compiler.cel.k8s_ext import Quantity, Semver

__all__ = ["compile_expression", "evaluate", "Program", "CelError", "CelCompileError",
           "CelEvaluationError", "CelUnsupportedError", "device_variable", "device_variable_for",
           "Quantity", "Semver", "make_context", "execute"]
