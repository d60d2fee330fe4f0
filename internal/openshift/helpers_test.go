package openshift

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// baseSpec is the spec of the OpenShift DeploymentConfig web that the tests start from:
// one container app with one volume, labelled app=web.
const baseSpec = `
replicas: 2
selector: {app: web}
template:
  metadata: {labels: {app: web}}
  spec:
    containers:
      - name: app
        image: registry.example.com/web:1.0
        volumeMounts: [{name: data, mountPath: /data}]
    volumes: [{name: data, emptyDir: {}}]
`

// openshiftDC returns an OpenShift DeploymentConfig web as JSON: baseSpec with the
// top-level keys of specYAML put over it (a key set to null removes it).
func openshiftDC(t *testing.T, specYAML string) []byte {
	t.Helper()
	spec := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(baseSpec), &spec))
	over := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(specYAML), &over))
	for k, v := range over {
		if v == nil {
			delete(spec, k)
			continue
		}
		spec[k] = v
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "apps.openshift.io/v1",
		"kind":       "DeploymentConfig",
		"metadata":   map[string]any{"name": "web"},
		"spec":       spec,
	})
	require.NoError(t, err)
	return data
}

// withNamespace sets metadata.namespace of the JSON object dc, when namespace is not empty.
func withNamespace(t *testing.T, dc []byte, namespace string) []byte {
	t.Helper()
	if namespace == "" {
		return dc
	}
	obj := map[string]any{}
	require.NoError(t, json.Unmarshal(dc, &obj))
	obj["metadata"].(map[string]any)["namespace"] = namespace
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return data
}

// convertOne converts input, which must hold exactly one DeploymentConfig.
func convertOne(t *testing.T, input []byte, opts Options) (*v1alpha1.DeploymentConfig, []Note) {
	t.Helper()
	res, err := Convert(input, opts)
	require.NoError(t, err)
	require.Len(t, res.Configs, 1)
	return res.Configs[0], res.Notes
}

// where lists the notes as "severity field", to compare with an exact list.
func where(notes []Note) []string {
	out := []string{}
	for _, n := range notes {
		out = append(out, string(n.Severity)+" "+n.Field)
	}
	return out
}

// message returns the message of the only note at field, failing the test when there is
// not exactly one.
func message(t *testing.T, notes []Note, field string) string {
	t.Helper()
	var found []Note
	for _, n := range notes {
		if n.Field == field {
			found = append(found, n)
		}
	}
	require.Len(t, found, 1, "notes at %s in %v", field, notes)
	return found[0].Message
}
