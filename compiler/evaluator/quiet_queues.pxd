# Cython declarations for quiet_queues.py (read only by `make speedups`; the .py runs as it is
# without them): the checks a moment makes of its quiet queues, every
# cycle, are C calls with their locals typed.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.nominator cimport Entry
from compiler.evaluator.queue_manager cimport PendingQueue
from compiler.evaluator.quiet_set cimport CheckedTrail, QuietSet


cdef class QuietQueues(QuietSet):
    @cython.locals(queue=PendingQueue, quiet=dict, checked=dict, versions=dict, last=CheckedTrail)
    cpdef _quiet_queues(self)
    @cython.locals(queue=PendingQueue, last=CheckedTrail)
    cpdef bint _still_quiet(self, name)
    cpdef Py_ssize_t _quiet_cycle(self)   # (a count of list entries: what len() gives)
    @cython.locals(queue=PendingQueue, last=CheckedTrail, versions=dict)
    cpdef _check_polled(self, Py_ssize_t cycle)
    @cython.locals(queue=PendingQueue)
    cpdef _check_crossed(self, list crossed, Py_ssize_t cycle)
    cpdef _answer_coming(self, name, PendingQueue queue, list heads, Py_ssize_t cycle)
    @cython.locals(queue=PendingQueue, info=WorkloadInfo, asleep=set, start=Py_ssize_t)
    cpdef _wake(self, name, cycles)
    @cython.locals(info=WorkloadInfo, entry=Entry)
    cpdef _walk_quiet(self, name, PendingQueue queue, list heads)
    cpdef _end_quiet(self)
