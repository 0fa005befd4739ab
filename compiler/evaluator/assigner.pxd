# Cython declarations for assigner.py (read only by `make speedups`; the .py runs as it is
# without them): the flavor assigner's fields as C struct members.

cdef class FlavorAssigner:
    cdef public object cq
    cdef public object node
    cdef public dict flavors
    cdef public bint fair_sharing
    cdef public bint ignore_undeclared
    cdef public object oracle
    cdef public bint read_usage
    cdef public object readings
    cdef public dict _problems
    cdef public dict group_of
