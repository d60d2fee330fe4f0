// Command chartdiff compares two renderings of Stagehand's manifests: deploy/ (kubectl
// kustomize) and the Helm chart at its defaults (helm template --include-crds). It fails
// on any object that is in one and not the other, and on any difference in an object,
// except the labels Helm adds to everything, and whitespace within a string (see diff).
// deploy/'s Namespace is the one object the chart does not render: Helm stores the
// release in its namespace before it creates anything, so `helm install
// --create-namespace` makes it (docs/install.md). make verify runs it (hack/verify.sh), so the
// chart and deploy/ cannot drift apart.
//
//	chartdiff <deploy/ folder, or a rendered file> <chart.yaml>
//
// For a folder it reads the files its kustomization.yaml lists, as kubectl kustomize
// would; a kustomization that does more than list resources is refused, so the check never
// compares something other than what users apply.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// helmLabels are the labels the chart adds to every object (templates/_helpers.tpl).
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: chartdiff <deploy.yaml> <chart.yaml>")
		os.Exit(2)
	}
	diffs, err := compareFiles(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdiff:", err)
		os.Exit(2)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(os.Stderr, "chartdiff: the chart at its defaults and deploy/ differ (%d):\n  %s\n", len(diffs), strings.Join(diffs, "\n  "))
		fmt.Fprintln(os.Stderr, "Change both, or run make generate for what the chart copies from deploy/ (hack/update-chart.sh).")
		os.Exit(1)
	}
	fmt.Println("chartdiff: the chart at its defaults renders what deploy/ holds")
}

func compareFiles(deployPath, chartPath string) ([]string, error) {
	deploy, err := loadDeploy(deployPath)
	if err != nil {
		return nil, err
	}
	chart, err := load(chartPath)
	if err != nil {
		return nil, err
	}
	return compare(deploy, chart), nil
}

// loadDeploy reads deploy/ through its kustomization.yaml, or a rendered file.
func loadDeploy(path string) (map[string]map[string]any, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return load(path)
	}
	raw, err := os.ReadFile(filepath.Join(path, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k map[string]any
	if err := sigsyaml.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", path, err)
	}
	var data bytes.Buffer
	for key, v := range k {
		switch key {
		case "apiVersion", "kind":
		case "resources":
			list, _ := v.([]any)
			for _, r := range list {
				file, err := os.ReadFile(filepath.Join(path, fmt.Sprint(r)))
				if err != nil {
					return nil, err
				}
				data.WriteString("\n---\n")
				data.Write(file)
			}
		default:
			return nil, fmt.Errorf("%s/kustomization.yaml has %q: chartdiff reads only a list of resources; render it with kubectl kustomize and pass the file", path, key)
		}
	}
	return parse(path, data.Bytes())
}

// load reads every object of a multi-document YAML file, by kind/namespace/name.
func load(path string) (map[string]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

func parse(path string, data []byte) (map[string]map[string]any, error) {
	objs := map[string]map[string]any{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) == 0 {
			continue
		}
		key := keyOf(obj)
		if _, dup := objs[key]; dup {
			return nil, fmt.Errorf("%s: %s twice", path, key)
		}
		objs[key] = normalize(obj)
	}
}

func keyOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return fmt.Sprintf("%v %s/%s", obj["kind"], ns, name)
}

// normalize drops Helm's labels, and the labels map when nothing else is in it.
func normalize(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	if labels, ok := meta["labels"].(map[string]any); ok {
		for _, l := range helmLabels {
			delete(labels, l)
		}
		if len(labels) == 0 {
			delete(meta, "labels")
		}
	}
	return obj
}

// compare lists the objects only one side has, and every differing field.
func compare(deploy, chart map[string]map[string]any) []string {
	var out []string
	for key, d := range deploy {
		if d["kind"] == "Namespace" {
			continue // Helm's: --create-namespace
		}
		c, ok := chart[key]
		if !ok {
			out = append(out, key+": in deploy/, not in the chart")
			continue
		}
		out = append(out, diff(key, "", d, c)...)
	}
	for key := range chart {
		if _, ok := deploy[key]; !ok {
			out = append(out, key+": in the chart, not in deploy/")
		}
	}
	sort.Strings(out)
	return out
}

// diff lists the paths where a (deploy/) and b (the chart) differ.
func diff(key, path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		slices.Sort(names)
		var out []string
		for _, k := range names {
			out = append(out, diff(key, path+"."+k, am[k], bm[k])...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(key, fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	if as, ok := a.(string); ok {
		if bs, ok := b.(string); ok && strings.Join(strings.Fields(as), " ") == strings.Join(strings.Fields(bs), " ") {
			// YAML parsers fold a block scalar with more-indented lines differently (a CEL
			// expression in the policies, reread by Helm's fromYaml): whitespace only.
			return nil
		}
	}
	return []string{fmt.Sprintf("%s %s: deploy/ has %v, the chart %v", key, path, short(a), short(b))}
}

func short(v any) string {
	s := fmt.Sprint(v)
	if v == nil {
		return "nothing"
	}
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}
