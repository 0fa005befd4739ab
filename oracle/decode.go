package main

// Turning documents into the typed objects Kueue's code takes. v1beta1 objects go through the
// conversion functions Kueue's API package registers in its scheme (the same ones its conversion
// webhook runs); nothing is mapped by hand here.

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/webhooks"
)

// world is every object the evaluation knows, already in Kueue's storage version (v1beta2).
type world struct {
	flavors         []*kueue.ResourceFlavor
	cohorts         []*kueue.Cohort
	clusterQueues   []*kueue.ClusterQueue
	localQueues     []*kueue.LocalQueue
	priorityClasses []*kueue.WorkloadPriorityClass
	podPriorities   []*schedulingv1.PriorityClass
	namespaces      []*corev1.Namespace
	workloads       []*kueue.Workload
	jobs            []client.Object // job objects of Kueue's integrations, TrainJob runtimes (jobs.go)
	// resource.k8s.io/v1 objects the workload controller's DRA step reads (dra.go).
	draObjects []client.Object
	// What Kueue's TAS cache reads (tas.go): Topologies and the Nodes they are built from.
	topologies []*kueue.Topology
	nodes      []*corev1.Node
	// From a config.kueue.x-k8s.io Configuration in the input, as Kueue's manager reads its own.
	fairSharing *config.FairSharing
	quotaCheck  config.QuotaCheckStrategy
	// resources.deviceClassMappings: the DRA mapper's configuration (dra.go).
	deviceClassMappings []config.DeviceClassMapping
	// Workloads the API server would refuse (unreadable, or rejected by Kueue's validating
	// webhook): "ns/name" -> why. `evaluate` lists them as inadmissible; so does the oracle.
	invalid map[string]string
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueue.AddToScheme(s))
	utilruntime.Must(kueuev1beta1.AddToScheme(s))
	utilruntime.Must(jobsetapi.AddToScheme(s))
	addJobSchemes(s)
	addAPIDefaults(s)
	addDRADefaults(s)
	return s
}

// decodeWorld types every document; an object that cannot be used is skipped with a warning
// (as `kueue-policy evaluate` does), a duplicate name is a warning and the later one wins.
func decodeWorld(s *runtime.Scheme, docs []document, warn io.Writer) *world {
	seen := map[string]int{}
	var objs []runtime.Object
	var wheres []string
	w := &world{invalid: map[string]string{}}
	names := newNameGenerator()
	for _, doc := range docs {
		names.fill(doc.obj)
		if readConfiguration(w, doc.obj) {
			continue
		}
		obj, err := decodeOne(s, doc.obj)
		if err == nil {
			if wl, ok := obj.(*kueue.Workload); ok {
				// Conditions in hand-written input often omit reason and lastTransitionTime,
				// which the API server would have filled; they are not validated.
				check := wl.DeepCopy()
				check.Status.Conditions = nil
				if errs := webhooks.ValidateWorkload(check, nil); len(errs) > 0 {
					err = errs.ToAggregate()
				}
			}
		}
		if err != nil {
			fmt.Fprintf(warn, "kueue-oracle: warning: %s: %v; skipped\n", doc.where, err)
			if key, isWorkload := workloadKey(doc.obj); isWorkload {
				w.invalid[key] = err.Error()
			}
			continue
		}
		if obj == nil {
			continue
		}
		key := objectKey(obj)
		if i, dup := seen[key]; dup {
			fmt.Fprintf(warn, "kueue-oracle: warning: %s: %s defined again (first at %s); the later one is used\n",
				doc.where, key, wheres[i])
			objs[i] = obj
			wheres[i] = doc.where
			continue
		}
		seen[key] = len(objs)
		objs = append(objs, obj)
		wheres = append(wheres, doc.where)
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *kueue.ResourceFlavor:
			w.flavors = append(w.flavors, o)
		case *kueue.Cohort:
			w.cohorts = append(w.cohorts, o)
		case *kueue.ClusterQueue:
			w.clusterQueues = append(w.clusterQueues, o)
		case *kueue.LocalQueue:
			w.localQueues = append(w.localQueues, o)
		case *kueue.WorkloadPriorityClass:
			w.priorityClasses = append(w.priorityClasses, o)
		case *schedulingv1.PriorityClass:
			w.podPriorities = append(w.podPriorities, o)
		case *corev1.Namespace:
			w.namespaces = append(w.namespaces, o)
		case *kueue.Workload:
			w.workloads = append(w.workloads, o)
		case *kueue.Topology:
			w.topologies = append(w.topologies, o)
		case *corev1.Node:
			w.nodes = append(w.nodes, o)
		case *resourcev1.DeviceClass, *resourcev1.ResourceClaimTemplate, *resourcev1.ResourceClaim, *resourcev1.ResourceSlice:
			w.draObjects = append(w.draObjects, o.(client.Object))
		default:
			if gvk := obj.GetObjectKind().GroupVersionKind(); isJobKind(gvk.Group, gvk.Kind) {
				w.jobs = append(w.jobs, obj.(client.Object))
			}
		}
	}
	sort.SliceStable(w.workloads, func(i, j int) bool {
		return w.workloads[i].Namespace+"/"+w.workloads[i].Name < w.workloads[j].Namespace+"/"+w.workloads[j].Name
	})
	return w
}

func objectKey(obj runtime.Object) string {
	gvk := obj.GetObjectKind().GroupVersionKind()
	m, _ := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	return fmt.Sprintf("%s %s/%s", gvk.Kind, m.GetNamespace(), m.GetName())
}

