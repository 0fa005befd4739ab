# Cython declarations for cluster_cache.py (read only by `make speedups`; the .py runs as it is
# without them): every field of the engine, laid out once here for
# all its layers (each a subclass adding methods only), as C struct members.
cimport cython

from compiler.evaluator.preemption cimport Preemptor


cdef class ClusterCache:
    cdef public object state
    cdef public object tas
    cdef public object reuse          # (the constructor's argument as given, not a C bool)
    cdef public object layers
    cdef public object config
    cdef public object fair_sharing   # (the configuration's value as given, not a C bool)
    cdef public dict infos
    cdef public dict nodes
    cdef public dict cohort_nodes
    cdef public dict inactive
    cdef public dict admitted
    cdef public dict queues
    cdef public set _waiting
    cdef public set _aside
    cdef public set _scanned
    cdef public set _finished_roots
    cdef public object _tree_queues
    cdef public dict _quiet
    cdef public list _quiet_order
    cdef public object _moment_cycle
    cdef public dict _quiet_versions
    cdef public dict _quiet_checked
    cdef public dict _quiet_requeues
    cdef public object _watch
    cdef public set _polled
    cdef public set _asleep
    cdef public object quiet_heads
    cdef public object woken
    cdef public object cycle
    cdef public object scheduling_cycle
    cdef public dict generations
    cdef public object decisions
    cdef public object _reserve_seq
    cdef public list _admitted_now
    cdef public bint converged
    cdef public object circle
    cdef public object circle_finder
    cdef public object holders_print
    cdef public object journal
    cdef public object clock
    cdef public object reused
    cdef public object reused_failures
    cdef public object bounded
    cdef public dict _selected
    cdef public dict _class_nominations
    cdef public object reused_from_class
    cdef public object reused_fits
    cdef public dict _tournament_keys
    cdef public Preemptor preemptor
    cdef public dict _assigners
    cdef public list _evicted_now

    cpdef _namespace_selected(self, cq_name, namespace)   # (returns the answer it keeps)
