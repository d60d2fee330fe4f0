package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompareIgnoresOnlyHelmLabels(t *testing.T) {
	obj := func(labels map[string]any, replicas any) map[string]any {
		meta := map[string]any{"name": "c", "namespace": "ns"}
		if labels != nil {
			meta["labels"] = labels
		}
		return normalize(map[string]any{"kind": "Deployment", "metadata": meta, "spec": map[string]any{"replicas": replicas}})
	}
	deploy := map[string]map[string]any{"Deployment ns/c": obj(map[string]any{"app": "x"}, 2)}

	same := map[string]map[string]any{"Deployment ns/c": obj(map[string]any{"app": "x", "helm.sh/chart": "stagehand-0.1.0",
		"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "s", "app.kubernetes.io/version": "0.1.0"}, 2)}
	assert.Empty(t, compare(deploy, same))

	other := map[string]map[string]any{"Deployment ns/c": obj(map[string]any{"app": "x", "team": "a"}, 3)}
	assert.Equal(t, []string{
		"Deployment ns/c .metadata.labels.team: deploy/ has nothing, the chart a",
		"Deployment ns/c .spec.replicas: deploy/ has 2, the chart 3",
	}, compare(deploy, other))

	assert.Empty(t, diff("k", "", "a &&\n\n  b", "a &&\n  b"), "whitespace within a string")
	assert.NotEmpty(t, diff("k", "", "a && b", "a || b"))

	assert.Equal(t, []string{"Deployment ns/c: in deploy/, not in the chart", "Service ns/m: in the chart, not in deploy/"},
		compare(deploy, map[string]map[string]any{"Service ns/m": obj(nil, 1)}))
}
