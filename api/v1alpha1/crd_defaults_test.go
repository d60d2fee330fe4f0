package v1alpha1

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The CRD schema applies defaults at admission, SetDefaults applies them in Go. The values
// are written twice (markers and constants); this test fails when they drift apart.
func TestCRDDefaultsMatchGoDefaults(t *testing.T) {
	schema := loadCRDSchema(t)
	spec := "spec"
	strategy := spec + ".strategy"
	rolling := strategy + ".rollingParams"
	retry := strategy + ".recreateParams.pre.retry"
	tests := []struct {
		path string
		want any
	}{
		{spec + ".replicas", float64(DefaultReplicas)},
		{spec + ".revisionHistoryLimit", float64(DefaultRevisionHistoryLimit)},
		{spec + ".triggers", []any{map[string]any{"type": string(DeploymentTriggerOnConfigChange)}}},
		{strategy, map[string]any{"type": string(DeploymentStrategyTypeRolling), "activeDeadlineSeconds": float64(DefaultActiveDeadlineSeconds)}},
		{strategy + ".type", string(DeploymentStrategyTypeRolling)},
		{strategy + ".onFailure", string(OnFailureRollback)},
		{strategy + ".activeDeadlineSeconds", float64(DefaultActiveDeadlineSeconds)},
		{strategy + ".recreateParams.timeoutSeconds", float64(DefaultTimeoutSeconds)},
		{rolling + ".timeoutSeconds", float64(DefaultTimeoutSeconds)},
		{rolling + ".maxSurge", DefaultMaxSurge},
		{rolling + ".maxUnavailable", DefaultMaxUnavailable},
		{retry + ".maxAttempts", float64(DefaultRetryMaxAttempts)},
		{retry + ".backoff", map[string]any{"initialDelaySeconds": float64(DefaultRetryInitialDelay), "maxDelaySeconds": float64(DefaultRetryMaxDelay)}},
		{retry + ".backoff.initialDelaySeconds", float64(DefaultRetryInitialDelay)},
		{retry + ".backoff.maxDelaySeconds", float64(DefaultRetryMaxDelay)},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			node := schemaAt(t, schema, tt.path)
			assert.Equal(t, tt.want, node["default"])
		})
	}
}

// The CRD must carry the scale subresource wired to the status selector, and the short name.
func TestCRDSubresourcesAndNames(t *testing.T) {
	crd := loadCRD(t)
	version := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	scale := version["subresources"].(map[string]any)["scale"].(map[string]any)
	assert.Equal(t, ".spec.replicas", scale["specReplicasPath"])
	assert.Equal(t, ".status.replicas", scale["statusReplicasPath"])
	assert.Equal(t, ".status.selector", scale["labelSelectorPath"])
	names := crd["spec"].(map[string]any)["names"].(map[string]any)
	assert.Equal(t, []any{"dc"}, names["shortNames"])
	assert.Equal(t, []any{"all"}, names["categories"])
	var columns []string
	for _, c := range version["additionalPrinterColumns"].([]any) {
		columns = append(columns, c.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"Revision", "Desired", "Current", "Ready", "Phase", "Frozen", "Age"}, columns)
}

func loadCRD(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../deploy/crds/stagehand.dev_deploymentconfigs.yaml")
	require.NoError(t, err, "run make generate")
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(data, &crd))
	return crd
}

func loadCRDSchema(t *testing.T) map[string]any {
	t.Helper()
	crd := loadCRD(t)
	version := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	return version["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
}

func schemaAt(t *testing.T, schema map[string]any, path string) map[string]any {
	t.Helper()
	node := schema
	for _, step := range strings.Split(path, ".") {
		props, ok := node["properties"].(map[string]any)
		require.True(t, ok, "no properties above %q in %s", step, path)
		node, ok = props[step].(map[string]any)
		require.True(t, ok, "no schema for %q in %s", step, path)
	}
	return node
}
