# Cython declarations for answer_bounds.py (read only by `make speedups`; the .py runs as it is
# without them): a quiet queue's bounds are asked at every moment and every cycle that commits,
# a C call with its locals typed.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.tree cimport QuotaNode


cdef class UsageBounds:
    cdef public object own_reader
    cdef public object own_state
    cdef public list ranges
    cdef public frozenset pairs

    @cython.locals(usage=dict, item=tuple, used=object)
    cpdef bint hold(self)


@cython.locals(bounds=UsageBounds, info=WorkloadInfo)
cpdef trail_bounds(engine, cq_name, list heads)
cpdef nomination_bounds(engine, cq_name, WorkloadInfo info, cached)
