package main

// Defaults the API server would apply: Kueue's types carry their defaults as OpenAPI `default`s
// in their CustomResourceDefinitions (queueingStrategy, preemption policies, flavorFungibility,
// podSet count, ...), not as Go defaulting functions. The oracle applies them with the API
// server's own structural defaulting code, from the CRDs of the Kueue module it is built
// against (`make oracle` copies them into crds/ from the module cache; see README).

import (
	"embed"
	"fmt"
	"sync"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/yaml"
)

// The folder itself is committed (its README), so the package builds and vets on a fresh clone;
// `make oracle` fills it with the CRDs before building the binary.
//
//go:embed crds
var crdFiles embed.FS

var crdPlural = map[string]string{
	"ResourceFlavor": "resourceflavors", "Cohort": "cohorts", "ClusterQueue": "clusterqueues",
	"LocalQueue": "localqueues", "WorkloadPriorityClass": "workloadpriorityclasses", "Workload": "workloads",
	"Topology": "topologies",
}

type schemaKey struct{ file, version string }

var (
	schemaMu sync.Mutex
	schemas  = map[schemaKey]*structuralschema.Structural{}
)

// applyCRDDefaults fills in the defaults of kind/version's CRD schema, in place.
func applyCRDDefaults(raw map[string]interface{}, kind, version string) error {
	return defaultFromCRD(raw, "kueue.x-k8s.io_"+crdPlural[kind]+".yaml", kind, version)
}

// defaultFromCRD applies the defaults of the CRD in crds/<file> (version `version`) to raw.
func defaultFromCRD(raw map[string]interface{}, file, kind, version string) error {
	s, err := structuralFor(file, kind, version)
	if err != nil {
		return err
	}
	defaulting.Default(raw, s)
	return nil
}

func structuralFor(file, kind, version string) (*structuralschema.Structural, error) {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	key := schemaKey{file, version}
	if s, ok := schemas[key]; ok {
		return s, nil
	}
	data, err := crdFiles.ReadFile("crds/" + file)
	if err != nil {
		return nil, fmt.Errorf("no CRD for %s (build with `make oracle`, which copies the CRDs from the Go modules): %v", kind, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("CRD for %s: %v", kind, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, fmt.Errorf("CRD for %s/%s: %v", kind, version, err)
		}
		schemas[key] = s
		return s, nil
	}
	return nil, fmt.Errorf("the CRD for %s has no version %s", kind, version)
}
