// Package openshift converts OpenShift DeploymentConfigs (apps.openshift.io/v1) into
// Stagehand DeploymentConfigs (stagehand.dev/v1alpha1). It is the logic behind
// `kubectl stagehand convert`.
//
// The field names of the two APIs are the same almost everywhere, so most of the work is
// saying what could not be carried over. Every field of the input is either converted or
// named in a Note: a field the converter does not know is a warning, never a silent loss.
package openshift

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Options tune a conversion.
type Options struct {
	// Registry is the registry host, and optional path, put in front of ImageStreamTag
	// references (registry.example.com, or registry.example.com/mirror). When it is
	// empty, the placeholder registry.invalid is used and each such image is a warning.
	Registry string
	// DeployerImage replaces OpenShift's deployer image (origin-deployer, ose-deployer)
	// in custom strategies. When it is empty, DefaultDeployerImage is used.
	DeployerImage string
	// Params are the values of Template parameters (convert --param NAME=VALUE), as
	// oc process -p gives them; they override the parameters' own values.
	Params map[string]string
}

// DefaultDeployerImage is the Stagehand deployer image used when Options.DeployerImage is
// empty.
const DefaultDeployerImage = "stagehand/deployer:latest"

// placeholderRegistry stands for the registry of ImageStreamTags when Options.Registry is
// empty. The .invalid top-level domain never resolves (RFC 2606).
const placeholderRegistry = "registry.invalid"

// Severity says whether a Note needs the user's attention.
type Severity string

const (
	// SeverityWarning means something was dropped or will not work as it did on
	// OpenShift: read it before applying the result.
	SeverityWarning Severity = "warning"
	// SeverityNote reports a change that keeps the meaning.
	SeverityNote Severity = "note"
)

// Note is one remark about the conversion of one object.
type Note struct {
	// Object names the input object: "deploymentconfig/web", with " (namespace shop)"
	// when the input sets a namespace, or "service/web" for an object left out.
	Object string
	// Field is the JSON path of the field in the input, such as
	// spec.triggers[1].imageChangeParams.from; empty for the whole object.
	Field string
	// Severity is SeverityWarning or SeverityNote.
	Severity Severity
	// Message says what happened and, for a warning, what to do.
	Message string
}

// String renders the note on one line:
// "warning: deploymentconfig/web: spec.triggers[1].imageChangeParams.from: <message>".
func (n Note) String() string {
	var b strings.Builder
	b.WriteString(string(n.Severity) + ": " + n.Object + ": ")
	if n.Field != "" {
		b.WriteString(n.Field + ": ")
	}
	b.WriteString(n.Message)
	return b.String()
}

// Result is the outcome of a conversion.
type Result struct {
	// Configs are the converted DeploymentConfigs, in input order.
	Configs []*v1alpha1.DeploymentConfig
	// Notes are the remarks about every object of the input, in input order.
	Notes []Note
}

// Convert converts every OpenShift DeploymentConfig in data, which is YAML or JSON: one
// object, several YAML documents separated by ---, a stream of JSON objects, Lists (kind
// List or DeploymentConfigList, nested too), or Templates (template.openshift.io/v1),
// whose DeploymentConfigs are processed as oc process does (template.go). Objects of
// other kinds are left out, each with a note.
//
// It returns an error only when a document cannot be parsed at all (the error names the
// document, counted from 1), when a Template's DeploymentConfig names a parameter without
// a value (the error names each parameter and field), when opts.Params names a parameter
// that no Template declares, or when the input holds no DeploymentConfig.
func Convert(data []byte, opts Options) (*Result, error) {
	docs, err := readDocuments(data)
	if err != nil {
		return nil, err
	}
	c := &conversion{opts: opts, result: &Result{}, declared: map[string]bool{}}
	for i, doc := range docs {
		if err := c.add(doc, fmt.Sprintf("document %d", i+1)); err != nil {
			return nil, err
		}
	}
	switch len(c.refusals) {
	case 0:
	case 1:
		return nil, errors.New(c.refusals[0])
	default:
		return nil, fmt.Errorf("%d DeploymentConfigs of Templates cannot be converted:\n  %s", len(c.refusals), strings.Join(c.refusals, "\n  "))
	}
	for _, name := range sortedKeys(opts.Params) {
		if !c.declared[name] {
			return nil, fmt.Errorf("--param %s: no Template in the input declares a parameter %s%s", name, name, declaredText(c.declared))
		}
	}
	if len(c.result.Configs) == 0 {
		if len(c.kinds) == 0 {
			return nil, errors.New("no DeploymentConfig in the input: it holds no objects")
		}
		return nil, fmt.Errorf("no DeploymentConfig (apps.openshift.io/v1) in the input: found %s", countKinds(c.kinds))
	}
	return c.result, nil
}

