package main

// Objects written with `metadata.generateName` (every job example in Kueue's documentation) get
// their name from the API server: generateName cut to 58 characters plus 5 random characters.
// An offline evaluation has no server, so the 5 characters are derived, by the rule
// `kueue-policy evaluate` uses too (compiler/evaluator/jobs/base.py, GeneratedNames), so both
// engines name the job, and so its Workload, alike:
//
//	sha256("<group>\n<kind>\n<namespace>\n<generateName>\n<n>"), n = how many objects with the same
//	group, kind, namespace and generateName came before it in the input; the first 5 bytes, each
//	taken modulo the length of the API server's alphabet (k8s.io/apiserver names.SimpleNameGenerator).
//
// The same input gives the same names; applying a manifest twice gives two jobs, as
// `kubectl create` twice does; a name does not depend on file names or unrelated objects.

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	nameAlphabet      = "bcdfghjklmnpqrstvwxz2456789" // utilrand's alphanums, as the API server uses
	maxGeneratedBase  = 63 - 5
	generatedNameSize = 5
)

type nameGenerator struct{ seen map[string]int }

func newNameGenerator() *nameGenerator { return &nameGenerator{seen: map[string]int{}} }

// fill gives a document with a generateName and no name its derived name, in place.
func (g *nameGenerator) fill(raw map[string]interface{}) {
	meta, _ := raw["metadata"].(map[string]interface{})
	if meta == nil {
		return
	}
	if name, _ := meta["name"].(string); name != "" {
		return
	}
	base, _ := meta["generateName"].(string)
	if base == "" {
		return
	}
	apiVersion, _ := raw["apiVersion"].(string)
	kind, _ := raw["kind"].(string)
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	if _, integrated := integrations[schema.GroupKind{Group: group, Kind: kind}]; !integrated {
		return // only job objects are named here, as in `evaluate`
	}
	namespace, _ := meta["namespace"].(string)
	if namespace == "" {
		namespace = "default"
	}
	key := strings.Join([]string{group, kind, namespace, base}, "\n")
	n := g.seen[key]
	g.seen[key] = n + 1
	meta["name"] = generatedName(key, base, n)
}

func generatedName(key, base string, occurrence int) string {
	digest := sha256.Sum256([]byte(fmt.Sprintf("%s\n%d", key, occurrence)))
	suffix := make([]byte, generatedNameSize)
	for i := range suffix {
		suffix[i] = nameAlphabet[int(digest[i])%len(nameAlphabet)]
	}
	if len(base) > maxGeneratedBase {
		base = base[:maxGeneratedBase]
	}
	return base + string(suffix)
}
