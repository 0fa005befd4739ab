# Cython declarations for engine.py (read only by `make speedups`; the .py runs as it is
# without them): the run modes and the live API are C calls with their locals
# typed.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.queue_manager cimport PendingQueue
from compiler.evaluator.scheduler cimport Scheduler
from compiler.evaluator.tree cimport QuotaNode


cdef class Engine(Scheduler):
    cpdef WorkloadInfo submit(self, workload)
    @cython.locals(info=WorkloadInfo, node=QuotaNode)
    cpdef finish(self, key)
    @cython.locals(info=WorkloadInfo)
    cpdef run_moment(self, repeats=*)
    @cython.locals(info=WorkloadInfo, admitted=list)
    cpdef _settle_admission_order(self)
    @cython.locals(queue=PendingQueue, info=WorkloadInfo)
    cpdef rescan(self, bint quiet=*)
