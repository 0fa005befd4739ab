package main

// The defaults the API server gives a job object on create, before Kueue's integration reads it:
//
//   - for the job kinds defined by CRDs (JobSet, the Kubeflow jobs, MPIJob, RayJob, RayCluster,
//     TrainJob and its runtimes, LeaderWorkerSet): the OpenAPI `default`s of the CRDs of the Go
//     modules Kueue depends on, at the versions in go.sum (`make oracle` copies them into crds/
//     from the module cache, JOB_CRDS in the Makefile), applied with the API server's structural
//     defaulting, like Kueue's own CRDs (crds.go);
//   - for the built-in kinds (Pod, batch/v1 Job): Kubernetes' own defaulting functions
//     (k8s.io/kubernetes pkg/apis/core/v1 and batch/v1, registered in the scheme): Job
//     parallelism and completions, a container's requests from its limits, port protocols, ...

import (
	"errors"
	"io/fs"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	k8sbatchv1 "k8s.io/kubernetes/pkg/apis/batch/v1"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
)

// addAPIDefaults registers Kubernetes' defaulting functions for the built-in kinds in s.
func addAPIDefaults(s *runtime.Scheme) {
	utilruntime.Must(k8scorev1.RegisterDefaults(s))
	utilruntime.Must(k8sbatchv1.RegisterDefaults(s))
}

// applyJobCRDDefaults: the CRD defaults of a job kind's document, in place. A kind without a
// CRD (built-in) is left alone.
func applyJobCRDDefaults(raw map[string]interface{}, gvk schema.GroupVersionKind) error {
	if gvk.Group == "" || !strings.Contains(gvk.Group, ".") {
		return nil // core and batch: Go defaulting functions, after decoding
	}
	file := gvk.Group + "_" + strings.ToLower(gvk.Kind) + "s.yaml"
	if _, err := fs.Stat(crdFiles, "crds/"+file); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return defaultFromCRD(raw, file, gvk.Kind, gvk.Version)
}