// readDocuments splits data into its objects. Empty documents (only comments, say) are
// skipped and not counted.
func readDocuments(data []byte) ([]map[string]any, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []map[string]any
	for {
		var raw json.RawMessage
		err := decoder.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		where := fmt.Sprintf("document %d", len(docs)+1)
		if err != nil {
			if strings.Contains(err.Error(), "line ") {
				where += " (its lines counted from its own start)"
			}
			return nil, fmt.Errorf("%s: cannot parse it as YAML or JSON: %w", where, err)
		}
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
			continue
		}
		var v any
		if err := utiljson.Unmarshal(trimmed, &v); err != nil {
			return nil, fmt.Errorf("%s: cannot parse it as JSON: %w", where, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want a Kubernetes object (a map with apiVersion and kind), got %s", where, describeValue(v))
		}
		docs = append(docs, obj)
	}
}

// conversion is one run of Convert.
type conversion struct {
	opts   Options
	result *Result
	// kinds lists the kinds found, for the error when there is no DeploymentConfig.
	kinds []string
	// declared are the parameters of the Templates in the input.
	declared map[string]bool
	// refusals are the Templates' DeploymentConfigs that name parameters without a value.
	refusals []string
}

// declaredText lists the declared parameters for an error: " (declared: A, B)".
func declaredText(declared map[string]bool) string {
	if len(declared) == 0 {
		return " (the input has no Template parameters)"
	}
	return " (declared: " + strings.Join(sortedKeys(declared), ", ") + ")"
}

// add converts obj, found at where, or leaves it out with a note. A List adds its items.
func (c *conversion) add(obj map[string]any, where string) error {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	if items, isList := obj["items"]; isList && strings.HasSuffix(kind, "List") {
		return c.addList(kind, apiVersion, items, where)
	}
	if kind == "" {
		c.leaveOut("an object without kind", where, SeverityWarning, "kind", "missing: this is not a Kubernetes object; left out")
		return nil
	}
	name := objectName(kind, obj, where)
	switch {
	case kind == "Template" && (apiVersion == "template.openshift.io/v1" || apiVersion == "v1"):
		return c.addTemplate(obj, name, where)
	case kind != "DeploymentConfig":
		c.leaveOut(kind, name, SeverityNote, "", "not a DeploymentConfig; left out")
	case apiVersion == "apps.openshift.io/v1" || apiVersion == "v1":
		n := notes{object: name}
		if apiVersion == "v1" {
			n.note("apiVersion", "v1 is the legacy API version of OpenShift DeploymentConfigs (before apps.openshift.io/v1); converted the same way")
		}
		c.result.Configs = append(c.result.Configs, convertDeploymentConfig(obj, c.opts, &n))
		c.result.Notes = append(c.result.Notes, n.list...)
	case strings.HasPrefix(apiVersion, v1alpha1.GroupName+"/"):
		c.leaveOut("DeploymentConfig (apiVersion "+apiVersion+")", name, SeverityNote, "apiVersion", "already a Stagehand DeploymentConfig; left out")
	default:
		c.leaveOut("DeploymentConfig (apiVersion "+apiVersion+")", name, SeverityWarning, "apiVersion",
			fmt.Sprintf("%q is not an OpenShift DeploymentConfig version (want apps.openshift.io/v1); left out", apiVersion))
	}
	return nil
}

// leaveOut records an object of the input that is not converted: its kind, for the error
// when nothing is converted, and a note about it.
func (c *conversion) leaveOut(kind, object string, sev Severity, field, message string) {
	c.kinds = append(c.kinds, kind)
	c.result.Notes = append(c.result.Notes, Note{Object: object, Field: field, Severity: sev, Message: message})
}

// addList adds the items of a List. The items of a typed list such as
// DeploymentConfigList may leave out their kind and apiVersion; they are the list's.
func (c *conversion) addList(kind, apiVersion string, items any, where string) error {
	list, ok := items.([]any)
	if !ok {
		if items == nil {
			return nil
		}
		return fmt.Errorf("%s: the items of a %s must be a list, got %s", where, kind, describeValue(items))
	}
	itemKind := strings.TrimSuffix(kind, "List")
	for i, item := range list {
		at := fmt.Sprintf("%s, item %d", where, i+1)
		obj, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want a Kubernetes object, got %s", at, describeValue(item))
		}
		if _, has := obj["kind"]; !has && itemKind != "" {
			obj["kind"] = itemKind
			if _, has := obj["apiVersion"]; !has {
				obj["apiVersion"] = apiVersion
			}
		}
		if err := c.add(obj, at); err != nil {
			return err
		}
	}
	return nil
}

// objectName names an object of the input in notes: "service/web", with its namespace
// when it has one, or its place in the input when it has no name.
func objectName(kind string, obj map[string]any, where string) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	if name == "" {
		return strings.ToLower(kind) + " in " + where
	}
	s := strings.ToLower(kind) + "/" + name
	if namespace != "" {
		s += " (namespace " + namespace + ")"
	}
	return s
}

// countKinds lists kinds once each, in order, with a count where there are several:
// "Service (2), Route".
func countKinds(kinds []string) string {
	counts := map[string]int{}
	var order []string
	for _, k := range kinds {
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	for i, k := range order {
		if counts[k] > 1 {
			order[i] = fmt.Sprintf("%s (%d)", k, counts[k])
		}
	}
	return strings.Join(order, ", ")
}
