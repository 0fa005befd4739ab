# Cython declarations for drs.py (read only by `make speedups`; the .py runs as it is without
# them): a share as an extension type, its fields C struct members; fair sharing makes millions
# of them on an overloaded cluster (each eviction a search weighs is one).
cimport cython

from compiler.evaluator.tree cimport QuotaNode

cdef class Share:
    cdef public double weight
    cdef public double ratio
    cdef public object borrowing   # (as given: the checker cannot prove every caller passes a bool)
    cdef public object borrowed_frs
    cdef public dict excess
    cdef public tuple rank

    cpdef double precise(self)


@cython.locals(cache=dict, share=Share, usage=dict, subtree=dict, excess=dict)
cpdef Share share_of(QuotaNode node, extra=*)

@cython.locals(borrowed=dict, lendable=dict, ratio=double, total=object, amount=object)
cpdef Share _from_excess(QuotaNode node, dict excess)

@cython.locals(excess=dict)
cpdef Share share_without(QuotaNode node, Share share, removal)
