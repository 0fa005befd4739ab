# Cython declarations for classical.py (read only by `make speedups`; the .py runs as it is
# without them): the classical search as an extension type, its steps C calls.
cimport cython

from compiler.evaluator.preemption_common cimport Snapshot
from compiler.evaluator.tree cimport QuotaNode

cdef class ClassicalPreemption:
    cdef public Snapshot snapshot
    cdef public object _above

    @cython.locals(snap=Snapshot, removed=list)
    cpdef _may_fit(self, request, QuotaNode node, list sources, bint allow_borrowing)   # (returns what Snapshot.fits returns)
    @cython.locals(amounts=dict)
    cpdef dict _removable(self, request, cq_name)
    @cython.locals(snap=Snapshot, removed=list)
    cpdef list _attempt(self, request, QuotaNode node, list groups, bint allow_borrowing)
    @cython.locals(cand_node=QuotaNode)
    cpdef bint _lends_nothing(self, candidate, lca, request)
    cpdef bint _offers(self, request, cq_name)
