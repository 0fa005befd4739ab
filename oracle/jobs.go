package main

// Jobs carrying the kueue.x-k8s.io/queue-name label become the Workloads Kueue's job
// integrations would create: the integration's own pod sets and name
// (jobframework.ConstructWorkload) and priority (jobframework.PrepareWorkloadPriority). Only
// batch/v1 Job is wired so far (README: "Not done").

import (
	"context"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	jobcontroller "sigs.k8s.io/kueue/pkg/controller/jobs/job"
)

// workloadsForJobs appends to w.workloads the Workload of every queued Job.
func workloadsForJobs(ctx context.Context, lookup client.Client, w *world, warn io.Writer) {
	for _, job := range w.jobs {
		if job.Labels[constants.QueueLabel] == "" {
			continue // not managed by Kueue (manageJobsWithoutQueueName is off by default)
		}
		generic := (*jobcontroller.Job)(job)
		wl, err := jobframework.ConstructWorkload(ctx, lookup, generic, nil, nil)
		if err == nil {
			err = jobframework.PrepareWorkloadPriority(ctx, lookup, job, wl, nil)
		}
		if err != nil {
			fmt.Fprintf(warn, "kueue-oracle: warning: Job %s/%s: %v; skipped\n", job.Namespace, job.Name, err)
			continue
		}
		wl.CreationTimestamp = job.CreationTimestamp
		w.workloads = append(w.workloads, wl)
	}
}
