// Command crdpatch post-processes the CRDs that controller-gen writes.
//
// It adds size bounds to the upstream types embedded in Stagehand's CRDs
// (the pod template, the label selector, environment variables, label maps), whose Go
// types cannot carry kubebuilder markers. The CEL rules of the DeploymentConfig look into
// those fields, and the apiserver refuses a rule whose estimated cost is unbounded. Each
// bound is at or above what Kubernetes itself accepts for the field (a container or volume
// name is a DNS label of at most 63 characters, a label value at most 63), or far above any
// real pod template (an environment variable name of 1024 characters).
//
// It also restricts a selector expression's operator to the four that Kubernetes accepts,
// and the pod template's enumerated fields (imagePullPolicy, protocol and the like) to the
// values Kubernetes accepts, as enums, so that the apiserver's refusal names the field.
//
// It also drops the upstream descriptions inside the embedded pod template (kubectl explain
// pod.spec has them). That keeps the CRD far below the 256 KiB that a client-side
// `kubectl apply` can store in its last-applied annotation.
//
// Usage: crdpatch FILE...   (rewrites each CRD YAML file in place)
package main

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// bound sets key=value on the schema found by following path from a version's
// openAPIV3Schema. Path elements are property names; "[]" steps into items and "{}" into
// additionalProperties.
type bound struct {
	path  string
	key   string
	value any
}

// maxEnvNameLength bounds an environment variable's name in a hook or a custom strategy,
// which a CEL rule checks (Kubernetes itself sets no length).
const maxEnvNameLength = 1024

// boundsOf lists the bounds of each CRD, by kind; a kind not listed gets none.
var boundsOf = map[string][]bound{
	"DeploymentConfig": dcBounds,
	"ExecutionHook":    executionHookBounds,
}

// executionHookBounds bound the label selector of an ExecutionHook, which its spec's
// immutability rule compares.
var executionHookBounds = []bound{
	{"spec.podSelection.podContainerSelector.podSelector.matchLabels", "maxProperties", 64},
	{"spec.podSelection.podContainerSelector.podSelector.matchLabels.{}", "maxLength", 63},
	{"spec.podSelection.podContainerSelector.podSelector.matchExpressions", "maxItems", 32},
	{"spec.podSelection.podContainerSelector.podSelector.matchExpressions.[].key", "maxLength", 317},
	{"spec.podSelection.podContainerSelector.podSelector.matchExpressions.[].values", "maxItems", 64},
	{"spec.podSelection.podContainerSelector.podSelector.matchExpressions.[].values.[]", "maxLength", 63},
	{"spec.podSelection.podContainerSelector.podSelector.matchExpressions.[].operator", "enum", []any{"In", "NotIn", "Exists", "DoesNotExist"}},
}

var dcBounds = []bound{
	{"spec.template.metadata.labels", "maxProperties", 64},
	{"spec.template.metadata.labels.{}", "maxLength", 63},
	{"spec.template.spec.containers", "maxItems", 64},
	{"spec.template.spec.containers.[].name", "maxLength", 63},
	{"spec.template.spec.volumes", "maxItems", 256},
	{"spec.template.spec.volumes.[].name", "maxLength", 63},
	{"spec.selector.matchLabels", "maxProperties", 64},
	{"spec.selector.matchLabels.{}", "maxLength", 63},
	{"spec.selector.matchExpressions", "maxItems", 32},
	{"spec.selector.matchExpressions.[].key", "maxLength", 317},
	{"spec.selector.matchExpressions.[].values", "maxItems", 64},
	{"spec.selector.matchExpressions.[].values.[]", "maxLength", 63},
	{"spec.selector.matchExpressions.[].operator", "enum", []any{"In", "NotIn", "Exists", "DoesNotExist"}},
	{"spec.template.spec.initContainers", "maxItems", 64},
	{"spec.template.spec.initContainers.[].name", "maxLength", 63},
	{"spec.strategy.labels.{}", "maxLength", 63},
	{"spec.strategy.customParams.environment.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.recreateParams.pre.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.recreateParams.mid.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.recreateParams.post.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.rollingParams.pre.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.rollingParams.post.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.recreateParams.failed.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	{"spec.strategy.rollingParams.failed.execNewPod.env.[].name", "maxLength", maxEnvNameLength},
	// A step hook is one of up to 32: its lists are shorter, so that the rules that walk
	// every step stay within the apiserver's CEL cost budget.
	{"spec.strategy.rollingParams.steps.[].setReplicas", "maxLength", 4},
	{"spec.strategy.rollingParams.steps.[].hook.execNewPod.env", "maxItems", 64},
	{"spec.strategy.rollingParams.steps.[].hook.execNewPod.env.[].name", "maxLength", 256},
	{"spec.strategy.rollingParams.steps.[].hook.execNewPod.volumes", "maxItems", 16},
	{"spec.strategy.rollingParams.steps.[].hook.execNewPod.command.[]", "maxLength", 65536},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch FILE...")
		os.Exit(2)
	}
	for _, file := range os.Args[1:] {
		if err := rewrite(file); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %s: %v\n", file, err)
			os.Exit(1)
		}
	}
}

func rewrite(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return fmt.Errorf("parsing: %w", err)
	}
	versions, _ := dig(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return fmt.Errorf("no spec.versions")
	}
	for _, v := range versions {
		schema, _ := dig(v, "schema", "openAPIV3Schema").(map[string]any)
		if schema == nil {
			return fmt.Errorf("a version has no openAPIV3Schema")
		}
		kind, _ := dig(crd, "spec", "names", "kind").(string)
		bounds := boundsOf[kind]
		if kind == "DeploymentConfig" {
			bounds = append(append([]bound{}, bounds...), templateBounds()...)
		}
		for _, b := range bounds {
			node, err := walk(schema, b.path)
			if err != nil {
				return fmt.Errorf("bound %s %s: %w", b.path, b.key, err)
			}
			node[b.key] = b.value
		}
		if kind != "DeploymentConfig" {
			continue
		}
		template, err := walk(schema, "spec.template")
		if err != nil {
			return fmt.Errorf("pod template: %w", err)
		}
		for _, child := range []string{"metadata", "spec"} {
			if m, ok := dig(template, "properties", child).(map[string]any); ok {
				dropDescriptions(m)
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
}

func walk(schema map[string]any, path string) (map[string]any, error) {
	node := schema
	for _, step := range strings.Split(path, ".") {
		var next any
		switch step {
		case "[]":
			next = node["items"]
		case "{}":
			next = node["additionalProperties"]
		default:
			next = dig(node, "properties", step)
		}
		m, ok := next.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no schema at %q", step)
		}
		node = m
	}
	return node, nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// dropDescriptions removes every description at and below node.
func dropDescriptions(node any) {
	switch n := node.(type) {
	case map[string]any:
		delete(n, "description")
		for _, v := range n {
			dropDescriptions(v)
		}
	case []any:
		for _, v := range n {
			dropDescriptions(v)
		}
	}
}
