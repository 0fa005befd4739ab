# Cython declarations for preemption_common.py (read only by `make speedups`; the .py runs as
# it is without them): the snapshot's fields as C struct members.

cdef class Snapshot:
    cdef public dict nodes
    cdef public dict specs
    cdef public dict admitted
    cdef public dict by_fr
    cdef public dict users
    cdef public dict _sorted
    cdef public dict _sums
    cdef public dict _pairs
    cdef public dict priorities
    cdef public object epoch
    cdef public list _versions
    cdef public dict _tree_slots
    cdef public dict _queue_slots
    cdef public dict _readers
    cdef public object tree_versions
    cdef public dict _roots


cdef class UntilCommit:
    cdef public Snapshot _snapshot
    cdef public object _epoch
    cdef public dict _answers
