# Cython declarations for assigner.py (read only by `make speedups`; the .py runs as it is
# without them): the flavor assigner as an extension type, and the calls of one assignment
# (a flavor per resource group, a quota reading per flavor) as C calls with typed locals.
cimport cython

from compiler.evaluator.tree cimport QuotaNode, height_of_lowest_subtree_that_fits

cdef class FlavorAttempt:
    cdef public object flavor
    cdef public object mode
    cdef public object borrow
    cdef public list reasons
    cdef public object no_fit_reason


cdef class PodSetAssignment:
    cdef public object name
    cdef public object count
    cdef public dict requests
    cdef public dict flavors
    cdef public list reasons
    cdef public object error
    cdef public list attempts
    cdef public dict tried_index

    cpdef PodSetAssignment copy(self)
    cpdef bint is_fit(self)


cdef class Assignment:
    cdef public list podsets
    cdef public dict usage
    cdef public object borrowing
    cdef public object no_fit_reason
    cdef public object mode
    cdef public object _message
    cdef public object scan_position
    cdef public object placements

    cpdef Assignment copy(self)
    cpdef message(self)
    @cython.locals(entry=PodSetAssignment, usage=dict)
    cpdef dict preemption_request(self, list podsets)
    @cython.locals(ps=PodSetAssignment)
    cpdef set frs_needing_preemption(self)


@cython.locals(ps=PodSetAssignment, copy=PodSetAssignment, podsets=list)
cpdef Assignment restated(Assignment assignment, dict messages)


cdef class FlavorAssigner:
    cdef public object cq
    cdef public QuotaNode node
    cdef public dict flavors
    # (the constructor's arguments as given, as Python keeps them: not C bools)
    cdef public object fair_sharing
    cdef public object ignore_undeclared
    cdef public object oracle
    cdef public bint read_usage
    cdef public object readings
    cdef public object tas
    cdef public object pinned
    cdef public bint read_placement
    cdef public dict _problems
    cdef public dict group_of
    cdef public dict pairs

    @cython.locals(requests=dict, group_flavors=object, reasons=list, index=Py_ssize_t, assignment=Assignment,
                   psa=PodSetAssignment, ps=PodSetAssignment, order=list)
    cpdef Assignment assign(self, podsets, counts=*, last_tried=*)
    @cython.locals(covered=list, reasons=list, attempts=list, chosen=dict, flavor_reasons=list,
                   idx=Py_ssize_t, start=Py_ssize_t, attempted=Py_ssize_t, pairs=dict)
    cpdef tuple _find_flavor(self, ps_index, podset, dict requests, list order, res, dict assumed, last_tried)
    cpdef bint _try_next(self, tuple mode)
    @cython.locals(node=QuotaNode)
    cpdef tuple _fits_quota(self, fr, assumed, request)


cpdef str most_severe(a, b)
cpdef str assignment_mode(mode)
cpdef bint is_preferred(tuple a, tuple b, preference)
