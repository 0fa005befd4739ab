package main

// Batch mode: many worlds through one process. The differential test compares hundreds of
// small worlds; starting the binary (Go runtime, the scheme, the embedded CRDs) for each one
// costs more than evaluating it, so a worker keeps one `kueue-oracle --batch` process and feeds
// it worlds one at a time.
//
//	kueue-oracle --batch [--cycles N] FILE...   one world per file, in order
//	kueue-oracle --batch [--cycles N]           one world per stdin line: a JSON string holding
//	                                            the world's YAML
//
// Each world gives one line on stdout, written as soon as the world is done:
//
//	{"exit":0,"result":{...the single-world JSON...},"stderr":"..."}
//
// `exit` and `stderr` are what the single-world command would have exited with and printed for
// that world alone (`result` is null unless exit is 0). Every world gets a fresh harness
// (API server, cache, queue manager, scheduler), exactly as in a process of its own.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

type batchLine struct {
	Exit   int             `json:"exit"`
	Result json.RawMessage `json:"result"`
	Stderr string          `json:"stderr"`
}

// runBatch: the arguments after --batch. Exit 2 on a usage error or an unreadable stdin line;
// a world that fails only makes its own line say so.
func runBatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("kueue-oracle --batch", flag.ContinueOnError)
	flags.SetOutput(stderr)
	cycles := flags.Int("cycles", 0, "run N scheduling cycles per world (default: until a cycle changes nothing)")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: kueue-oracle --batch [--cycles N] [FILE...]  (no FILE: one JSON string of YAML per stdin line)")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil || *cycles < 0 {
		return 2
	}
	prefix := []string{"--cycles", strconv.Itoa(*cycles)}
	out := bufio.NewWriter(stdout)
	if flags.NArg() > 0 {
		for _, path := range flags.Args() {
			writeBatchLine(out, append(prefix, path), strings.NewReader(""))
		}
		return 0
	}
	lines := bufio.NewScanner(stdin)
	lines.Buffer(make([]byte, 1<<20), 256<<20)
	for lines.Scan() {
		if len(bytes.TrimSpace(lines.Bytes())) == 0 {
			continue
		}
		var text string
		if err := json.Unmarshal(lines.Bytes(), &text); err != nil {
			fmt.Fprintf(stderr, "kueue-oracle: --batch: a stdin line is not a JSON string: %v\n", err)
			return 2
		}
		writeBatchLine(out, append(prefix, "-"), strings.NewReader(text))
	}
	if err := lines.Err(); err != nil {
		fmt.Fprintf(stderr, "kueue-oracle: --batch: %v\n", err)
		return 2
	}
	return 0
}

// writeBatchLine runs one world through the single-world command and writes its line, flushed
// so that a caller waiting for this world's answer gets it now.
func writeBatchLine(out *bufio.Writer, args []string, stdin io.Reader) {
	var result, diag bytes.Buffer
	line := batchLine{Exit: run(args, stdin, &result, &diag), Stderr: diag.String()}
	if line.Exit == 0 {
		line.Result = json.RawMessage(result.Bytes())
	}
	encoded, err := json.Marshal(line)
	if err != nil { // the single-world JSON did not parse: say so on this world's line
		encoded, _ = json.Marshal(batchLine{Exit: 3, Stderr: diag.String() + "kueue-oracle: " + err.Error()})
	}
	_, _ = out.Write(append(encoded, '\n'))
	_ = out.Flush()
}
