package main

// Topology Aware Scheduling input and output. Kueue's scheduler places a TAS pod set with the
// TAS cache of its scheduler cache (pkg/cache/scheduler tas_cache.go): Topology objects and
// ResourceFlavors with spec.topologyName register a TASFlavorCache, and Node objects reach it
// through the node controller's SyncNode (pkg/controller/tas). The oracle feeds the same calls
// with the input's Topologies, Nodes and running Pods; every placement decision (domain tree, node filtering,
// the required / preferred / unconstrained / sliced algorithms) is Kueue's.

import (
	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utilpod "sigs.k8s.io/kueue/pkg/util/pod"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
)

// addTopologyInputs: what Kueue's Topology and Node controllers hand the TAS cache on start-up.
// With SchedulerLibraryIntegration off (v0.19.2's default) the nodes cache itself drops a Node
// that is unschedulable or not Ready (nodesCache.sync).
func (h *harness) addTopologyInputs() {
	for _, topology := range h.world.topologies {
		h.cache.AddOrUpdateTopology(h.log, topology.DeepCopy())
	}
	for _, node := range h.world.nodes {
		h.cache.TASCache().SyncNode(node.DeepCopy())
	}
	// The non-TAS usage controller (pkg/controller/tas non_tas_usage_controller.go) hands the
	// cache every scheduled pod TAS did not place; its predicate belongsToNonTASCache is
	// unexported, so its three conditions are spelled here with Kueue's own helpers.
	for _, obj := range h.world.jobs {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" && !utilpod.IsTerminated(pod) && !utiltas.IsTAS(pod) {
			h.cache.TASCache().Update(pod.DeepCopy(), h.log)
		}
	}
}

// topologyOut: a pod set's status.admission.podSetAssignments[].topologyAssignment expanded from
// Kueue's compact slice encoding (utiltas.InternalFrom): the levels, and every domain with the
// value at each level and its pod count, in Kueue's order.
type topologyOut struct {
	Levels  []string    `json:"levels"`
	Domains []domainOut `json:"domains"`
}

type domainOut struct {
	Values []string `json:"values"`
	Count  int32    `json:"count"`
}

func topologyAssignmentOut(ta *kueue.TopologyAssignment) *topologyOut {
	if ta == nil {
		return nil
	}
	internal := utiltas.InternalFrom(ta)
	out := &topologyOut{Levels: append([]string{}, internal.Levels...), Domains: []domainOut{}}
	for _, d := range internal.Domains {
		out.Domains = append(out.Domains, domainOut{Values: append([]string{}, d.Values...), Count: d.Count})
	}
	return out
}

// isNodeKind: the core/v1 Node, the only built-in object the TAS cache reads.
func isNodeKind(group, kind string) bool {
	return group == corev1.GroupName && kind == "Node"
}
