# Cython declarations for quiet_set.py (read only by `make speedups`; the .py runs as it is
# without them): the quiet queues join, leave and are requeued at every moment and every quota
# release, C calls with their locals typed.
cimport cython

from compiler.evaluator.answer_bounds cimport UsageBounds
from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.nomination_cache cimport Nomination
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


cdef class QuietSet(EntryProcessor):
    @cython.locals(info=WorkloadInfo, scanned=set, asleep=set)
    cpdef _make_quiet(self, name, PendingQueue queue, list heads, last)
    cpdef _leave_quiet(self, name)
    cpdef Py_ssize_t _start(self, name)
    cpdef Py_ssize_t _last_turn(self, name, list heads)
    cpdef _requeue_quiet(self, name)
    cpdef _unorder(self, name, list heads)
    @cython.locals(info=WorkloadInfo, frs=set, cached=Nomination)
    cpdef _trail_reader(self, name, list heads)

@cython.locals(info=WorkloadInfo, inadmissible=dict)
cpdef bint _all_set_aside(list heads, PendingQueue queue)
