package main

// DRA: the workload controller's step for Workloads with resource claims (Kueue v0.19.2,
// pkg/controller/core/workload_controller.go, Reconcile, the `dra.NeedsDRAReconcile` branch),
// run with the functions that branch calls. A pending Workload whose pods use
// resourceClaims is not queued by the create/update events; the controller's Reconcile turns its
// ResourceClaimTemplates into the logical resources of the Configuration's deviceClassMappings
// (pkg/dra) and queues it with those requests (workload.WithPreprocessedDRAResources). Workloads
// holding quota are counted from status.admission (their resourceUsage) as before.

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8sresourcev1 "k8s.io/kubernetes/pkg/apis/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/dra"
	"sigs.k8s.io/kueue/pkg/features"
	utilresource "sigs.k8s.io/kueue/pkg/util/resource"
	"sigs.k8s.io/kueue/pkg/workload"
	workloadpatching "sigs.k8s.io/kueue/pkg/workload/patching"
)

// The resource.k8s.io/v1 kinds the DRA step reads: DeviceClasses (a class's
// extendedResourceName), ResourceClaimTemplates and ResourceClaims (what a pod set claims),
// ResourceSlices (the devices CEL selectors and partitionable devices are checked against).
var draKinds = map[string]bool{"DeviceClass": true, "ResourceClaimTemplate": true, "ResourceClaim": true, "ResourceSlice": true}
var namespacedDRAKinds = map[string]bool{"ResourceClaimTemplate": true, "ResourceClaim": true}

// addDRADefaults: the API server's defaults for resource.k8s.io/v1 (a device request's
// allocationMode ExactCount and count 1), Kubernetes' own defaulting functions.
func addDRADefaults(s *runtime.Scheme) {
	utilruntime.Must(k8sresourcev1.RegisterDefaults(s))
}

// draSetup: what Kueue's manager builds at start-up with KueueDRAIntegration on (cmd/kueue
// main.go): the mapper from the Configuration's deviceClassMappings and the cache of
// extended resources backed by DeviceClasses (filled by the workload controller's DeviceClass
// handler from each class's spec.extendedResourceName).
func draSetup(w *world) (*dra.ResourceMapper, *dra.ExtendedResourceCache, error) {
	if !features.Enabled(features.KueueDRAIntegration) {
		return nil, nil, nil
	}
	mapper := dra.NewResourceMapper()
	if len(w.deviceClassMappings) > 0 {
		if err := mapper.PopulateFromConfiguration(w.deviceClassMappings); err != nil {
			return nil, nil, err // Kueue's manager does not start ("Failed to initialize DRA mapper")
		}
	}
	backed := dra.NewExtendedResourceCache()
	for _, obj := range w.draObjects {
		if dc, ok := obj.(*resourcev1.DeviceClass); ok && dc.Spec.ExtendedResourceName != nil && *dc.Spec.ExtendedResourceName != "" {
			backed.Add(corev1.ResourceName(*dc.Spec.ExtendedResourceName), dc.Name)
		}
	}
	return mapper, backed, nil
}

// newDRAChannel: the queue manager's hand-over to the workload controller (AddLocalQueue sends
// every stored pending Workload that needs the DRA step). The controller's channel is buffered;
// here it holds every input Workload, so a send never blocks, and the harness reads it after
// the queues are set up (takeHandedOver).
func newDRAChannel(w *world) chan event.TypedGenericEvent[*kueue.Workload] {
	return make(chan event.TypedGenericEvent[*kueue.Workload], len(w.workloads)+1)
}

// takeHandedOver: empties the hand-over; returns the Workloads the queue manager handed to
// the DRA step since the last call, "ns/name", sorted.
func (h *harness) takeHandedOver() []string {
	var keys []string
	for {
		select {
		case e := <-h.draChannel:
			keys = append(keys, keyOf(e.Object))
		default:
			sort.Strings(keys)
			return keys
		}
	}
}

// needsDRA: the test the workload controller's events and the queue manager make before they
// leave a Workload to the DRA step.
func (h *harness) needsDRA(wl *kueue.Workload) bool {
	return dra.NeedsDRAReconcile(wl, h.draBacked)
}

// enqueue: a pending Workload goes to its queue, as the workload controller's event handlers
// put it there (AdjustResources, then AddOrUpdateWorkload), or, when it needs the DRA step, as
// its Reconcile does (reconcileDRA).
func (h *harness) enqueue(wl *kueue.Workload) {
	if h.needsDRA(wl) {
		h.reconcileDRA(wl)
		return
	}
	if workload.IsAdmissible(wl) {
		_ = h.queues.AddOrUpdateWorkload(h.log, h.adjusted(wl))
	}
}

