package main

// Kueue's TAS through the oracle: Nodes and a Topology in the input, the topologyAssignment of
// status.admission in the output.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const tasQueues = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: racks}
spec:
  levels:
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
spec:
  nodeLabels: {pool: gpu}
  topologyName: racks
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu
      resources: [{name: nvidia.com/gpu, nominalQuota: 1000}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
`

// tasNode: a GPU node of `rack` with 8 GPUs; extra is YAML appended under spec (taints,
// unschedulable) and ready says whether its Ready condition is true.
func tasNode(name, rack string, ready bool, spec string) string {
	status := "True"
	if !ready {
		status = "False"
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Node
metadata:
  name: %s
  labels: {pool: gpu, example.com/rack: %s, kubernetes.io/hostname: %s}
spec: {%s}
status:
  allocatable: {nvidia.com/gpu: "8", pods: "110"}
  conditions: [{type: Ready, status: "%s"}]
`, name, rack, name, spec, status)
}

func tasWorkload(name string, count int, request string) string {
	return fmt.Sprintf(`---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: %s, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  queueName: lq
  podSets:
  - name: main
    count: %d
    topologyRequest: {%s}
    template:
      spec:
        containers:
        - name: c
          resources: {requests: {nvidia.com/gpu: "8"}}
`, name, count, request)
}

type tasResult struct {
	Workloads []struct {
		Name               string                  `json:"name"`
		Status             string                  `json:"status"`
		Reason             string                  `json:"reason"`
		TopologyAssignment map[string]*topologyOut `json:"topologyAssignment"`
	} `json:"workloads"`
}

func runTAS(t *testing.T, world string) tasResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-"}, strings.NewReader(world), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res tasResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("output: %v\n%s", err, stdout.String())
	}
	return res
}

func hosts(ta *topologyOut) []string {
	var out []string
	for _, d := range ta.Domains {
		out = append(out, fmt.Sprintf("%s=%d", d.Values[len(d.Values)-1], d.Count))
	}
	return out
}

// Two racks: r1 has three good nodes, r2 has four nodes of which one is not Ready, one
// unschedulable and one tainted: only r1 can take 3 pods of 8 GPUs in one rack.
func TestTASRequiredRackSkipsNodesKueueFilters(t *testing.T) {
	world := tasQueues +
		tasNode("a1", "r1", true, "") + tasNode("a2", "r1", true, "") + tasNode("a3", "r1", true, "") +
		tasNode("b1", "r2", true, "") + tasNode("b2", "r2", false, "") +
		tasNode("b3", "r2", true, "unschedulable: true") +
		tasNode("b4", "r2", true, "taints: [{key: gpu, value: broken, effect: NoSchedule}]") +
		tasWorkload("train", 3, "required: example.com/rack")
	res := runTAS(t, world)
	wl := res.Workloads[0]
	if wl.Status != "admitted" {
		t.Fatalf("status %s: %s", wl.Status, wl.Reason)
	}
	got := strings.Join(hosts(wl.TopologyAssignment["main"]), ",")
	if got != "a1=1,a2=1,a3=1" {
		t.Fatalf("assignment %s, want a1=1,a2=1,a3=1", got)
	}
}

// Four pods in one rack, no rack has four usable nodes: Kueue refuses with its message.
func TestTASRequiredRackTooSmallIsRefused(t *testing.T) {
	world := tasQueues +
		tasNode("a1", "r1", true, "") + tasNode("a2", "r1", true, "") + tasNode("a3", "r1", true, "") +
		tasNode("b1", "r2", true, "") + tasNode("b2", "r2", false, "") +
		tasWorkload("train", 4, "required: example.com/rack")
	wl := runTAS(t, world).Workloads[0]
	if wl.Status == "admitted" || wl.TopologyAssignment != nil {
		t.Fatalf("admitted %v, want a refusal", wl.TopologyAssignment)
	}
	if !strings.Contains(wl.Reason, "topology") {
		t.Fatalf("reason %q does not name the topology", wl.Reason)
	}
}

// Preferred: the same 4 pods spread over both racks' usable nodes.
func TestTASPreferredRackSpills(t *testing.T) {
	world := tasQueues +
		tasNode("a1", "r1", true, "") + tasNode("a2", "r1", true, "") + tasNode("a3", "r1", true, "") +
		tasNode("b1", "r2", true, "") + tasNode("b2", "r2", false, "") +
		tasWorkload("train", 4, "preferred: example.com/rack")
	wl := runTAS(t, world).Workloads[0]
	if wl.Status != "admitted" {
		t.Fatalf("status %s: %s", wl.Status, wl.Reason)
	}
	if got := strings.Join(hosts(wl.TopologyAssignment["main"]), ","); got != "a1=1,a2=1,a3=1,b1=1" {
		t.Fatalf("assignment %s", got)
	}
}
