package main

// What "a cycle changed nothing" looks at besides the Workloads' stored state: the queue
// manager's heaps and the flavor-scan position of every pending Workload. Kueue's flavor
// assigner resumes a pending Workload's scan after the last flavor it tried
// (workload.Info.LastAssignment.LastTriedFlavorIdx, kept by the queue manager across updates
// with FlavorFungibilityPreserveScanProgress), so a cycle that only moved that position gives
// the next cycle a different question: not quiescent. The Python engine counts the same thing
// (its last_tried).
//
// A position also says whether the next cycle will use it: the scheduler drops a position
// recorded two or more cycles earlier once its ClusterQueue's AllocatableResourceGeneration
// moved on (Kueue's unexported lastAssignmentOutdated, FlavorFungibilityPreserveScanProgress),
// and starts that Workload's scan over. A cycle that re-records the same index for such a
// Workload changes what the next cycle does (it resumes instead of starting over), so the
// signature carries "outdated" beside the index.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// queueSignature: the heaps (heapSignature) and the flavor-scan positions.
func (h *harness) queueSignature() string {
	return heapSignature(h.queues.Dump()) + "\n" + h.scanSignature()
}

// scanSignature: "ns/name podset:resource=index ..." for every Workload the queue manager holds
// (heap, inadmissible list) with a recorded flavor-scan position, sorted.
func (h *harness) scanSignature() string {
	var lines []string
	generations := h.allocatableGenerations()
	next := int64(h.cycles) + 1 // Kueue's schedulingCycle counts the cycles that ran, as h.cycles does here
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
			line := keyOf(info.Obj) + " " + strings.Join(parts, ",")
			if scanOutdatedAt(info.LastAssignment, generations[cq.Name], next, info.SchedulingHash) {
				line += " outdated"
			}
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// allocatableGenerations: every ClusterQueue's AllocatableResourceGeneration in the cache now.
func (h *harness) allocatableGenerations() map[string]int64 {
	out := map[string]int64{}
	snapshot, err := h.cache.Snapshot(context.Background())
	if err != nil {
		return out
	}
	for _, cq := range h.world.clusterQueues {
		if snap := snapshot.ClusterQueue(kueue.ClusterQueueReference(cq.Name)); snap != nil {
			out[cq.Name] = snap.AllocatableResourceGeneration
		}
	}
	return out
}

// scanOutdatedAt: whether the scheduler's cycle `cycle` drops the position `last` (the rule
// of Kueue's lastAssignmentOutdated, which is not exported, with the feature gate's default).
func scanOutdatedAt(last *workload.AssignmentClusterQueueState, generation, cycle int64, hash workload.EquivalenceHash) bool {
	if !last.MatchesSchedulingShape(hash) {
		return true
	}
	if cycle-last.SchedulingCycle <= 1 {
		return false
	}
	return generation > last.ClusterQueueGeneration
}
