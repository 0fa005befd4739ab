// kueue-oracle runs Kueue's own scheduler (sigs.k8s.io/kueue, the version in go.mod) offline on
// the manifests `kueue-policy evaluate` reads and prints the same JSON.
//
//	kueue-oracle [--cycles N] FILE... | -
//	kueue-oracle --batch [--cycles N] [FILE...]   (batch.go)
//
// JSON goes to stdout, diagnostics to stderr; exit 1 on unreadable input, 2 on a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--batch" { // many worlds, one process (batch.go)
		os.Exit(runBatch(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("kueue-oracle", flag.ContinueOnError)
	flags.SetOutput(stderr)
	cycles := flags.Int("cycles", 0, "run N scheduling cycles (default: until a cycle changes nothing)")
	printWl := flags.Bool("print-workloads", false, "print the Workloads built from the input's jobs (JSON) instead of evaluating")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: kueue-oracle [--cycles N | --print-workloads] FILE... | -")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() == 0 || *cycles < 0 {
		flags.Usage()
		return 2
	}
	// Kueue logs through controller-runtime and klog; the oracle's stderr is for diagnostics.
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	// Observability only: the scheduler then writes the specific reason (NoMatchingFlavor,
	// WaitingForQuota, ...) in the QuotaReserved condition instead of "Pending"; decisions do not
	// read this gate (see README).
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{"UnadmittedWorkloadsObservability": true}); err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: %v\n", err)
		return 3
	}
	docs, err := readInputs(flags.Args(), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: error: %v\n", err)
		return 1
	}
	w := decodeWorld(newScheme(), docs, stderr)
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	if *printWl {
		return printWorkloads(ctx, w, stdout, stderr)
	}
	h, err := newHarness(ctx, w, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: error: %v\n", err)
		return 1
	}
	if converged := h.run(*cycles); !converged {
		fmt.Fprintf(stderr, "kueue-oracle: warning: still changing after %d cycles (workloads keep preempting each other); showing the state at that point\n", h.cycles)
	}
	out, err := h.result()
	if err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: %v\n", err)
		return 3
	}
	_, _ = stdout.Write(out)
	return 0
}
