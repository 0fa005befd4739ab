"""The CEL library is loaded without its interactive shell (prompt_toolkit), which every command
would otherwise pay for at start-up, and still evaluates with its standard extensions."""

import subprocess
import sys


def test_importing_the_cel_engine_leaves_the_shell_out() -> None:
    probe = ("import sys, compiler.cel, compiler.verify.kueue_cel, compiler.verify.cel_syntax; "
             "print(sorted(m for m in sys.modules if m.startswith('prompt_toolkit')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_library_still_evaluates_with_its_extensions() -> None:
    from compiler.cel import compile_expression, evaluate

    program = compile_expression("'a,b'.split(',').size() == 2"
                                 " && quantity('1Gi').isGreaterThan(quantity('1Mi'))")
    assert evaluate(program, {}) is True
