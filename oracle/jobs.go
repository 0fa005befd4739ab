package main

// Job objects carrying the kueue.x-k8s.io/queue-name label become the Workloads Kueue's own job
// integrations would create. Every integration imported below registers itself with Kueue's
// jobframework (its init); the oracle finds it by the object's kind and calls the same code
// Kueue's job reconciler calls when a job has no Workload yet:
//
//   - a GenericJob (batch Job, JobSet, the Kubeflow training-operator jobs, MPIJob, RayJob,
//     RayCluster, TrainJob): jobframework.ConstructWorkload (the integration's PodSets, the
//     `<kind>-<name>-<hash>` name, the queue) and jobframework.PrepareWorkloadPriority with the
//     job's own priority class when it has one (JobWithPriorityClass), as the reconciler does;
//   - Pods and pod groups (a ComposableJob): the pod integration's Load (the group's members,
//     through its PodGroupNameCacheKey index) and ConstructComposableWorkload;
//   - LeaderWorkerSet (no GenericJob: its own reconciler creates one Workload per group): that
//     reconciler's Reconcile, then the Workloads it created.
//
// Everything runs against a fake API server holding the input's job objects, their runtimes
// (TrainJob) and the priority classes, with the indexes each integration registers.

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kftrainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/job"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/jaxjob"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/paddlejob"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/pytorchjob"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/tfjob"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/kubeflow/jobs/xgboostjob"
	"sigs.k8s.io/kueue/pkg/controller/jobs/leaderworkerset"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/mpijob"
	podcontroller "sigs.k8s.io/kueue/pkg/controller/jobs/pod"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/raycluster"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/rayjob"
	_ "sigs.k8s.io/kueue/pkg/controller/jobs/trainjob"
	"sigs.k8s.io/kueue/pkg/util/expectations"
	utilpod "sigs.k8s.io/kueue/pkg/util/pod"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
)

// integrations: API group/kind -> Kueue's callbacks for it, from jobframework's registry.
var integrations = func() map[schema.GroupKind]jobframework.IntegrationCallbacks {
	out := map[schema.GroupKind]jobframework.IntegrationCallbacks{}
	utilruntime.Must(jobframework.ForEachIntegration(func(_ string, cb jobframework.IntegrationCallbacks) error {
		gvk := cb.GVK
		if cb.NewJob != nil {
			gvk = cb.NewJob().GVK()
		}
		out[gvk.GroupKind()] = cb
		return nil
	}))
	return out
}()

// Objects TrainJob's PodSets look up: the runtimes its spec.runtimeRef names.
var runtimeKinds = map[schema.GroupKind]bool{
	{Group: kftrainer.GroupVersion.Group, Kind: "TrainingRuntime"}:        true,
	{Group: kftrainer.GroupVersion.Group, Kind: "ClusterTrainingRuntime"}: true,
}

// isJobKind: documents of this group/kind are read for the job integrations.
func isJobKind(group, kind string) bool {
	gk := schema.GroupKind{Group: group, Kind: kind}
	_, integrated := integrations[gk]
	return integrated || runtimeKinds[gk]
}

// namespacedJobKind: a job object written without a namespace lands in "default" (kubectl).
func namespacedJobKind(group, kind string) bool {
	return isJobKind(group, kind) && kind != "ClusterTrainingRuntime"
}

// addJobSchemes registers every integration's API (and the Trainer's runtimes) in s.
func addJobSchemes(s *runtime.Scheme) {
	for _, cb := range integrations {
		if cb.AddToScheme != nil {
			utilruntime.Must(cb.AddToScheme(s))
		}
	}
	utilruntime.Must(kftrainer.AddToScheme(s))
}

// workloadsForJobs appends to w.workloads the Workload(s) of every queued job object.
func workloadsForJobs(ctx context.Context, w *world, warn io.Writer) {
	// The webhooks run before the objects are stored: default queues first.
	namespaces := jobClientBuilder().WithObjects(jobNamespaces(w)...).Build()
	if err := applyDefaultQueues(ctx, namespaces, w); err != nil {
		fmt.Fprintf(warn, "kueue-oracle: warning: default LocalQueue: %v\n", err)
	}
	c := jobClient(ctx, w)
	rec := &events.FakeRecorder{} // no channel: events are dropped
	startTrainer(ctx, c, rec)
	groupsDone := map[string]bool{}
	for _, obj := range w.jobs {
		gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
		cb, ok := integrations[gk]
		if !ok || jobframework.QueueNameForObject(obj) == "" {
			continue // a runtime, or not managed by Kueue (manageJobsWithoutQueueName is off by default)
		}
		var wls []*kueue.Workload
		var err error
		switch {
		case gk.Kind == "Pod" && gk.Group == "":
			pod := obj.(*corev1.Pod)
			key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
			if group := utilpod.GetPodGroupName(pod); group != "" {
				if groupsDone[pod.Namespace+"/"+group] {
					continue
				}
				groupsDone[pod.Namespace+"/"+group] = true
				key = types.NamespacedName{Namespace: "group/" + pod.Namespace, Name: group}
			}
			wls, err = podWorkload(ctx, c, rec, key)
		case cb.NewJob == nil && gk.Kind == "LeaderWorkerSet":
			wls, err = leaderWorkerSetWorkloads(ctx, c, rec, obj)
		case cb.NewJob != nil:
			wls, err = genericJobWorkload(ctx, c, cb.NewJob(), obj)
		default:
			continue
		}
		if err != nil {
			fmt.Fprintf(warn, "kueue-oracle: warning: %s %s/%s: %v; no Workload\n", gk.Kind,
				obj.GetNamespace(), obj.GetName(), err)
			continue
		}
		for _, wl := range wls {
			wl.CreationTimestamp = obj.GetCreationTimestamp()
			w.workloads = append(w.workloads, wl)
		}
	}
}

