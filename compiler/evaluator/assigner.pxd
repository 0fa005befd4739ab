# Cython declarations for assigner.py (read only by `make speedups`; the .py runs as it is
# without them): the flavor assigner as an extension type, and the calls of one assignment
# (a flavor per resource group, a quota reading per flavor) as C calls with typed locals.
cimport cython

from compiler.evaluator.tree cimport QuotaNode, height_of_lowest_subtree_that_fits

cdef class FlavorAssigner:
    cdef public object cq
    cdef public QuotaNode node
    cdef public dict flavors
    cdef public bint fair_sharing
    cdef public bint ignore_undeclared
    cdef public object oracle
    cdef public bint read_usage
    cdef public object readings
    cdef public dict _problems
    cdef public dict group_of
    cdef public dict pairs

    @cython.locals(requests=dict, group_flavors=object, reasons=list, index=Py_ssize_t)
    cpdef assign(self, podsets, counts=*, last_tried=*)
    @cython.locals(covered=list, reasons=list, attempts=list, chosen=dict, flavor_reasons=list,
                   idx=Py_ssize_t, start=Py_ssize_t, attempted=Py_ssize_t, pairs=dict)
    cpdef tuple _find_flavor(self, ps_index, podset, dict requests, res, dict assumed, last_tried)
    cpdef bint _try_next(self, tuple mode)
    @cython.locals(node=QuotaNode)
    cpdef tuple _fits_quota(self, fr, assumed, request)


cpdef str most_severe(a, b)
cpdef str assignment_mode(mode)
cpdef bint is_preferred(tuple a, tuple b, preference)
