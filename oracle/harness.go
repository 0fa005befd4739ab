package main

// The harness: Kueue's scheduler, cache and queue manager wired to a fake API client the way
// Kueue's own scheduler unit tests wire them (pkg/scheduler/scheduler_test.go), plus the few
// reactions of Kueue's controllers that a scheduling cycle relies on (see README "Harness
// choices"). Every admission, flavor, preemption and ordering decision is Kueue's code.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	coreindexer "sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/dra"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utilpriority "sigs.k8s.io/kueue/pkg/util/priority"
	"sigs.k8s.io/kueue/pkg/util/routine"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/util/wait"
	"sigs.k8s.io/kueue/pkg/workload"
	workloadevict "sigs.k8s.io/kueue/pkg/workload/evict"
)

// Scheduler.schedule is one scheduling cycle. Kueue only exposes Start(), which loops it in a
// goroutine with back-off; an offline oracle has to run cycles one at a time and know when each
// ends, exactly as Kueue's unit tests do (they call it from inside the package). Pulling the
// unexported method by its linker name is the only way to do that from outside the package
// without copying Kueue's code.
//
//go:linkname scheduleCycle sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).schedule
func scheduleCycle(s *scheduler.Scheduler, ctx context.Context) wait.SpeedSignal

// The admission API patch runs in a goroutine; Kueue's tests swap the wrapper to wait for it
// at the end of the cycle, and so does the oracle.
//
//go:linkname setAdmissionRoutineWrapper sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).setAdmissionRoutineWrapper
func setAdmissionRoutineWrapper(s *scheduler.Scheduler, w routine.Wrapper)

type requeuer interface {
	ProcessRequeues(ctx context.Context) int
}

type harness struct {
	ctx      context.Context
	log      logr.Logger
	client   client.Client
	cache    *schdcache.Cache
	queues   *qcache.Manager
	requeuer requeuer
	sched    *scheduler.Scheduler
	clock    *testingclock.FakeClock
	recorder *recorder
	wg       sync.WaitGroup

	world         *world
	keys          []string // every input workload, "ns/name", sorted
	initiallyHeld map[string]bool
	evicted       map[string]bool   // evicted by this evaluation at least once
	preemptedBy   map[string]string // victim -> preemptor of its last preemption
	last          map[string]*kueue.Workload
	touchedMu     sync.Mutex
	touched       map[string]bool            // Workloads written by Kueue's code in the current cycle
	evictedFrom   map[string]string          // victim -> the ClusterQueue it was evicted from
	borrowing     map[string]bool            // admitted by this evaluation while its ClusterQueue borrowed
	invalid       map[string]string          // Workloads the API server would refuse -> why
	draMapper     *dra.ResourceMapper        // dra.go
	draBacked     *dra.ExtendedResourceCache // dra.go
	draChannel    chan event.TypedGenericEvent[*kueue.Workload]
	warn          io.Writer
	cycles        int
}

func (h *harness) warnf(format string, args ...interface{}) {
	fmt.Fprintf(h.warn, "kueue-oracle: warning: "+format+"\n", args...)
}

// recorder keeps the events Kueue's code records; the "PreemptedWorkload" event is the only
// place that names both the preemptor and its victim.
type recorder struct {
	mu     sync.Mutex
	victim map[string]string
}

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, _, reason, _, _ string, args ...interface{}) {
	if reason != "PreemptedWorkload" || len(args) == 0 {
		return
	}
	obj, ok := regarding.(metav1.Object)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.victim[fmt.Sprint(args[0])] = obj.GetNamespace() + "/" + obj.GetName()
}

type syncWrapper struct{ h *harness }

func (w syncWrapper) Run(f func()) {
	w.h.wg.Add(1)
	go func() {
		defer w.h.wg.Done()
		f()
	}()
}

// startTime: after every creationTimestamp and condition time in the input, so that Kueue's clock never runs
// behind the objects it reads; whole seconds, as the API server stores times.
func startTime(w *world) time.Time {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, wl := range w.workloads {
		for _, t := range workloadTimes(wl) { // clock.go
			if t.After(start) {
				start = t
			}
		}
	}
	return start.Add(time.Minute).Truncate(time.Second)
}

