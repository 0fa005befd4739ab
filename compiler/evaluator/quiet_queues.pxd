# Cython declarations for quiet_queues.py (read only by `make speedups`; the .py runs as it is
# without them): the checks a moment makes of its quiet queues, every
# cycle, are C calls with their locals typed.
cimport cython

from compiler.evaluator.answer_bounds cimport UsageBounds
from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.nomination_cache cimport Nomination
from compiler.evaluator.nominator cimport Entry
from compiler.evaluator.processing cimport EntryProcessor
from compiler.evaluator.queue_manager cimport PendingQueue


cdef class CheckedTrail:
    cdef public list trail
    cdef public object reader
    cdef public object state
    cdef public list nominations
    cdef public UsageBounds bounds
    cdef public bint watched
    cdef public Py_ssize_t entries

    cpdef bint holds(self, list heads)
    cpdef bint _reads_the_same(self)
    @cython.locals(info=WorkloadInfo, trail=list, nominations=list, index=Py_ssize_t)
    cpdef bint holds_again(self, list heads)


cdef class QuietQueues(EntryProcessor):
    @cython.locals(queue=PendingQueue, quiet=dict, checked=dict, versions=dict, last=CheckedTrail)
    cpdef _quiet_queues(self)
    @cython.locals(queue=PendingQueue, last=CheckedTrail)
    cpdef bint _still_quiet(self, name)
    @cython.locals(info=WorkloadInfo, scanned=set, asleep=set)
    cpdef _make_quiet(self, name, PendingQueue queue, list heads, last)
    cpdef _leave_quiet(self, name)
    cpdef Py_ssize_t _start(self, name)
    cpdef Py_ssize_t _last_turn(self, name, list heads)
    cpdef _requeue_quiet(self, name)
    @cython.locals(info=WorkloadInfo, frs=set, cached=Nomination)
    cpdef _trail_reader(self, name, list heads)
    cpdef Py_ssize_t _quiet_cycle(self)   # (a count of list entries: what len() gives)
    @cython.locals(queue=PendingQueue, last=CheckedTrail, versions=dict, start=Py_ssize_t)
    cpdef _check_polled(self, Py_ssize_t cycle)
    @cython.locals(queue=PendingQueue, start=Py_ssize_t)
    cpdef _check_crossed(self, list crossed, Py_ssize_t cycle)
    @cython.locals(queue=PendingQueue, info=WorkloadInfo, asleep=set, start=Py_ssize_t)
    cpdef _wake(self, name, cycles)
    @cython.locals(info=WorkloadInfo, entry=Entry)
    cpdef _walk_quiet(self, name, PendingQueue queue, list heads)
    cpdef _end_quiet(self)

@cython.locals(info=WorkloadInfo, inadmissible=dict)
cpdef bint _all_set_aside(list heads, PendingQueue queue)