var evaluatedKinds = map[string]bool{
	"ResourceFlavor": true, "Cohort": true, "ClusterQueue": true, "LocalQueue": true,
	"WorkloadPriorityClass": true, "Workload": true, "Topology": true,
}

func decodeOne(s *runtime.Scheme, raw map[string]interface{}) (runtime.Object, error) {
	apiVersion, _ := raw["apiVersion"].(string)
	kind, _ := raw["kind"].(string)
	if apiVersion == "" || kind == "" {
		return nil, fmt.Errorf("apiVersion and kind are required")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %v", apiVersion, err)
	}
	gvk := gv.WithKind(kind)
	switch {
	case gv.Group == kueue.SchemeGroupVersion.Group && evaluatedKinds[kind]:
		if gv.Version != "v1beta1" && gv.Version != "v1beta2" {
			return nil, fmt.Errorf("%s: only kueue.x-k8s.io/v1beta1 and v1beta2 are read", apiVersion)
		}
	case gv.Group == "" && kind == "Namespace", gv.Group == "scheduling.k8s.io" && kind == "PriorityClass",
		isJobKind(gv.Group, kind), isNodeKind(gv.Group, kind):
	case gv.Group == resourcev1.GroupName && draKinds[kind]:
		if gv.Version != resourcev1.SchemeGroupVersion.Version {
			return nil, fmt.Errorf("%s %s: only resource.k8s.io/v1 is read (the version Kueue v0.19.2's DRA step reads)", apiVersion, kind)
		}
	default:
		return nil, nil // not an object the admission decision reads (jobs: see README)
	}
	meta, _ := raw["metadata"].(map[string]interface{})
	if name, _ := meta["name"].(string); name == "" {
		return nil, fmt.Errorf("%s has no metadata.name", kind)
	}
	if gv.Group == kueue.SchemeGroupVersion.Group {
		if err := applyCRDDefaults(raw, kind, gv.Version); err != nil {
			return nil, err
		}
	} else if err := applyJobCRDDefaults(raw, gvk); err != nil {
		return nil, err
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	typed, err := s.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", gvk, err)
	}
	if err := json.Unmarshal(data, typed); err != nil {
		return nil, fmt.Errorf("%s: %s", kind, strings.TrimPrefix(err.Error(), "json: "))
	}
	if isJobKind(gv.Group, kind) || gv.Group == resourcev1.GroupName {
		s.Default(typed)
	}
	if gv.Version == "v1beta1" {
		hub, err := s.New(kueue.SchemeGroupVersion.WithKind(kind))
		if err != nil {
			return nil, err
		}
		if err := s.Convert(typed, hub, nil); err != nil {
			return nil, fmt.Errorf("converting %s to v1beta2: %v", kind, err)
		}
		hub.GetObjectKind().SetGroupVersionKind(kueue.SchemeGroupVersion.WithKind(kind))
		typed = hub
	}
	// kubectl puts namespaced objects without a namespace in "default", as does `evaluate`.
	if m, ok := typed.(interface {
		GetNamespace() string
		SetNamespace(string)
	}); ok && m.GetNamespace() == "" && (kind == "Workload" || kind == "LocalQueue" || namespacedJobKind(gv.Group, kind) ||
		gv.Group == resourcev1.GroupName && namespacedDRAKinds[kind]) {
		m.SetNamespace("default")
	}
	if typed.GetObjectKind().GroupVersionKind().Empty() {
		typed.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return typed, nil
}

// readConfiguration: fair sharing (v1beta1 needs `enable: true`, in v1beta2 the block's presence
// enables it) and the quota check strategy, the two Configuration settings the scheduler takes.
func readConfiguration(w *world, raw map[string]interface{}) bool {
	apiVersion, _ := raw["apiVersion"].(string)
	if kind, _ := raw["kind"].(string); kind != "Configuration" || !strings.HasPrefix(apiVersion, "config.kueue.x-k8s.io/") {
		return false
	}
	if fair, ok := raw["fairSharing"].(map[string]interface{}); ok {
		enable, has := fair["enable"].(bool)
		if (has && enable) || (!has && strings.HasSuffix(apiVersion, "v1beta2")) {
			fs := &config.FairSharing{}
			if list, ok := fair["preemptionStrategies"].([]interface{}); ok {
				for _, s := range list {
					fs.PreemptionStrategies = append(fs.PreemptionStrategies, config.PreemptionStrategy(fmt.Sprint(s)))
				}
			}
			w.fairSharing = fs
		} else {
			w.fairSharing = nil
		}
	}
	if res, ok := raw["resources"].(map[string]interface{}); ok {
		if q, ok := res["quotaCheckStrategy"].(string); ok {
			w.quotaCheck = config.QuotaCheckStrategy(q)
		}
		// The shape was checked when the document was read (checkConfigurationShape).
		w.deviceClassMappings = nil
		if mappings, ok := res["deviceClassMappings"].([]interface{}); ok {
			data, _ := json.Marshal(mappings)
			_ = json.Unmarshal(data, &w.deviceClassMappings)
		}
	}
	return true
}

// workloadKey: "ns/name" of a Workload document, whatever else is wrong with it.
func workloadKey(raw map[string]interface{}) (string, bool) {
	apiVersion, _ := raw["apiVersion"].(string)
	if kind, _ := raw["kind"].(string); kind != "Workload" || !strings.HasPrefix(apiVersion, kueue.SchemeGroupVersion.Group+"/") {
		return "", false
	}
	meta, _ := raw["metadata"].(map[string]interface{})
	name, _ := meta["name"].(string)
	if name == "" {
		return "", false
	}
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name, true
}
