"""python -m compiler.speedups build [--if-stale] | status [--format text|json] | check"""

from __future__ import annotations

import argparse
import json
import sys

from compiler.speedups import COMPILED_DIR, HOT_MODULES, PACKAGE_ROOT, build_is_current, status, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.speedups",
                                     description="Compiled copies of the engine's hot modules.")
    sub = parser.add_subparsers(dest="command", required=True)
    build_parser = sub.add_parser("build", help=f"compile {len(HOT_MODULES)} modules into {COMPILED_DIR}")
    build_parser.add_argument("--if-stale", action="store_true",
                              help="only when a module's .py or .pxd changed since the last build")
    status_parser = sub.add_parser("status", help="which modules run compiled, and why not")
    status_parser.add_argument("--format", choices=["text", "json"], default="text")
    sub.add_parser("check", help="whether each .pxd class declares exactly its Python class's fields, and "
                                 "each C bool only ever holds a bool")
    args = parser.parse_args(argv)
    if args.command == "build":
        return _build(args.if_stale)
    if args.command == "check":
        return _check()
    answers = status()
    if args.format == "json":
        print(json.dumps({"engine": summary(), "modules": [
            {"module": a.module, "compiled": a.compiled, "why": a.why} for a in answers]}, indent=2))
        return 0
    for answer in answers:
        print(f"{answer.module:40} {answer.why}")
    print(summary())
    return 0


def _check() -> int:
    from compiler.speedups import c_types, declarations

    problems = [*declarations.check_package(PACKAGE_ROOT), *c_types.check_package(PACKAGE_ROOT)]
    for problem in problems:
        print(problem.message(), file=sys.stderr)
    if problems:
        return 1
    print("speedups: every .pxd class declares its Python class's fields, every C bool holds only bools")
    return 0


def _build(if_stale: bool) -> int:
    if if_stale and build_is_current():
        print(f"speedups: {len(HOT_MODULES)} modules compiled into {COMPILED_DIR}, current")
        return 0
    try:
        from compiler.speedups.build import build

        out = build()
    except ImportError as error:
        print(f"speedups: {error.name or error} is not installed (pip install -e '.[speedups]')", file=sys.stderr)
        return 1
    except Exception as error:  # Cython's or the C compiler's error, printed above by them
        print(f"speedups: build failed ({type(error).__name__}: {error}); the build needs Cython and a C "
              f"compiler with Python's headers. {COMPILED_DIR} is as it was", file=sys.stderr)
        return 1
    print(f"speedups: {len(HOT_MODULES)} modules compiled into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
