"""Every `.pxd` extension type declares exactly its Python class's fields (compiler/speedups/
declarations.py), for whichever modules of the package have declarations."""

from __future__ import annotations

import subprocess
import sys

from kp_testing import toy_package

from compiler import speedups
from compiler.speedups.declarations import check, check_package, declared_classes


def test_every_pxd_class_of_the_package_declares_its_python_classs_fields():
    found = sorted(speedups.PACKAGE_ROOT.rglob("*.pxd"))
    assert found, "no .pxd under compiler/"
    classes = [name for path in found for name in declared_classes(path.read_text())]
    assert classes  # (the check below reads something)
    assert [mismatch.message() for mismatch in check_package(speedups.PACKAGE_ROOT)] == []


def test_every_hot_module_with_declarations_is_checked():
    checked = {f"compiler.{'.'.join(path.relative_to(speedups.PACKAGE_ROOT).with_suffix('').parts)}"
               for path in speedups.PACKAGE_ROOT.rglob("*.pxd")}
    with_declarations = {m for m in speedups.HOT_MODULES if speedups.declarations_path(m).exists()}
    assert with_declarations and with_declarations <= checked


def test_a_pxd_that_disagrees_with_its_class_is_named_with_the_missing_and_extra_fields(tmp_path):
    package = toy_package(tmp_path,
                   "class Counter:\n"
                   "    def __init__(self):\n"
                   "        self.total = 0\n"
                   "        self.seen, self.last = set(), None\n"
                   "    def add(self, value):\n"
                   "        self.total += value\n",
                   "cimport cython\n\n"
                   "cdef class Counter:\n"
                   "    cdef public long long total\n"
                   "    cdef public object last, stale\n"
                   "    cpdef add(self, value)\n")
    [mismatch] = check_package(package)
    assert (mismatch.module, mismatch.name, mismatch.line) == ("toypkg.hot", "Counter", 3)
    assert (mismatch.missing, mismatch.extra) == (("seen",), ("stale",))
    assert mismatch.message() == (
        f"{package / 'hot.pxd'}:3: toypkg.hot.Counter: missing field(s) seen (assigned in the .py, not declared); "
        "extra field(s) stale (declared, never assigned in the .py)")


def test_slots_inheritance_and_properties_count_as_python_does(tmp_path):
    package = toy_package(tmp_path,
                   "class Base:\n"
                   "    __slots__ = ('a',)\n"
                   "class Child(Base):\n"
                   "    __slots__ = ('b', '_c')\n"
                   "    def __init__(self):\n"
                   "        self.b = 1\n"
                   "        self.c = 2\n"
                   "    @property\n"
                   "    def c(self):\n"
                   "        return self._c\n"
                   "    @c.setter\n"
                   "    def c(self, value):\n"
                   "        self._c = value\n",
                   "cdef class Base:\n"
                   "    cdef public object a\n\n\n"
                   "cdef class Child(Base):\n"
                   "    cdef public object b\n"
                   "    cdef object _c  # (a comment)\n")
    assert check(package / "hot.pxd", "toypkg.hot") == []
    (package / "hot.pxd").write_text("cdef class Base:\n    cdef public object a\n\n\n"
                                     "cdef class Child(Base):\n    cdef public object b\n")
    [mismatch] = check(package / "hot.pxd", "toypkg.hot")
    assert (mismatch.name, mismatch.missing, mismatch.extra) == ("Child", ("_c",), ())


def test_a_pxd_class_without_a_python_class_is_named(tmp_path):
    package = toy_package(tmp_path, "class Other:\n    pass\n", "cdef class Gone:\n    cdef public object x\n")
    [mismatch] = check_package(package)
    assert mismatch.message() == f"{package / 'hot.pxd'}:1: toypkg.hot.Gone: declared as a cdef class, but toypkg.hot has no class Gone"


def test_check_command_passes_on_the_package():
    result = subprocess.run([sys.executable, "-m", "compiler.speedups", "check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_layer_in_another_module_is_checked_with_the_fields_its_base_declares(tmp_path):
    # The engine's layout: the cache module declares every field once; a layer in another
    # module extends it, adding methods only. A field the layer assigns that no .pxd declares
    # is found, and a base field that only the layer fills is not "extra".
    package = toy_package(tmp_path, "class Base:\n    def __init__(self):\n        self.x = 1\n",
                          "cdef class Base:\n    cdef public object x\n    cdef public object y\n")
    (package / "layer.py").write_text("from toypkg.hot import Base\n\n\nclass Layer(Base):\n"
                                      "    def run(self):\n        self.y = 2\n        self.z = 3\n")
    (package / "layer.pxd").write_text("from toypkg.hot cimport Base\n\n\ncdef class Layer(Base):\n"
                                       "    cpdef run(self)\n")
    [mismatch] = check_package(package)
    assert (mismatch.name, mismatch.missing, mismatch.extra) == ("Layer", ("z",), ())
    (package / "layer.py").write_text("from toypkg.hot import Base\n\n\nclass Layer(Base):\n"
                                      "    def run(self):\n        self.y = 2\n")
    assert check_package(package) == []
