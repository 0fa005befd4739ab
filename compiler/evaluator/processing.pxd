# Cython declarations for processing.py (read only by `make speedups`; the .py runs as it is
# without them): the processing of every head, and the updates it
# makes, are C calls with their locals typed.
cimport cython

from compiler.evaluator.assigner cimport Assignment, PodSetAssignment
from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.nomination_cache cimport CachedNominator
from compiler.evaluator.nominator cimport Entry
from compiler.evaluator.queue_manager cimport PendingQueue
from compiler.evaluator.tree cimport QuotaNode


cdef class EntryProcessor(CachedNominator):
    @cython.locals(entry=Entry, queue=PendingQueue, info=WorkloadInfo)
    cpdef bint _requeue_entries(self, list entries)
    cpdef bint _reserves(self, cq_name)
    @cython.locals(info=WorkloadInfo, node=QuotaNode, assignment=Assignment)
    cpdef bint _process(self, Entry entry, dict preempted, list temporary, list preemptors)
    @cython.locals(ps=PodSetAssignment)
    cpdef _remember_scan(self, WorkloadInfo info, cq_name, Assignment assignment)
    @cython.locals(node=QuotaNode)
    cpdef _admit(self, WorkloadInfo info, cq_name, Assignment assignment)
    @cython.locals(node=QuotaNode)
    cpdef _evict(self, WorkloadInfo victim, Entry entry, reason)
    cpdef _requeue_root(self, WorkloadInfo info)
    @cython.locals(victim=WorkloadInfo)
    cpdef _return_evicted(self, list victims)
    @cython.locals(info=WorkloadInfo, queue=PendingQueue)
    cpdef bint _requeue(self, Entry entry)
