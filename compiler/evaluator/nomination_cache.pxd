# Cython declarations for nomination_cache.py (read only by `make speedups`; the .py runs as it is
# without them): the cache's checks, made for most heads of
# every cycle, are C calls with their locals typed.
cimport cython

from compiler.evaluator.assigner cimport Assignment, FlavorAssigner
from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.nominator cimport Nominator
from compiler.evaluator.tree cimport QuotaNode


cdef class Nomination:
    cdef public object cq
    cdef public object scan
    cdef public object reader
    cdef public object state
    cdef public Assignment assignment
    cdef public list targets
    cdef public object readings
    cdef public object frs
    cdef public object bounds


cdef class PairsRead:
    cdef public object cq
    cdef public list frs


cdef class CachedNominator(Nominator):
    @cython.locals(node=QuotaNode, index=Py_ssize_t)
    cpdef _retrace(self, WorkloadInfo info, cq_name, readings, changed)
    @cython.locals(assigner=FlavorAssigner, cached=Nomination, shared=Nomination, found=Nomination)
    cpdef _nominate_cached(self, WorkloadInfo info, cq_name)
    cpdef Nomination _reuse(self, WorkloadInfo info, Nomination cached, bint own)
    cpdef Nomination _answer_from(self, WorkloadInfo info, Nomination cached, bint own)

cpdef tuple _reading_pairs(kind, what, amount)
cpdef bint _reading_touches(frs, kind, what, amount)
