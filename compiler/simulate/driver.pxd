# Cython declarations for driver.py (read only by `make speedups`; the .py runs as it is
# without them): the event loop as an extension type calling the engine's C methods.
cimport cython

from compiler.evaluator.engine cimport Engine

cdef class _EventLoop:
    cdef public object simulation
    cdef public Engine engine
    cdef public object observer
    cdef public dict by_key
    cdef public list arrivals
    cdef public list completions
    cdef public list timeline
    cdef public list warnings
    cdef public list circles
    cdef public object running
    cdef public object gate
    cdef public object watch
    cdef public list preempted
    cdef public object stopped

    @cython.locals(next_arrival=Py_ssize_t, total=Py_ssize_t)
    cpdef run(self)
    @cython.locals(completions=list)
    cpdef _drop_stale_completions(self)
    cpdef _complete_until(self, now)
    @cython.locals(engine=Engine)
    cpdef _schedule(self, now)
    cpdef _record(self, time, run, sign)
