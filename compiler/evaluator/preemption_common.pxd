# Cython declarations for preemption_common.py (read only by `make speedups`; the .py runs as
# it is without them): the snapshot's fields as C struct members, and what every admission,
# eviction and preemption question calls as C calls.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.tree cimport QuotaNode

cdef class Snapshot:
    cdef public dict nodes
    cdef public dict specs
    cdef public dict admitted
    cdef public dict by_fr
    cdef public dict users
    cdef public dict _sorted
    cdef public dict _sums
    cdef public dict _pairs
    cdef public dict _sorted_in
    cdef public dict priorities
    cdef public object epoch
    cdef public list _versions
    cdef public dict _tree_slots
    cdef public dict _queue_slots
    cdef public dict _readers
    cdef public object tree_versions
    cdef public dict _roots
    cdef public object moved
    cdef public object tas
    cdef public object placing

    @cython.locals(per_cq=dict)
    cpdef track(self, WorkloadInfo info)
    @cython.locals(per_cq=dict)
    cpdef untrack(self, WorkloadInfo info)
    @cython.locals(versions=list)
    cpdef _commit(self, WorkloadInfo info)
    cpdef root_of(self, cq_name)
    @cython.locals(node=QuotaNode, counts=dict)
    cpdef _count(self, WorkloadInfo info, delta)
    cpdef remove(self, WorkloadInfo info)
    cpdef add(self, WorkloadInfo info)
    cpdef bint placeable(self)
    cpdef bint may_have_candidates(self, scope, policy, priority)
    @cython.locals(node=QuotaNode)
    cpdef bint beyond_own_limit(self, request)
    cpdef list fill_back(self, QuotaNode node, usage, list targets, bint allow_borrowing)
    cpdef restore(self, targets)


cdef class UntilCommit:
    cdef public Snapshot _snapshot
    cdef public object _epoch
    cdef public dict _answers


cpdef Py_ssize_t _slot(dict slots, list versions, key)
