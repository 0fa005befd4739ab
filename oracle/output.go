package main

// The `kueue-policy evaluate --format json` contract, filled from Kueue's own state: the
// Workloads as the fake API server holds them after the last cycle, and each ClusterQueue's
// usage as Kueue's cache reports it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

type workloadOut struct {
	Name         string                       `json:"name"`
	ClusterQueue *string                      `json:"clusterQueue"`
	Status       string                       `json:"status"`
	Assignment   map[string]map[string]string `json:"assignment"`
	Count        map[string]int32             `json:"count"`
	Borrowing    bool                         `json:"borrowing"`
	Reason       string                       `json:"reason"`
	PreemptedBy  *string                      `json:"preemptedBy"`
	// Per pod set placed by Topology Aware Scheduling (tas.go); absent without TAS, so the
	// layout of every other evaluation is unchanged.
	TopologyAssignment map[string]*topologyOut `json:"topologyAssignment,omitempty"`
}

type clusterQueueOut struct {
	Name     string                       `json:"name"`
	Usage    map[string]map[string]string `json:"usage"`
	Borrowed map[string]map[string]string `json:"borrowed"`
}

type resultOut struct {
	Workloads     []workloadOut     `json:"workloads"`
	ClusterQueues []clusterQueueOut `json:"clusterQueues"`
}

// Reasons Kueue gives a pending Workload that no cycle can change: only an edit to some object
// can (the same set `evaluate` calls inadmissible).
var inadmissibleReasons = map[string]bool{
	kueue.WorkloadQuotaReservedReasonNoMatchingFlavor: true,
	kueue.WorkloadQuotaReservedReasonExceedsMaxQuota:  true,
	kueue.WorkloadQuotaReservedReasonMisconfigured:    true,
	kueue.WorkloadQuotaReservedReasonSuspended:        true,
	kueue.WorkloadInadmissible:                        true,
	"Inactive":                                        true,
}

