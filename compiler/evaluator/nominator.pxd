# Cython declarations for nominator.py (read only by `make speedups`; the .py runs as it is
# without them): a cycle's entries are extension types, and the
# nomination of every head a C call with its locals typed.
cimport cython

from compiler.evaluator.assigner cimport Assignment, FlavorAssigner
from compiler.evaluator.cluster_cache cimport ClusterCache
from compiler.evaluator.info cimport WorkloadInfo


cdef class Entry:
    cdef public WorkloadInfo info
    cdef public object cq
    cdef public Assignment assignment
    cdef public list targets
    cdef public object status
    cdef public object message
    cdef public object reason
    cdef public bint skipped
    cdef public bint inadmissible_only
    cdef public bint namespace_mismatch
    cdef public object prev_tried


cdef class Nominator(ClusterCache):
    @cython.locals(assigner=FlavorAssigner, podsets=list)
    cpdef get_assignment(self, WorkloadInfo info, cq_name)
    cpdef _nominate_cached(self, WorkloadInfo info, cq_name)
    cpdef bint _scan_outdated(self, WorkloadInfo info, cq_name)
    @cython.locals(entry=Entry)
    cpdef Entry _nominate(self, WorkloadInfo info, cq_name)

cpdef tuple _found(targets)