// startTrainer: TrainJob's PodSets build the child JobSet with the Kubeflow Trainer's runtime
// plugins, which the integration's NewReconciler registers (the Trainer's runtime core), as when
// Kueue's manager starts.
func startTrainer(ctx context.Context, c client.Client, rec events.EventRecorder) {
	cb, ok := integrations[schema.GroupKind{Group: kftrainer.GroupVersion.Group, Kind: "TrainJob"}]
	if !ok || cb.NewReconciler == nil {
		return
	}
	_, err := cb.NewReconciler(ctx, c, utiltesting.AsIndexer(jobClientBuilder()), rec)
	utilruntime.Must(err)
}

// genericJobWorkload: what the job reconciler's constructWorkload and prepareWorkload do.
func genericJobWorkload(ctx context.Context, c client.Client, job jobframework.GenericJob, obj client.Object) ([]*kueue.Workload, error) {
	// NewJob returns the integration's wrapper around an empty object of the kind; the decoded
	// object is copied into it, as the reconciler's client.Get fills it.
	reflect.ValueOf(job.Object()).Elem().Set(reflect.ValueOf(obj).Elem())
	wl, err := jobframework.ConstructWorkload(ctx, c, job, nil, nil)
	if err != nil {
		return nil, err
	}
	var custom func() string
	if withClass, ok := job.(jobframework.JobWithPriorityClass); ok {
		custom = withClass.PriorityClass
	}
	if err := jobframework.PrepareWorkloadPriority(ctx, c, obj, wl, custom); err != nil {
		return nil, err
	}
	return []*kueue.Workload{wl}, nil
}

// podWorkload: a single Pod, or the pod group whose key is "group/<namespace>"/<group name>,
// loaded and composed by the pod integration.
func podWorkload(ctx context.Context, c client.Client, rec events.EventRecorder, key types.NamespacedName) ([]*kueue.Workload, error) {
	// The store of pods being deleted as excess members: empty, as in a fresh reconciler.
	p := podcontroller.NewPod(podcontroller.WithExcessPodExpectations(expectations.NewStore("pods")))
	if _, err := p.Load(ctx, c, &key); err != nil {
		return nil, err
	}
	wl, err := p.ConstructComposableWorkload(ctx, c, rec, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := jobframework.PrepareWorkloadPriority(ctx, c, p.Object(), wl, nil); err != nil {
		return nil, err
	}
	return []*kueue.Workload{wl}, nil
}

// leaderWorkerSetWorkloads runs the LeaderWorkerSet integration's reconciler on the object and
// returns the Workloads it created (one per group), by name.
func leaderWorkerSetWorkloads(ctx context.Context, c client.Client, rec events.EventRecorder, obj client.Object) ([]*kueue.Workload, error) {
	r, err := leaderworkerset.NewReconciler(ctx, c, nil, rec)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		return nil, err
	}
	var list kueue.WorkloadList
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, err
	}
	var out []*kueue.Workload
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.Kind == "LeaderWorkerSet" && ref.Name == obj.GetName() {
				wl := list.Items[i].DeepCopy()
				wl.ResourceVersion = "" // created again in the harness's own API server
				out = append(out, wl)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// jobClient: a fake API server with the job objects, runtimes and priority classes of the input
// and the field indexes every integration registers (SetupIndexes).
func jobClient(ctx context.Context, w *world) client.Client {
	builder := jobClientBuilder()
	indexer := utiltesting.AsIndexer(builder)
	for _, gk := range sortedIntegrationKinds() {
		if setup := integrations[gk].SetupIndexes; setup != nil {
			utilruntime.Must(setup(ctx, indexer))
		}
	}
	objs := []client.Object{}
	for _, obj := range w.jobs {
		objs = append(objs, obj.DeepCopyObject().(client.Object))
	}
	objs = append(objs, jobNamespaces(w)...)
	for _, pc := range w.priorityClasses {
		objs = append(objs, pc)
	}
	for _, pc := range w.podPriorities {
		objs = append(objs, pc)
	}
	return builder.WithObjects(objs...).Build()
}

func jobClientBuilder() *fake.ClientBuilder {
	return utiltesting.NewClientBuilder(func(s *runtime.Scheme) error { addJobSchemes(s); return nil })
}

func sortedIntegrationKinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(integrations))
	for gk := range integrations {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
