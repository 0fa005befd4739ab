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

    cpdef bint holds(self, list heads)
    cpdef bint _reads_the_same(self)
    @cython.locals(info=WorkloadInfo, trail=list, nominations=list, index=Py_ssize_t)
    cpdef bint holds_again(self, list heads)


cdef class QuietQueues(EntryProcessor):
    @cython.locals(queue=PendingQueue, quiet=dict, checked=dict, versions=dict, last=CheckedTrail)
    cpdef dict _quiet_queues(self)
    @cython.locals(info=WorkloadInfo, frs=set, cached=Nomination)
    cpdef _trail_reader(self, name, list heads)
    @cython.locals(last=CheckedTrail)
    cpdef Py_ssize_t _quiet_cycle(self)   # (a count of list entries: what len() gives)
    @cython.locals(queue=PendingQueue, info=WorkloadInfo, entry=Entry)
    cpdef _wake(self, name, cycles)
    cpdef _end_quiet(self)

@cython.locals(info=WorkloadInfo, inadmissible=dict)
cpdef bint _all_set_aside(list heads, PendingQueue queue)
