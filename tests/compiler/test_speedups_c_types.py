"""No C bool where Python's value may be something else (compiler/speedups/c_types.py), for
whichever modules of the package have declarations."""

from __future__ import annotations


from kp_testing import toy_package

from compiler import speedups
from compiler.speedups.c_types import check_package


def test_every_c_bool_of_the_package_only_ever_holds_a_bool():
    assert [found.message() for found in check_package(speedups.PACKAGE_ROOT)] == []


TOY_PY = """\
class Gate:
    def __init__(self, strict, items):
        self.strict = strict
        self.open = False
        self.full = len(items) > 3
        self.seen, self.any = [], any(items)

    def ready(self, items):
        done = False
        for item in items:
            done |= self.check(item)
        return done and not self.open

    def check(self, item):
        return item or self.open

    def first(self, items):
        found = items and items[0]
        return found


def alone(value):
    return value is not None
"""


def test_a_c_bool_given_a_callers_value_or_returning_a_non_bool_is_named(tmp_path):
    package = toy_package(tmp_path, TOY_PY, """\
cdef class Gate:
    cdef public bint strict, open
    cdef public bint full
    cdef public object seen
    cdef public bint any

    cpdef bint ready(self, items)
    cpdef bint check(self, item)
    cpdef bint first(self, items)

cpdef bint alone(value)
""")
    found = check_package(package)
    assert [(f.module, f.where, f.line, f.value) for f in found] == [
        ("toypkg.hot", "Gate.strict", 3, "strict"),
        ("toypkg.hot", "Gate.check", 15, "item or self.open"),
        ("toypkg.hot", "Gate.first", 19, "found"),
    ]
    assert found[0].message() == (
        f"{package / 'hot.py'}:3: toypkg.hot.Gate.strict is a C bint in hot.pxd, but may be given 'strict', which "
        "need not be a bool: declare it `object` (or make the value a bool)")
    # Declared `object`, they are kept as given: nothing to report.
    (package / "hot.pxd").write_text("cdef class Gate:\n    cdef public object strict\n    cdef public bint open\n"
                                     "    cpdef ready(self, items)\n    cpdef check(self, item)\n")
    assert check_package(package) == []
