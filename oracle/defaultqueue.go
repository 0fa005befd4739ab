package main

// The default LocalQueue: the admission webhooks of some integrations (batch Job, JobSet,
// MPIJob, RayJob, RayCluster, LeaderWorkerSet, TrainJob in Kueue v0.19.2; not the Kubeflow
// training-operator jobs, not Pods) give a job without the queue-name label the namespace's
// LocalQueue named `default`, when it exists and the namespace matches the Configuration's
// managedJobsNamespaceSelector. The webhooks need a manager to run; the oracle calls the function
// they call (jobframework.ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector) with Kueue's
// default selector (config SetDefaults_Configuration: not kube-system, not Kueue's namespace).

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// The kinds whose webhook calls ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector.
var defaultQueueKinds = map[schema.GroupKind]bool{
	{Group: "batch", Kind: "Job"}:                                true,
	{Group: "jobset.x-k8s.io", Kind: "JobSet"}:                   true,
	{Group: "kubeflow.org", Kind: "MPIJob"}:                      true,
	{Group: "ray.io", Kind: "RayJob"}:                            true,
	{Group: "ray.io", Kind: "RayCluster"}:                        true,
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: true,
	{Group: "trainer.kubeflow.org", Kind: "TrainJob"}:            true,
}

// applyDefaultQueues labels, in place, the jobs the webhooks would give the default LocalQueue.
func applyDefaultQueues(ctx context.Context, c client.Client, w *world) error {
	defaults := map[string]bool{}
	for _, lq := range w.localQueues {
		if lq.Name == "default" {
			defaults[lq.Namespace] = true
		}
	}
	cfg := &config.Configuration{}
	config.SetDefaults_Configuration(cfg)
	selector, err := metav1.LabelSelectorAsSelector(cfg.ManagedJobsNamespaceSelector)
	if err != nil {
		return err
	}
	for _, obj := range w.jobs {
		if !defaultQueueKinds[obj.GetObjectKind().GroupVersionKind().GroupKind()] {
			continue
		}
		if err := jobframework.ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector(ctx, c, obj,
			func(ns string) bool { return defaults[ns] }, selector); err != nil {
			return err
		}
	}
	return nil
}

// jobNamespaces: the namespaces of the job objects, labelled as the API server labels them
// (the selector above matches on kubernetes.io/metadata.name), with the input's labels.
func jobNamespaces(w *world) []client.Object {
	given := map[string]*corev1.Namespace{}
	for _, ns := range w.namespaces {
		given[ns.Name] = ns
	}
	seen := map[string]bool{}
	var out []client.Object
	for _, obj := range w.jobs {
		name := obj.GetNamespace()
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if g := given[name]; g != nil {
			ns = g.DeepCopy()
			ns.ResourceVersion = ""
		}
		ns.Labels = labels.Merge(ns.Labels, labels.Set{corev1.LabelMetadataName: name})
		out = append(out, ns)
	}
	return out
}
