# Cython declarations for scheduler.py (read only by `make speedups`; the .py runs as it is
# without them): the cycle is a C call with its locals typed.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.nominator cimport Entry
from compiler.evaluator.queue_manager cimport PendingQueue
from compiler.evaluator.quiet_queues cimport QuietQueues


cdef class Scheduler(QuietQueues):
    cpdef _ordered(self, list entries)
    @cython.locals(queue=PendingQueue, info=WorkloadInfo, entries=list, inadmissible=list, entry=Entry)
    cpdef bint run_cycle(self)
    cpdef _requeue_finished(self)
    @cython.locals(queue=PendingQueue)
    cpdef _requeue_tree(self, root)
    @cython.locals(info=WorkloadInfo)
    cpdef _outside_selector(self, PendingQueue queue)

cpdef list _by_borrowing_then_heap_order(list entries)
cpdef tuple _borrowing_then_heap_order(Entry entry)
