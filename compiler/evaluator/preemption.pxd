# Cython declarations for preemption.py (read only by `make speedups`; the .py runs as it is
# without them): the preemptor's fields as C struct members, and its questions (the targets
# of a request, mostly answered from what it keeps) C calls.
cimport cython

from compiler.evaluator.info cimport WorkloadInfo
from compiler.evaluator.preemption_common cimport Snapshot

cdef class KeptAnswer:
    cdef public object reader
    cdef public object state
    cdef public tuple answer
    cdef public object reads


cdef class Preemptor:
    cdef public Snapshot snapshot
    # (the constructor's arguments as given, as Python keeps them: not C bools)
    cdef public object fair_sharing
    cdef public object reuse
    cdef public object _reuse
    cdef public dict _answers
    cdef public dict _capped
    cdef public dict _creation
    cdef public object _classical
    cdef public object _fair
    cdef public object strategy
    cdef public object _at_commit

    cpdef targets(self, WorkloadInfo preemptor, cq_name, frs, usage, tuple tas=*)
    cpdef pair_targets(self, WorkloadInfo preemptor, cq_name, fr, quantity)
    @cython.locals(capped=KeptAnswer, cached=KeptAnswer)
    cpdef _kept(self, tuple key)
    @cython.locals(cached=KeptAnswer)
    cpdef _answer(self, tuple key, WorkloadInfo preemptor, cq_name, contested, usage, tuple tas=*)
    cpdef compares_creation(self, cq_name)   # (returns the answer it keeps)


cdef class _AtCommit:
    cdef public Preemptor _preemptor
