# Cython declarations for preemption.py (read only by `make speedups`; the .py runs as it is
# without them): the preemptor's fields as C struct members.

cdef class Preemptor:
    cdef public object snapshot
    cdef public bint fair_sharing
    cdef public bint reuse
    cdef public bint _reuse
    cdef public dict _answers
    cdef public dict _capped
    cdef public dict _creation
    cdef public object _classical
    cdef public object _fair
    cdef public object strategy
    cdef public object _at_commit


cdef class _AtCommit:
    cdef public Preemptor _preemptor
