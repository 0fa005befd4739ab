# Cython declarations for queue_manager.py (read only by `make speedups`; the .py runs as it is
# without them): a queue's heap and sets are C struct members, its
# methods C calls.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo


cdef class PendingQueue:
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

