# Cython declarations for info.py (read only by `make speedups`; the .py runs as it is without
# them): a workload's runtime state as an extension type, its fields C struct members.

cdef class WorkloadInfo:
    cdef public object workload
    cdef public object cluster_queue
    cdef public dict usage
    cdef public dict flavors
    cdef public dict counts
    cdef public bint holds_quota
    cdef public bint held_before
    cdef public tuple reserved_rank
    cdef public object status
    cdef public object reason
    cdef public object reason_code
    cdef public object preempted_by
    cdef public bint borrowing
    cdef public object last_tried
    cdef public tuple tried_at
    cdef public bint sticky
    cdef public list explain
    cdef public object last_assignment
    cdef public list pending_victims
    cdef public object _hash
    cdef public object _order
    cdef public object nomination
    cdef public object reads
    cdef public object key
    cdef public object uid
    cdef public object placements
