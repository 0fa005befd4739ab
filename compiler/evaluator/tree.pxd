# Cython declarations for tree.py (read only by `make speedups`; the .py runs as it is without
# them). QuotaNode becomes an extension type whose fields are C struct members, and the walks
# every cycle asks for are called as C functions, with their locals typed.
cimport cython

cdef class QuotaNode:
    cdef public str name
    cdef public object is_cq   # (the constructor's argument as given, not a C bool)
    cdef public QuotaNode parent
    cdef public dict quotas
    cdef public dict subtree
    cdef public dict usage
    cdef public dict local
    cdef public list child_cqs
    cdef public list child_cohorts
    cdef public double weight   # (Python stores float(weight): a C double holds a float exactly)
    cdef public object _height
    cdef public dict _capacity
    cdef public object version
    cdef public object lendable
    cdef public dict share
    cdef public object stamp
    cdef public object _by_name
    cdef public dict _plans
    cdef public object _path

    cpdef list path_nodes(self)
    @cython.locals(node=QuotaNode)
    cpdef QuotaNode root(self)
    @cython.locals(steps=tuple, usage=dict, root_usage=dict)
    cpdef available(self, fr, tuple taken=*)
    @cython.locals(plan=tuple, node=QuotaNode, step=QuotaNode)
    cpdef tuple _plan(self, fr)
    cpdef quota(self, fr)
    cpdef max_capacity(self, fr)
    cpdef bint borrowing_with(self, fr, value)
    @cython.locals(usage=dict, subtree=dict)
    cpdef bint within_nominal(self, frs)
    @cython.locals(node=QuotaNode, usage=dict)
    cpdef _add_usage(self, fr, value)
    @cython.locals(node=QuotaNode, usage=dict)
    cpdef _remove_usage(self, fr, value)
    cpdef add_all(self, usage)
    cpdef remove_all(self, usage)
    @cython.locals(node=QuotaNode)
    cpdef _touch(self)


@cython.locals(steps=tuple, usage=dict, index=Py_ssize_t)
cpdef tuple height_of_lowest_subtree_that_fits(QuotaNode cq, fr, value)