func (h *harness) result() ([]byte, error) {
	usage, borrowed := h.clusterQueueUsage()
	out := resultOut{Workloads: []workloadOut{}, ClusterQueues: []clusterQueueOut{}}
	byKey := map[string]*kueue.Workload{}
	for _, wl := range h.listWorkloads() {
		byKey[keyOf(wl)] = wl
	}
	keys := append([]string{}, h.keys...)
	for key := range h.invalid {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if why, bad := h.invalid[key]; bad {
			out.Workloads = append(out.Workloads, workloadOut{Name: key, Status: "inadmissible", Reason: why,
				Assignment: map[string]map[string]string{}, Count: map[string]int32{}})
			continue
		}
		out.Workloads = append(out.Workloads, h.outcome(byKey[key]))
	}
	names := make([]string, 0, len(usage))
	for name := range usage {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out.ClusterQueues = append(out.ClusterQueues, clusterQueueOut{Name: name, Usage: usage[name], Borrowed: borrowed[name]})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (h *harness) outcome(wl *kueue.Workload) workloadOut {
	key := keyOf(wl)
	o := workloadOut{Name: key, Assignment: map[string]map[string]string{}, Count: map[string]int32{}}
	if workload.HasQuotaReservation(wl) {
		cq := string(wl.Status.Admission.ClusterQueue)
		o.ClusterQueue = &cq
		o.Status = "admitted"
		if h.initiallyHeld[key] && !h.evicted[key] {
			o.Status = "running"
		}
		o.Borrowing = h.borrowing[key]
		for _, psa := range wl.Status.Admission.PodSetAssignments {
			flavors := map[string]string{}
			for res, flavor := range psa.Flavors {
				flavors[string(res)] = string(flavor)
			}
			o.Assignment[string(psa.Name)] = flavors
			if psa.Count != nil {
				o.Count[string(psa.Name)] = *psa.Count
			}
			if ta := topologyAssignmentOut(psa.TopologyAssignment); ta != nil {
				if o.TopologyAssignment == nil {
					o.TopologyAssignment = map[string]*topologyOut{}
				}
				o.TopologyAssignment[string(psa.Name)] = ta
			}
		}
		o.Reason = "Quota reserved in ClusterQueue " + cq
		if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Message != "" {
			o.Reason = c.Message
		}
		return o
	}
	if cq, _ := h.queues.ClusterQueueForWorkload(wl); cq != "" {
		name := string(cq)
		o.ClusterQueue = &name
	}
	if by, ok := h.preemptedBy[key]; ok {
		if from := h.evictedFrom[key]; from != "" {
			o.ClusterQueue = &from
		}
		o.Status = "preempted"
		o.PreemptedBy = &by
		if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted); c != nil {
			o.Reason = c.Message
		}
		return o
	}
	reason, message := h.queueBlocker(wl)
	if reason == "" {
		if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil {
			reason, message = c.Reason, c.Message
		} else {
			reason, message = kueue.WorkloadPending, "Waiting to be scheduled" //nolint:staticcheck
		}
	}
	o.Status = "pending"
	if inadmissibleReasons[reason] {
		o.Status = "inadmissible"
	}
	o.Reason = message
	return o
}

// queueBlocker restates the messages of Kueue's workload controller (getQueueBlocker, an
// unexported method of its reconciler) for a Workload whose queue cannot take it; the scheduler
// never sees such a Workload, so no cycle writes a condition for it.
func (h *harness) queueBlocker(wl *kueue.Workload) (string, string) {
	if !workload.IsActive(wl) {
		return "Inactive", "The workload is deactivated"
	}
	if !h.queues.QueueForWorkloadExists(wl) {
		return kueue.WorkloadQuotaReservedReasonMisconfigured, fmt.Sprintf("LocalQueue %s doesn't exist", wl.Spec.QueueName)
	}
	cq, _ := h.queues.ClusterQueueForWorkload(wl)
	if !h.clusterQueueExists(cq) {
		return kueue.WorkloadQuotaReservedReasonMisconfigured, fmt.Sprintf("ClusterQueue %s doesn't exist", cq)
	}
	if !h.cache.ClusterQueueActive(cq) {
		return kueue.WorkloadQuotaReservedReasonSuspended, fmt.Sprintf("ClusterQueue %s is inactive", cq)
	}
	return "", ""
}

func (h *harness) clusterQueueExists(name kueue.ClusterQueueReference) bool {
	for _, cq := range h.world.clusterQueues {
		if cq.Name == string(name) {
			return true
		}
	}
	return false
}

// clusterQueueUsage: Kueue's cache's own report (the one it writes to ClusterQueue status).
func (h *harness) clusterQueueUsage() (map[string]map[string]map[string]string, map[string]map[string]map[string]string) {
	usage := map[string]map[string]map[string]string{}
	borrowed := map[string]map[string]map[string]string{}
	for _, cq := range h.world.clusterQueues {
		stats, err := h.cache.Usage(cq)
		if err != nil {
			continue
		}
		u := map[string]map[string]string{}
		b := map[string]map[string]string{}
		for _, fu := range stats.ReservedResources {
			for _, ru := range fu.Resources {
				if u[string(fu.Name)] == nil {
					u[string(fu.Name)] = map[string]string{}
				}
				u[string(fu.Name)][string(ru.Name)] = formatUnits(ru.Name, ru.Total)
				if !ru.Borrowed.IsZero() {
					if b[string(fu.Name)] == nil {
						b[string(fu.Name)] = map[string]string{}
					}
					b[string(fu.Name)][string(ru.Name)] = formatUnits(ru.Name, ru.Borrowed)
				}
			}
		}
		usage[cq.Name] = u
		borrowed[cq.Name] = b
	}
	return usage, borrowed
}

var binarySuffixes = []struct {
	suffix string
	factor int64
}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}

// formatUnits prints a quantity the way `evaluate` prints it (cpu in cores or millicores,
// memory-like resources in the largest exact binary unit, anything else as an integer).
func formatUnits(name corev1.ResourceName, q resource.Quantity) string {
	if name == corev1.ResourceCPU {
		m := q.MilliValue()
		if m%1000 == 0 {
			return fmt.Sprint(m / 1000)
		}
		return fmt.Sprintf("%dm", m)
	}
	v := q.Value()
	binary := name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || name == corev1.ResourceStorage ||
		len(name) > 10 && name[:10] == "hugepages-"
	if v != 0 && binary {
		for _, s := range binarySuffixes {
			if v%s.factor == 0 {
				return fmt.Sprintf("%d%s", v/s.factor, s.suffix)
			}
		}
	}
	return fmt.Sprint(v)
}