func newHarness(ctx context.Context, w *world, warn io.Writer) (*harness, error) {
	fairSharing := w.fairSharing != nil
	h := &harness{
		ctx: ctx, log: logr.Discard(), world: w,
		clock:         testingclock.NewFakeClock(startTime(w)),
		recorder:      &recorder{victim: map[string]string{}},
		initiallyHeld: map[string]bool{}, evicted: map[string]bool{}, preemptedBy: map[string]string{},
		last: map[string]*kueue.Workload{}, evictedFrom: map[string]string{}, borrowing: map[string]bool{},
		touched: map[string]bool{},
		invalid: w.invalid, warn: warn,
	}
	workloadsForJobs(ctx, w, warn)
	separateTies(w.workloads)
	ensureNamespaces(w)
	if err := resolvePriorities(ctx, w); err != nil {
		return nil, err
	}
	objs := []client.Object{}
	for _, ns := range w.namespaces {
		objs = append(objs, ns)
	}
	for _, pc := range w.priorityClasses {
		objs = append(objs, pc)
	}
	for _, pc := range w.podPriorities {
		objs = append(objs, pc)
	}
	for _, rf := range w.flavors {
		objs = append(objs, rf)
	}
	for _, c := range w.cohorts {
		objs = append(objs, c)
	}
	for _, cq := range w.clusterQueues {
		objs = append(objs, cq)
	}
	for _, lq := range w.localQueues {
		objs = append(objs, lq)
	}
	for _, wl := range w.workloads {
		objs = append(objs, wl)
	}
	objs = append(objs, w.draObjects...)
	for _, t := range w.topologies {
		objs = append(objs, t)
	}
	for _, n := range w.nodes {
		objs = append(objs, n)
	}
	var err error
	if h.draMapper, h.draBacked, err = draSetup(w); err != nil {
		return nil, fmt.Errorf("resources.deviceClassMappings: %v", err)
	}
	h.client = utiltesting.NewClientBuilder().
		WithObjects(objs...).
		WithIndex(&resourcev1.ResourceSlice{}, "spec.driver", resourceSliceDriverIndex).
		WithIndex(&resourcev1.DeviceClass{}, coreindexer.DeviceClassExtendedResourceNameIndex, coreindexer.IndexDeviceClassExtendedResourceName).
		WithStatusSubresource(&kueue.Workload{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				h.touch(obj)
				return utiltesting.TreatSSAAsStrategicMerge(ctx, c, sub, obj, patch, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				h.touch(obj)
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				h.touch(obj)
				return c.Patch(ctx, obj, patch, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				h.touch(obj)
				return c.Update(ctx, obj, opts...)
			},
		}).
		Build()
	store := preemptexpectations.New()
	h.cache = schdcache.New(h.client, schdcache.WithFairSharing(fairSharing))
	queueOpts := []qcache.Option{qcache.WithPreemptionExpectations(store)}
	if h.draBacked != nil {
		queueOpts = append(queueOpts, qcache.WithDRABackedResources(h.draBacked))
	}
	queues, rq := qcache.NewManagerForUnitTestsWithRequeuer(h.client, h.cache, queueOpts...)
	h.queues, h.requeuer = queues, rq
	// Workloads with DRA resource claims are handed by the queue manager to the workload
	// controller's DRA step (dra.go) instead of being queued; the step queues them with the
	// device-class resources Kueue computes.
	h.draChannel = newDRAChannel(w)
	h.queues.SetDRAReconcileChannel(h.draChannel)
	if err := h.addQueues(); err != nil {
		return nil, err
	}
	// What AddLocalQueue handed over is reconciled in addWorkloads, once per Workload (the
	// controller's work queue merges the hand-over with the Workload's own events).
	h.takeHandedOver()
	h.addWorkloads()
	// A live queue manager's requeuer handles the notifications the set-up raised (queues
	// added, workloads queued) before the scheduler's first cycle, not after it.
	h.requeuer.ProcessRequeues(h.ctx)
	opts := []scheduler.Option{scheduler.WithClock(nil, h.clock), scheduler.WithPreemptionExpectations(store)}
	if fairSharing {
		opts = append(opts, scheduler.WithFairSharing(w.fairSharing))
	}
	if w.quotaCheck != "" {
		opts = append(opts, scheduler.WithQuotaCheckStrategy(w.quotaCheck))
	}
	h.sched = scheduler.New(h.queues, h.cache, h.client, h.recorder, opts...)
	setAdmissionRoutineWrapper(h.sched, syncWrapper{h})
	return h, nil
}

// separateTies: Kueue orders pending Workloads by priority, then creation time; where two are
// created in the same second, its per-cycle order falls to Go map iteration (random). The oracle
// must print the same bytes for the same input, so same-second Workloads are moved apart by
// whole seconds in `evaluate`'s tie order (creationTimestamp, uid, namespace/name), keeping
// every other order unchanged.
func separateTies(wls []*kueue.Workload) {
	sorted := append([]*kueue.Workload{}, wls...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.UID != b.UID {
			return a.UID < b.UID
		}
		return keyOf(a) < keyOf(b)
	})
	var last time.Time
	for i, wl := range sorted {
		t := wl.CreationTimestamp.Time.Truncate(time.Second)
		if i > 0 && !t.After(last) {
			t = last.Add(time.Second)
		}
		wl.CreationTimestamp = metav1.NewTime(t)
		last = t
	}
}

