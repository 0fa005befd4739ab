"""python -m compiler.speedups build | status"""

from __future__ import annotations

import argparse
import sys

from compiler.speedups import COMPILED_DIR, HOT_MODULES, status, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.speedups",
                                     description="Compiled copies of the engine's hot modules.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help=f"compile {len(HOT_MODULES)} modules into {COMPILED_DIR}")
    sub.add_parser("status", help="which modules run compiled, and why not")
    args = parser.parse_args(argv)
    if args.command == "build":
        try:
            from compiler.speedups.build import build

            out = build()
        except ImportError as error:
            print(f"speedups: {error.name or error} is not installed (pip install -e '.[speedups]'); "
                  "the engine runs as Python", file=sys.stderr)
            return 1
        except Exception as error:  # a compiler missing or failing: the engine still runs as Python
            print(f"speedups: build failed ({type(error).__name__}: {error}); the engine runs as Python",
                  file=sys.stderr)
            return 1
        print(f"speedups: {len(HOT_MODULES)} modules compiled into {out}")
        return 0
    for answer in status():
        print(f"{answer.module:40} {answer.why}")
    print(summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
