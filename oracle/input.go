package main

// Reading what `kueue-policy evaluate` reads: multi-document YAML files (or "-"), `kind: List`
// unwrapped, every document remembered with the file and line it starts on for diagnostics.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// inputError is a user mistake: printed as "kueue-oracle: <where>: <message>", exit 1.
type inputError struct {
	where string
	msg   string
}

func (e *inputError) Error() string {
	if e.where == "" {
		return e.msg
	}
	return e.where + ": " + e.msg
}

type document struct {
	obj   map[string]interface{}
	where string // "file.yaml:12"
}

var separator = regexp.MustCompile(`^---(\s.*)?$`)

func readInputs(paths []string, stdin io.Reader) ([]document, error) {
	var docs []document
	for _, path := range paths {
		var data []byte
		var err error
		name := path
		if path == "-" {
			name = "<stdin>"
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, &inputError{where: name, msg: fmt.Sprintf("cannot read: %v", err)}
		}
		more, err := splitDocuments(name, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
	return docs, nil
}

// splitDocuments cuts a YAML stream at `---` lines so each document keeps its first line number.
func splitDocuments(name string, data []byte) ([]document, error) {
	var docs []document
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	var current strings.Builder
	start, line := 1, 0
	flush := func() error {
		text := current.String()
		current.Reset()
		if strings.TrimSpace(text) == "" {
			return nil
		}
		where := fmt.Sprintf("%s:%d", name, start)
		var obj interface{}
		if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
			return &inputError{where: where, msg: fmt.Sprintf("not valid YAML: %v", err)}
		}
		if obj == nil {
			return nil
		}
		m, ok := obj.(map[string]interface{})
		if !ok {
			return &inputError{where: where, msg: "a document must be a mapping (a Kubernetes object)"}
		}
		unwrapped, err := unwrapList(m, where)
		if err != nil {
			return err
		}
		docs = append(docs, unwrapped...)
		return nil
	}
	for scanner.Scan() {
		line++
		text := scanner.Text()
		if separator.MatchString(text) {
			if err := flush(); err != nil {
				return nil, err
			}
			start = line + 1
			continue
		}
		current.WriteString(text)
		current.WriteByte('\n')
	}
	if err := scanner.Err(); err != nil {
		return nil, &inputError{where: name, msg: fmt.Sprintf("cannot read: %v", err)}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

func unwrapList(m map[string]interface{}, where string) ([]document, error) {
	kind, _ := m["kind"].(string)
	if kind != "List" && !strings.HasSuffix(kind, "List") {
		return []document{{obj: m, where: where}}, nil
	}
	if _, isList := m["items"]; !isList {
		return []document{{obj: m, where: where}}, nil
	}
	items, ok := m["items"].([]interface{})
	if !ok {
		return nil, &inputError{where: where, msg: "items of a List must be a sequence"}
	}
	var out []document
	for i, item := range items {
		obj, ok := item.(map[string]interface{})
		if !ok {
			return nil, &inputError{where: where, msg: fmt.Sprintf("items[%d] is not a mapping", i)}
		}
		out = append(out, document{obj: obj, where: where})
	}
	return out, nil
}
