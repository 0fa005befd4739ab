package main

// What "a cycle changed nothing" looks at besides the Workloads' stored state: the queue
// manager's heaps and the flavor-scan position of every pending Workload. Kueue's flavor
// assigner resumes a pending Workload's scan after the last flavor it tried
// (workload.Info.LastAssignment.LastTriedFlavorIdx, kept by the queue manager across updates
// with FlavorFungibilityPreserveScanProgress), so a cycle that only moved that position gives
// the next cycle a different question: not quiescent. The Python engine counts the same thing
// (its last_tried).

import (
	"fmt"
	"sort"
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// queueSignature: the heaps (heapSignature) and the flavor-scan positions.
func (h *harness) queueSignature() string {
	return heapSignature(h.queues.Dump()) + "\n" + h.scanSignature()
}

// scanSignature: "ns/name podset:resource=index ..." for every Workload the queue manager holds
// (heap, inadmissible list) with a recorded flavor-scan position, sorted.
func (h *harness) scanSignature() string {
	var lines []string
	for _, cq := range h.world.clusterQueues {
		for _, info := range h.queues.PendingWorkloadsInfo(kueue.ClusterQueueReference(cq.Name)) {
			if info.LastAssignment == nil {
				continue
			}
			var parts []string
			for ps, idx := range info.LastAssignment.LastTriedFlavorIdx {
				for res, flavor := range idx {
					parts = append(parts, fmt.Sprintf("%d:%s=%d", ps, res, flavor))
				}
			}
			sort.Strings(parts)
			lines = append(lines, keyOf(info.Obj)+" "+strings.Join(parts, ","))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
