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
		m, err := unwrapConfiguration(m, text, name, start)
		if err != nil {
			return err
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

// The Kueue manager Configuration comes in every form kueue-policy emits and Kueue mounts: bare
// (kind Configuration), the ConfigMap Kueue mounts (data key controller_manager_config.yaml; the
// kustomize patch kueue-manager-config.patch.yaml is the same ConfigMap) and the Helm values file
// (managerConfig.controllerManagerConfigYaml, no kind). The wrapping forms are replaced by the
// Configuration they hold, so decodeWorld reads one shape. One that cannot be read is an input
// error naming the file and line: without it the scheduler would run with Kueue's defaults and
// blame the jobs. compiler/evaluator/configuration_forms.py applies the same rules.
const (
	configMapKey   = "controller_manager_config.yaml"
	helmValuesKey  = "managerConfig"
	helmValuesText = "controllerManagerConfigYaml"
)

func unwrapConfiguration(m map[string]interface{}, docText, name string, start int) (map[string]interface{}, error) {
	kind, hasKind := m["kind"].(string)
	apiVersion, hasAPIVersion := m["apiVersion"].(string)
	var field, key, what string
	var value interface{}
	switch {
	case hasKind && kind == "ConfigMap" && apiVersion == "v1":
		data, ok := m["data"].(map[string]interface{})
		if !ok {
			return m, nil
		}
		if value, ok = data[configMapKey]; !ok {
			return m, nil
		}
		meta, _ := m["metadata"].(map[string]interface{})
		ns, _ := meta["namespace"].(string)
		objName, _ := meta["name"].(string)
		if ns != "" {
			objName = ns + "/" + objName
		}
		field, key, what = "data."+configMapKey, configMapKey, "ConfigMap "+objName
	case !hasKind && !hasAPIVersion && m["kind"] == nil && m["apiVersion"] == nil:
		values, ok := m[helmValuesKey].(map[string]interface{})
		if !ok {
			return m, nil
		}
		if value, ok = values[helmValuesText]; !ok {
			return m, nil
		}
		field, key, what = helmValuesKey+"."+helmValuesText, helmValuesText, "Helm values"
	default:
		if hasKind && kind == "Configuration" && strings.HasPrefix(apiVersion, "config.kueue.x-k8s.io/") {
			if err := checkConfigurationShape(m); err != nil {
				return nil, &inputError{where: fmt.Sprintf("%s:%d", name, start), msg: "Configuration: " + err.Error()}
			}
		}
		return m, nil
	}
	where := fmt.Sprintf("%s:%d", name, start)
	text, ok := value.(string)
	if !ok {
		return nil, &inputError{where: where, msg: fmt.Sprintf("%s: %s must be the Kueue Configuration as a YAML string", what, field)}
	}
	var config interface{}
	if err := yaml.Unmarshal([]byte(text), &config); err != nil {
		return nil, &inputError{where: fmt.Sprintf("%s:%d", name, innerLine(docText, key, start, err)),
			msg: fmt.Sprintf("%s: %s is not a readable Kueue Configuration: %v", what, field, err)}
	}
	cm, ok := config.(map[string]interface{})
	cKind, _ := cm["kind"].(string)
	cAPIVersion, _ := cm["apiVersion"].(string)
	if !ok || cKind != "Configuration" || !strings.HasPrefix(cAPIVersion, "config.kueue.x-k8s.io/") {
		return nil, &inputError{where: where, msg: fmt.Sprintf("%s: %s does not hold a Kueue Configuration (apiVersion config.kueue.x-k8s.io/..., kind Configuration)", what, field)}
	}
	if err := checkConfigurationShape(cm); err != nil {
		return nil, &inputError{where: where, msg: fmt.Sprintf("%s: %s: %v", what, field, err)}
	}
	return cm, nil
}

// checkConfigurationShape: the sections the engines read have the types Kueue's Configuration
// gives them (a wrong one is a Configuration Kueue's manager refuses to start with).
func checkConfigurationShape(cm map[string]interface{}) error {
	for _, section := range []string{"fairSharing", "resources", "integrations"} {
		if v, present := cm[section]; present && v != nil {
			if _, ok := v.(map[string]interface{}); !ok {
				return fmt.Errorf("%s must be a mapping", section)
			}
		}
	}
	res, _ := cm["resources"].(map[string]interface{})
	for _, f := range []string{"deviceClassMappings", "excludeResourcePrefixes"} {
		if v, present := res[f]; present && v != nil {
			if _, ok := v.([]interface{}); !ok {
				return fmt.Errorf("resources.%s must be a list", f)
			}
		}
	}
	if v, present := res["quotaCheckStrategy"]; present && v != nil {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("resources.quotaCheckStrategy must be a string")
		}
	}
	mappings, _ := res["deviceClassMappings"].([]interface{})
	for i, item := range mappings {
		mapping, ok := item.(map[string]interface{})
		_, named := mapping["name"].(string)
		_, listed := mapping["deviceClassNames"].([]interface{})
		if !ok || !named || !listed {
			return fmt.Errorf("resources.deviceClassMappings[%d] must have a name and a list of deviceClassNames", i)
		}
	}
	return nil
}

var yamlErrorLine = regexp.MustCompile(`line (\d+)`)

// innerLine: the file line of the embedded YAML's error, from the line of `key` in the document
// (the block scalar starts on the next line); the document's first line when it cannot tell.
func innerLine(docText, key string, start int, err error) int {
	match := yamlErrorLine.FindStringSubmatch(err.Error())
	if match == nil {
		return start
	}
	var inner int
	fmt.Sscanf(match[1], "%d", &inner)
	lines := strings.Split(docText, "\n")
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, key+":") || strings.HasPrefix(trimmed, `"`+key+`":`) {
			target := i + inner
			if target > len(lines)-1 {
				target = len(lines) - 1
			}
			return start + target
		}
	}
	return start
}