// ensureNamespaces: the API server has every namespace a LocalQueue or Workload lives in, each
// labelled kubernetes.io/metadata.name; `evaluate` assumes the same for namespaces the input
// does not list.
func ensureNamespaces(w *world) {
	have := map[string]*corev1.Namespace{}
	for _, ns := range w.namespaces {
		have[ns.Name] = ns
	}
	need := []string{}
	for _, lq := range w.localQueues {
		need = append(need, lq.Namespace)
	}
	for _, wl := range w.workloads {
		need = append(need, wl.Namespace)
	}
	sort.Strings(need)
	for _, name := range need {
		if _, ok := have[name]; !ok {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			have[name] = ns
			w.namespaces = append(w.namespaces, ns)
		}
	}
	for _, ns := range w.namespaces {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
}

// resolvePriorities: a Workload's spec.priority is filled by whoever creates it (Kueue's job
// integrations) from its priority class; a bare Workload that names a class and no number gets
// the number here, through Kueue's own lookup.
func resolvePriorities(ctx context.Context, w *world) error {
	lookup := lookupClient(w)
	for _, wl := range w.workloads {
		if wl.Spec.Priority != nil || wl.Spec.PriorityClassRef == nil {
			continue
		}
		ref := wl.Spec.PriorityClassRef
		var value int32
		var err error
		if ref.Kind == "PriorityClass" || ref.Group == "scheduling.k8s.io" {
			_, value, err = utilpriority.GetPriorityFromPriorityClass(ctx, lookup, ref.Name)
		} else {
			_, value, err = utilpriority.GetPriorityFromWorkloadPriorityClass(ctx, lookup, ref.Name)
		}
		if err != nil {
			value = 0 // a missing class: priority 0, as `evaluate` does
		}
		wl.Spec.Priority = &value
	}
	return nil
}

// lookupClient holds the priority classes, for Kueue's priority lookups before the world exists.
func lookupClient(w *world) client.Client {
	objs := []client.Object{}
	for _, pc := range w.priorityClasses {
		objs = append(objs, pc)
	}
	for _, pc := range w.podPriorities {
		objs = append(objs, pc)
	}
	return utiltesting.NewClientBuilder(jobsetapi.AddToScheme).WithObjects(objs...).Build()
}

// addQueues replays what Kueue's controllers do on start-up: flavors and cohorts into the cache,
// ClusterQueues and LocalQueues into both the cache and the queue manager (which list the
// Workloads already stored, as after a controller restart).
func (h *harness) addQueues() error {
	w := h.world
	h.addTopologyInputs() // tas.go
	for _, rf := range w.flavors {
		h.cache.AddOrUpdateResourceFlavor(h.log, rf.DeepCopy())
	}
	for _, c := range w.cohorts {
		if err := h.cache.AddOrUpdateCohort(c.DeepCopy()); err != nil {
			// Kueue's cohort controller logs this and goes on; the queues in the cycle are inactive.
			h.warnf("Cohort %s: %v", c.Name, err)
		}
		h.queues.AddOrUpdateCohort(h.ctx, c.DeepCopy())
	}
	for _, cq := range w.clusterQueues {
		if err := h.cache.AddClusterQueue(h.ctx, cq.DeepCopy()); err != nil {
			h.warnf("ClusterQueue %s: %v", cq.Name, err)
		}
		if err := h.queues.AddClusterQueue(h.ctx, cq.DeepCopy()); err != nil {
			return fmt.Errorf("ClusterQueue %s: %v", cq.Name, err)
		}
	}
	for _, lq := range w.localQueues {
		_ = h.cache.AddLocalQueue(lq.DeepCopy())
		if err := h.queues.AddLocalQueue(h.ctx, lq.DeepCopy()); err != nil {
			return fmt.Errorf("LocalQueue %s/%s: %v", lq.Namespace, lq.Name, err)
		}
	}
	return nil
}

// addWorkloads: the workload controller's create event (pending -> queue manager, holding quota
// -> cache), in the order the objects were created. A pending Workload that needs the DRA step
// is skipped by the create event and reconciled instead (dra.go), once, whether the queue
// manager handed it over (AddLocalQueue) or not (its LocalQueue is missing).
func (h *harness) addWorkloads() {
	list := h.listWorkloads()
	sort.SliceStable(list, func(i, j int) bool {
		return list[i].CreationTimestamp.Before(&list[j].CreationTimestamp)
	})
	for _, wl := range list {
		key := keyOf(wl)
		h.keys = append(h.keys, key)
		if workload.HasQuotaReservation(wl) {
			h.initiallyHeld[key] = true
			h.cache.AddOrUpdateWorkload(h.log, h.adjusted(wl))
			h.borrowing[key] = h.borrowsNow(wl)
		} else {
			h.enqueue(wl)
		}
		h.last[key] = wl.DeepCopy()
	}
	sort.Strings(h.keys)
}

// adjusted: the copy the workload controller hands to the cache and queues, after Kueue's own
// request adjustments (RuntimeClass overhead, LimitRange defaults, limits as missing requests).
func (h *harness) adjusted(wl *kueue.Workload) *kueue.Workload {
	c := wl.DeepCopy()
	workload.AdjustResources(h.ctx, h.client, c)
	return c
}

func keyOf(wl *kueue.Workload) string { return wl.Namespace + "/" + wl.Name }

func (h *harness) listWorkloads() []*kueue.Workload {
	var list kueue.WorkloadList
	if err := h.client.List(h.ctx, &list); err != nil {
		panic(err) // the fake client lists from memory
	}
	out := make([]*kueue.Workload, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Slice(out, func(i, j int) bool { return keyOf(out[i]) < keyOf(out[j]) })
	return out
}

// hasHeads: Heads() blocks while every active ClusterQueue's heap is empty; the cycle is only
// run when Kueue would not block.
func (h *harness) hasHeads() bool {
	for cq, members := range h.queues.Dump() {
		if len(members) > 0 && h.cache.ClusterQueueActive(cq) {
			return true
		}
	}
	return false
}

// cycle runs one scheduling cycle and the controller reactions that follow it: whether there
// was anything to schedule, and whether a Workload changed.
func (h *harness) cycle() (ran, changed bool) {
	if !h.hasHeads() {
		return false, false
	}
	h.cycles++
	h.clock.Step(time.Second)
	scheduleCycle(h.sched, h.ctx)
	h.wg.Wait()
	h.clock.Step(time.Second)
	return true, h.reactToUpdates()
}

// reactToUpdates plays the workload and job controllers' part for every Workload the cycle
// wrote (see README "Harness choices"), in namespace/name order, and says whether any of them
// changed in a way the output or a later cycle depends on.
func (h *harness) reactToUpdates() bool {
	changed := false
	for _, key := range h.takeTouched() {
		var wl kueue.Workload
		ns, name, _ := strings.Cut(key, "/")
		if err := h.client.Get(h.ctx, client.ObjectKey{Namespace: ns, Name: name}, &wl); err != nil {
			continue
		}
		prev := h.last[key]
		if signature(&wl) != signature(prev) {
			changed = true
		}
		switch {
		case workloadevict.IsEvicted(&wl) && workload.HasQuotaReservation(&wl):
			h.finishEviction(&wl)
			continue
		case workload.HasQuotaReservation(&wl) && !workload.HasQuotaReservation(prev):
			h.queues.DeleteWorkload(h.log, workload.Key(&wl))
			h.cache.AddOrUpdateWorkload(h.log, h.adjusted(&wl))
			h.borrowing[key] = h.borrowsNow(&wl)
		case !workload.HasQuotaReservation(&wl) && !workload.HasQuotaReservation(prev) &&
			wl.ResourceVersion != prev.ResourceVersion:
			h.enqueue(&wl) // a Workload with claims: the DRA step again, as its Reconcile runs it
		}
		h.last[key] = wl.DeepCopy()
	}
	h.requeuer.ProcessRequeues(h.ctx)
	return changed
}

// touch records a Workload Kueue's code wrote through the API client (from the scheduler's
// goroutines too), so that only those are looked at after the cycle.
func (h *harness) touch(obj client.Object) {
	if _, ok := obj.(*kueue.Workload); !ok {
		return
	}
	h.touchedMu.Lock()
	h.touched[obj.GetNamespace()+"/"+obj.GetName()] = true
	h.touchedMu.Unlock()
}

func (h *harness) takeTouched() []string {
	h.touchedMu.Lock()
	defer h.touchedMu.Unlock()
	keys := make([]string, 0, len(h.touched))
	for key := range h.touched {
		if _, known := h.last[key]; known {
			keys = append(keys, key)
		}
	}
	h.touched = map[string]bool{}
	sort.Strings(keys)
	return keys
}

// signature: what of a Workload the output or a later cycle depends on.
func signature(wl *kueue.Workload) string {
	var b strings.Builder
	if wl.Status.Admission != nil {
		adm, _ := json.Marshal(wl.Status.Admission)
		fmt.Fprintf(&b, "adm:%s", adm)
	}
	for _, c := range wl.Status.Conditions {
		fmt.Fprintf(&b, "|%s=%s:%s:%s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// finishEviction: what Kueue's job reconciler does once the job of an evicted Workload has
// stopped (jobframework reconciler: Requeued condition, quota reservation cleared), then the
// workload controller's update event for "quota reserved -> pending": the quota goes back to
// the cache and the Workload back to its queue, and the inadmissible Workloads of its cohort
// are requeued.
func (h *harness) finishEviction(wl *kueue.Workload) {
	key := keyOf(wl)
	h.evictedFrom[key] = string(wl.Status.Admission.ClusterQueue)
	delete(h.borrowing, key)
	evCond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	// The job reconciler writes this with a server-side apply that drops status.admission; the
	// fake client's stand-in for apply (a strategic merge) cannot drop a field, so the same
	// content is written with a status update.
	setRequeued := evCond.Reason == kueue.WorkloadEvictedByPreemption
	workload.SetRequeuedCondition(wl, evCond.Reason, evCond.Message, setRequeued)
	reason := workload.UnadmittedWorkloadReasonWithFallback(
		kueue.WorkloadQuotaReservedReasonPendingEvaluation, kueue.WorkloadPending) //nolint:staticcheck
	workload.UnsetQuotaReservationWithCondition(wl, reason, evCond.Message, h.clock.Now())
	if err := h.client.Status().Update(h.ctx, wl); err != nil {
		panic(err)
	}
	var fresh kueue.Workload
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(wl), &fresh); err != nil {
		panic(err)
	}
	h.evicted[key] = true
	h.recorder.mu.Lock()
	if by, ok := h.recorder.victim[key]; ok {
		h.preemptedBy[key] = by
	}
	h.recorder.mu.Unlock()
	wlKey := workload.Key(&fresh)
	needsDRA := h.needsDRA(&fresh)
	h.queues.QueueAssociatedInadmissibleWorkloadsAfter(h.ctx, wlKey, func() {
		_ = h.cache.DeleteWorkload(h.log, wlKey)
		// The immediate requeue skips a Workload with claims: its Reconcile queues it (below).
		if !needsDRA && workload.IsAdmissible(&fresh) {
			_ = h.queues.AddOrUpdateWorkloadWithoutLock(h.log, h.adjusted(&fresh))
		}
	})
	if needsDRA {
		h.reconcileDRA(&fresh)
	}
	h.last[key] = fresh.DeepCopy()
}

// heapSignature: which Workloads wait in which ClusterQueue's heap (not the inadmissible
// lists): a cycle that moves one changes what the next cycle sees.
func heapSignature(dump map[kueue.ClusterQueueReference][]workload.Reference) string {
	lines := make([]string, 0, len(dump))
	for cq, members := range dump {
		ms := make([]string, len(members))
		for i, m := range members {
			ms[i] = string(m)
		}
		sort.Strings(ms)
		lines = append(lines, string(cq)+" "+strings.Join(ms, ","))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// run: `cycles` cycles, or until a cycle changes nothing (the Python engine's meaning), with
// the same cap of 8 x workloads + 100 cycles. Returns whether the evaluation converged.
func (h *harness) run(cycles int) bool {
	if cycles > 0 {
		for i := 0; i < cycles; i++ {
			if ran, _ := h.cycle(); !ran {
				h.cycles++ // a cycle with nothing to schedule still counts, as in `evaluate`
			}
		}
		return true
	}
	limit := 8*len(h.keys) + 100
	heaps := h.queueSignature() // quiesce.go: heaps and flavor-scan positions
	for h.cycles < limit {
		ran, changed := h.cycle()
		if !ran {
			return true
		}
		after := h.queueSignature()
		if !changed && after == heaps {
			return true
		}
		heaps = after
	}
	return false
}

// borrowsNow: Kueue keeps no per-Workload "borrowing" flag after admission; right after the
// cycle that admitted it, the Workload borrows when its ClusterQueue's usage of one of the
// flavor/resources it was given exceeds the nominal quota (Kueue's cache's own "borrowed").
func (h *harness) borrowsNow(wl *kueue.Workload) bool {
	_, borrowed := h.clusterQueueUsage()
	cq := string(wl.Status.Admission.ClusterQueue)
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		for res, flavor := range psa.Flavors {
			if _, b := borrowed[cq][string(flavor)][string(res)]; b {
				return true
			}
		}
	}
	return false
}