// reconcileDRA: the DRA branch of the workload controller's Reconcile for a pending Workload,
// step for step with the calls it makes (v0.19.2): the rejection of resourceClaimName claims,
// dra.GetResourceRequestsForResourceClaimTemplates, dra.ResolveExtendedResourceQuota,
// dra.GetCounterResourcesForWorkload (the ResourceSlice API is served: resource.k8s.io/v1),
// the merge, and AddOrUpdateWorkload with workload.WithPreprocessedDRAResources. On an error
// the Workload's status gets Kueue's Misconfigured QuotaReserved condition and Requeued false,
// written with workloadpatching.PatchAdmissionStatus as the controller writes it.
// The controller reads the Workload from the API server; so does this.
func (h *harness) reconcileDRA(from *kueue.Workload) {
	ctx := h.ctx
	var wl kueue.Workload
	if err := h.client.Get(ctx, client.ObjectKeyFromObject(from), &wl); err != nil {
		return
	}
	if workload.Status(&wl) != workload.StatusPending || !h.needsDRA(&wl) {
		return
	}
	workload.AdjustResources(ctx, h.client, &wl)
	if workload.HasResourceClaim(&wl) {
		h.misconfigured(&wl, "KueueDRAIntegration feature does not support use of resource claims", "DRA resource claims not supported")
		return
	}
	sliceCache := dra.NewResourceSliceCache(h.client)
	draResources, errs := dra.GetResourceRequestsForResourceClaimTemplates(ctx, h.client, sliceCache, h.draMapper, &wl)
	if len(errs) > 0 {
		h.misconfiguredErrs(&wl, errs)
		return
	}
	var extended map[kueue.PodSetReference]corev1.ResourceList
	var replaced map[kueue.PodSetReference]sets.Set[corev1.ResourceName]
	if features.Enabled(features.KueueDRAIntegrationExtendedResource) {
		extended, replaced, errs = dra.ResolveExtendedResourceQuota(ctx, h.client, h.draMapper, &wl)
		if len(errs) > 0 {
			h.misconfiguredErrs(&wl, errs)
			return
		}
	}
	draResources = mergeDRAResources(draResources, extended)
	if features.Enabled(features.KueueDRAIntegrationPartitionableDevices) {
		counters, errs := dra.GetCounterResourcesForWorkload(ctx, h.client, sliceCache, h.draMapper, &wl)
		if len(errs) > 0 {
			h.misconfiguredErrs(&wl, errs)
			return
		}
		draResources = mergeDRAResources(draResources, counters)
	}
	// KueueDRAIntegrationConsumableCapacity is off by default in v0.19.2 (alpha): not run.

	// The controller drops a false QuotaReserved and a false Requeued condition from the copy it
	// queues (not from the stored object) once the DRA step succeeds.
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse {
		apimeta.RemoveStatusCondition(&wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	}
	if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadRequeued); c != nil && c.Status == metav1.ConditionFalse {
		apimeta.RemoveStatusCondition(&wl.Status.Conditions, kueue.WorkloadRequeued)
	}
	var opts []workload.InfoOption
	if len(draResources) > 0 || len(replaced) > 0 {
		opts = append(opts, workload.WithPreprocessedDRAResources(draResources, replaced))
	}
	if workload.IsAdmissible(&wl) {
		_ = h.queues.AddOrUpdateWorkload(h.log, wl.DeepCopy(), opts...)
	} else {
		h.cache.AddOrUpdateWorkload(h.log, wl.DeepCopy())
	}
}

func (h *harness) misconfiguredErrs(wl *kueue.Workload, errs field.ErrorList) {
	msg := errs.ToAggregate().Error()
	h.misconfigured(wl, msg, msg)
}

// misconfigured: the status the controller writes when the DRA step fails.
func (h *harness) misconfigured(wl *kueue.Workload, message, requeuedMessage string) {
	_ = workloadpatching.PatchAdmissionStatus(h.ctx, h.client, wl, h.clock, func(wl *kueue.Workload) (bool, error) {
		reason := workload.UnadmittedWorkloadReasonWithFallback(kueue.WorkloadQuotaReservedReasonMisconfigured, kueue.WorkloadInadmissible)
		updated := workload.UnsetQuotaReservationWithCondition(wl, reason, message, h.clock.Now())
		if updated && workload.SetRequeuedCondition(wl, kueue.WorkloadInadmissible, requeuedMessage, false) {
			updated = true
		}
		return updated, nil
	})
}

// mergeDRAResources: the controller's unexported helper of the same name, restated (it is not
// exported): per pod set, Kueue's resource.MergeResourceListKeepSum.
func mergeDRAResources(dst, src map[kueue.PodSetReference]corev1.ResourceList) map[kueue.PodSetReference]corev1.ResourceList {
	for podSetName, resources := range src {
		if existing, ok := dst[podSetName]; ok {
			dst[podSetName] = utilresource.MergeResourceListKeepSum(existing, resources)
		} else {
			if dst == nil {
				dst = make(map[kueue.PodSetReference]corev1.ResourceList)
			}
			dst[podSetName] = resources
		}
	}
	return dst
}

// resourceSliceDriverIndex: the field index Kueue's manager registers for ResourceSlices
// (core.SetupResourceSliceIndexer), which dra.ResourceSliceCache.ListByDriver lists by.
func resourceSliceDriverIndex(obj client.Object) []string {
	return []string{obj.(*resourcev1.ResourceSlice).Spec.Driver}
}
