package main

// Jobs carrying the kueue.x-k8s.io/queue-name label become the Workloads Kueue's job
// integrations would create: the integration's own pod sets and name
// (jobframework.ConstructWorkload) and priority (jobframework.PrepareWorkloadPriority). Wired:
// batch/v1 Job and jobset.x-k8s.io/v1alpha2 JobSet (README: "Not done" for the others).

import (
	"context"
	"fmt"
	"io"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	jobcontroller "sigs.k8s.io/kueue/pkg/controller/jobs/job"
	jobsetcontroller "sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
)

// workloadsForJobs appends to w.workloads the Workload of every queued Job.
func workloadsForJobs(ctx context.Context, lookup client.Client, w *world, warn io.Writer) {
	for _, obj := range w.jobs {
		var generic jobframework.GenericJob
		switch job := obj.(type) {
		case *batchv1.Job:
			generic = (*jobcontroller.Job)(job)
		case *jobsetapi.JobSet:
			generic = (*jobsetcontroller.JobSet)(job)
		default:
			continue
		}
		if obj.GetLabels()[constants.QueueLabel] == "" {
			continue // not managed by Kueue (manageJobsWithoutQueueName is off by default)
		}
		wl, err := jobframework.ConstructWorkload(ctx, lookup, generic, nil, nil)
		if err == nil {
			err = jobframework.PrepareWorkloadPriority(ctx, lookup, obj, wl, nil)
		}
		if err != nil {
			fmt.Fprintf(warn, "kueue-oracle: warning: %s %s/%s: %v; skipped\n", generic.GVK().Kind,
				obj.GetNamespace(), obj.GetName(), err)
			continue
		}
		wl.CreationTimestamp = obj.GetCreationTimestamp()
		w.workloads = append(w.workloads, wl)
	}
}
