package main

import (
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// workloadTimes: every time a Workload of the input records (creation, its conditions' last
// transitions). The harness's clock starts after all of them: a live cluster's "now" is after
// every time its objects hold, so a Workload this evaluation admits reserved its quota after
// every Workload of the input did (Kueue's preemption orders candidates by that time, and
// `evaluate` ranks what it admits as newer than anything in the input).
func workloadTimes(wl *kueue.Workload) []time.Time {
	times := []time.Time{wl.CreationTimestamp.Time}
	for _, c := range wl.Status.Conditions {
		times = append(times, c.LastTransitionTime.Time)
	}
	return times
}
