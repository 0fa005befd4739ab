package main

// --print-workloads: the Workloads the oracle evaluates, after Kueue's job integrations built
// them from the input's jobs, as JSON. The tests compare them with the Workloads
// `kueue-policy evaluate` builds (tests/oracle/test_job_kinds.py). Requests are per pod, in
// Kueue's own units (milli for cpu, whole units otherwise), after what the workload controller
// applies (workload.AdjustResources: limits as missing requests, RuntimeClass overhead) and as
// Kueue's workload.Info counts a pod (init containers, sidecars, pod overhead).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"sigs.k8s.io/kueue/pkg/workload"
)

type printedPodSet struct {
	Name     string           `json:"name"`
	Count    int32            `json:"count"`
	MinCount *int32           `json:"minCount"`
	Requests map[string]int64 `json:"requests"`
}

type printedWorkload struct {
	Namespace     string          `json:"namespace"`
	Name          string          `json:"name"`
	Queue         string          `json:"queueName"`
	PriorityClass string          `json:"priorityClass"`
	PriorityKind  string          `json:"priorityClassKind"`
	Priority      *int32          `json:"priority"`
	PodSets       []printedPodSet `json:"podSets"`
}

func printWorkloads(ctx context.Context, w *world, stdout, stderr io.Writer) int {
	workloadsForJobs(ctx, w, stderr)
	if err := resolvePriorities(ctx, w); err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: error: %v\n", err)
		return 1
	}
	lookup := lookupClient(w)
	out := make([]printedWorkload, 0, len(w.workloads))
	for _, wl := range w.workloads {
		wl = wl.DeepCopy()
		workload.AdjustResources(ctx, lookup, wl)
		info := workload.NewInfo(wl)
		p := printedWorkload{Namespace: wl.Namespace, Name: wl.Name, Queue: string(wl.Spec.QueueName),
			Priority: wl.Spec.Priority, PodSets: []printedPodSet{}}
		if ref := wl.Spec.PriorityClassRef; ref != nil {
			p.PriorityClass, p.PriorityKind = ref.Name, string(ref.Kind)
		}
		for i, ps := range wl.Spec.PodSets {
			requests := map[string]int64{}
			if single := info.TotalRequests[i].SinglePodRequests(); single != nil {
				for name, value := range single.Iter() {
					requests[string(name)] = value
				}
			}
			p.PodSets = append(p.PodSets, printedPodSet{Name: string(ps.Name), Count: ps.Count,
				MinCount: ps.MinCount, Requests: requests})
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: %v\n", err)
		return 3
	}
	_, _ = stdout.Write(append(data, '\n'))
	return 0
}
