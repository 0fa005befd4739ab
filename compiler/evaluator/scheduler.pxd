# Cython declarations for scheduler.py (read only by `make speedups`; the .py runs as it is
# without them): the engine, its queues and a cycle's entries become extension types, so the
# fields every cycle reads are C struct members instead of attribute lookups, and the methods
# a cycle calls for every head are C calls with their locals typed.
cimport cython

from compiler.evaluator.assigner cimport Assignment, FlavorAssigner, PodSetAssignment
from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.preemption cimport Preemptor
from compiler.evaluator.tree cimport QuotaNode, height_of_lowest_subtree_that_fits

cdef class _Queue:
    cdef public list heap
    cdef public dict inadmissible
    cdef public object strict   # (the constructor's argument as given, not a C bool)
    cdef public object sticky
    cdef public set members
    cdef public dict classes
    cdef public dict bulk_moved
    cdef public object name
    cdef public set waiting
    cdef public set aside
    cdef public object trail

    cpdef add(self, WorkloadInfo info)
    cpdef set_aside(self, WorkloadInfo info)
    @cython.locals(info=WorkloadInfo)
    cpdef bulk_move(self, WorkloadInfo failed)
    cpdef push(self, WorkloadInfo info)
    cpdef _count(self, key, delta)
    @cython.locals(info=WorkloadInfo)
    cpdef pop(self)
    @cython.locals(info=WorkloadInfo, members=set, heap=list, kept=dict)
    cpdef requeue_inadmissible(self, keep=*)


cdef class _Entry:
    cdef public WorkloadInfo info
    cdef public object cq
    cdef public Assignment assignment
    cdef public list targets
    cdef public object status
    cdef public object message
    cdef public object reason
    cdef public bint skipped
    cdef public bint inadmissible_only
    cdef public bint namespace_mismatch
    cdef public object prev_tried


cdef class Engine:
    cdef public object state
    # (the constructor's argument and the configuration's value as given, not C bools)
    cdef public object reuse
    cdef public object config
    cdef public object fair_sharing
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
    cdef public dict _selected
    cdef public dict _class_nominations
    cdef public object reused_from_class
    cdef public object reused_fits
    cdef public dict _tournament_keys
    cdef public Preemptor preemptor
    cdef public dict _assigners
    cdef public list _evicted_now

    @cython.locals(assigner=FlavorAssigner, podsets=list)
    cpdef get_assignment(self, WorkloadInfo info, cq_name)
    @cython.locals(node=QuotaNode, index=Py_ssize_t)
    cpdef _retrace(self, WorkloadInfo info, cq_name, readings, changed)
    @cython.locals(assigner=FlavorAssigner)
    cpdef _nominate_cached(self, WorkloadInfo info, cq_name)
    cpdef _reuse(self, WorkloadInfo info, tuple cached, bint own)
    cpdef bint _scan_outdated(self, WorkloadInfo info, cq_name)
    @cython.locals(entry=_Entry)
    cpdef _Entry _nominate(self, WorkloadInfo info, cq_name)
    @cython.locals(queue=_Queue, info=WorkloadInfo, entries=list, inadmissible=list, entry=_Entry)
    cpdef bint run_cycle(self)
    @cython.locals(entry=_Entry, queue=_Queue, info=WorkloadInfo)
    cpdef bint _requeue_entries(self, list entries)
    cpdef bint _reserves(self, cq_name)
    cpdef _ordered(self, list entries)
    @cython.locals(info=WorkloadInfo, node=QuotaNode, assignment=Assignment)
    cpdef bint _process(self, _Entry entry, dict preempted, list temporary, list preemptors)
    @cython.locals(ps=PodSetAssignment)
    cpdef _remember_scan(self, WorkloadInfo info, cq_name, Assignment assignment)
    @cython.locals(node=QuotaNode)
    cpdef _admit(self, WorkloadInfo info, cq_name, Assignment assignment)
    @cython.locals(info=WorkloadInfo, queue=_Queue)
    cpdef bint _requeue(self, _Entry entry)
    cpdef Py_ssize_t _quiet_cycle(self)   # (a count of list entries: what len() gives)
    @cython.locals(queue=_Queue, info=WorkloadInfo)
    cpdef rescan(self, bint quiet=*)
    @cython.locals(queue=_Queue, quiet=dict, checked=dict, versions=dict)
    cpdef dict _quiet_queues(self)
    @cython.locals(info=WorkloadInfo, frs=set)
    cpdef _trail_reader(self, name, list heads)
    @cython.locals(info=WorkloadInfo, admitted=list)
    cpdef _settle_admission_order(self)
    @cython.locals(queue=_Queue, info=WorkloadInfo, entry=_Entry)
    cpdef _wake(self, name, cycles)
    cpdef _end_quiet(self)
    @cython.locals(info=WorkloadInfo)
    cpdef run_moment(self, repeats=*)

    cpdef WorkloadInfo submit(self, workload)
    @cython.locals(info=WorkloadInfo, node=QuotaNode)
    cpdef finish(self, key)
    cpdef _requeue_finished(self)
    @cython.locals(queue=_Queue)
    cpdef _requeue_tree(self, root)
    @cython.locals(info=WorkloadInfo)
    cpdef _outside_selector(self, _Queue queue)
    cpdef _namespace_selected(self, cq_name, namespace)   # (returns the answer it keeps)
    @cython.locals(node=QuotaNode)
    cpdef _evict(self, WorkloadInfo victim, _Entry entry, reason)
    cpdef _requeue_root(self, WorkloadInfo info)
    @cython.locals(victim=WorkloadInfo)
    cpdef _return_evicted(self, list victims)

cpdef tuple _found(targets)
cpdef list _by_borrowing_then_heap_order(list entries)
cpdef tuple _borrowing_then_heap_order(_Entry entry)
cpdef tuple _reading_pairs(kind, what, amount)
cpdef bint _reading_touches(frs, kind, what, amount)
@cython.locals(cached=tuple)
cpdef bint _reused_as_is(WorkloadInfo info, cq_name)
@cython.locals(info=WorkloadInfo)
cpdef bint _all_set_aside_as_is(list heads, _Queue queue, cq_name)
cpdef _share_verdict(WorkloadInfo info, WorkloadInfo failed)
