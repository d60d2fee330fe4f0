package openshift

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const minimalDC = `apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: %s}
spec:
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: app, image: example/app:1}]}
`

func dcDoc(name string) string {
	return fmt.Sprintf(minimalDC, name)
}

// inputFormCase is one case of TestConvertReadsEveryFormOfInput.
type inputFormCase struct {
	name      string
	input     string
	wantNames []string
	wantNotes []string
}

// inputFormCases are TestConvertReadsEveryFormOfInput's cases.
var inputFormCases = []inputFormCase{
	{
		name:      "one YAML document",
		input:     dcDoc("web"),
		wantNames: []string{"web"},
		wantNotes: []string{},
	},
	{
		name:      "several YAML documents, other kinds left out in order",
		input:     "# exported\n---\n" + dcDoc("web") + "---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n# nothing here\n---\n" + dcDoc("api"),
		wantNames: []string{"web", "api"},
		wantNotes: []string{"note: service/web: not a DeploymentConfig; left out"},
	},
	{
		name: "a List of a DeploymentConfig, a Route and a nested List",
		input: `apiVersion: v1
kind: List
items:
  - {apiVersion: apps.openshift.io/v1, kind: DeploymentConfig, metadata: {name: web}, spec: {template: {metadata: {labels: {app: web}}}}}
  - {apiVersion: route.openshift.io/v1, kind: Route, metadata: {name: web, namespace: shop}}
  - apiVersion: v1
    kind: List
    items:
      - {apiVersion: apps.openshift.io/v1, kind: DeploymentConfig, metadata: {name: api}, spec: {template: {metadata: {labels: {app: api}}}}}
`,
		wantNames: []string{"web", "api"},
		wantNotes: []string{"note: route/web (namespace shop): not a DeploymentConfig; left out"},
	},
	{
		name: "a DeploymentConfigList whose items have no kind",
		input: `apiVersion: apps.openshift.io/v1
kind: DeploymentConfigList
items:
  - {metadata: {name: web}, spec: {template: {metadata: {labels: {app: web}}}}}
`,
		wantNames: []string{"web"},
		wantNotes: []string{},
	},
	{
		name:      "one JSON object",
		input:     `{"apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "metadata": {"name": "web"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}}`,
		wantNames: []string{"web"},
		wantNotes: []string{},
	},
	{
		name: "a stream of JSON objects",
		input: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
{"apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "metadata": {"name": "web"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}}`,
		wantNames: []string{"web"},
		wantNotes: []string{"note: configmap/settings: not a DeploymentConfig; left out"},
	},
	{
		name:      "the legacy apiVersion v1",
		input:     "apiVersion: v1\nkind: DeploymentConfig\nmetadata: {name: web}\nspec: {template: {metadata: {labels: {app: web}}}}\n",
		wantNames: []string{"web"},
		wantNotes: []string{"note: deploymentconfig/web: apiVersion: v1 is the legacy API version of OpenShift DeploymentConfigs (before apps.openshift.io/v1); converted the same way"},
	},
	{
		name:      "a Stagehand DeploymentConfig and an unknown version are left out",
		input:     dcDoc("web") + "---\napiVersion: stagehand.dev/v1alpha1\nkind: DeploymentConfig\nmetadata: {name: done}\n---\napiVersion: apps.openshift.io/v2\nkind: DeploymentConfig\nmetadata: {name: future}\n",
		wantNames: []string{"web"},
		wantNotes: []string{
			"note: deploymentconfig/done: apiVersion: already a Stagehand DeploymentConfig; left out",
			`warning: deploymentconfig/future: apiVersion: "apps.openshift.io/v2" is not an OpenShift DeploymentConfig version (want apps.openshift.io/v1); left out`,
		},
	},
	{
		name:      "an object without kind",
		input:     dcDoc("web") + "---\nmetadata: {name: stray}\n",
		wantNames: []string{"web"},
		wantNotes: []string{"warning: document 2: kind: missing: this is not a Kubernetes object; left out"},
	},
	{
		name:      "an unnamed object is named by its place",
		input:     "kind: List\napiVersion: v1\nitems: [{apiVersion: v1, kind: Secret}]\n---\n" + dcDoc("web"),
		wantNames: []string{"web"},
		wantNotes: []string{"note: secret in document 1, item 1: not a DeploymentConfig; left out"},
	},
}

func TestConvertReadsEveryFormOfInput(t *testing.T) {
	tests := inputFormCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Convert([]byte(tt.input), Options{})
			require.NoError(t, err)
			names := []string{}
			for _, dc := range res.Configs {
				names = append(names, dc.Name)
				assert.Equal(t, "stagehand.dev/v1alpha1", dc.APIVersion)
				assert.Equal(t, "DeploymentConfig", dc.Kind)
			}
			assert.Equal(t, tt.wantNames, names)
			notes := []string{}
			for _, n := range res.Notes {
				notes = append(notes, n.String())
			}
			assert.Equal(t, tt.wantNotes, notes)
		})
	}
}

func TestConvertFailsOnlyOnUnparsableInputOrNoDeploymentConfig(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantErr string
	}{
		{
			name:    "broken YAML in the second document",
			input:   dcDoc("web") + "---\nkind: Service\nmetadata: {name: [unclosed\n",
			wantErr: "document 2 (its lines counted from its own start): cannot parse it as YAML or JSON: error converting YAML to JSON: yaml: line 2",
		},
		{
			name:    "broken JSON after a good object",
			input:   `{"kind": "Service", "metadata": {"name": "a"}} {"kind": "Service", "metadata": {"name": "b"}} {"kind": `,
			wantErr: "document 3: cannot parse it as YAML or JSON",
		},
		{
			name:    "a document that is not an object",
			input:   dcDoc("web") + "---\njust some text\n",
			wantErr: "document 2: want a Kubernetes object (a map with apiVersion and kind), got a string",
		},
		{
			name:    "items of a List that are not a list",
			input:   "apiVersion: v1\nkind: List\nitems: {a: b}\n",
			wantErr: "document 1: the items of a List must be a list, got an object",
		},
		{
			name:    "an item of a List that is not an object",
			input:   "apiVersion: v1\nkind: List\nitems: [3]\n",
			wantErr: "document 1, item 1: want a Kubernetes object, got a number",
		},
		{
			name:    "only other kinds",
			input:   "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
			wantErr: "no DeploymentConfig (apps.openshift.io/v1) in the input: found Service (2), Route",
		},
		{
			name:    "only a Stagehand DeploymentConfig",
			input:   "apiVersion: stagehand.dev/v1alpha1\nkind: DeploymentConfig\nmetadata: {name: a}\n",
			wantErr: "no DeploymentConfig (apps.openshift.io/v1) in the input: found DeploymentConfig (apiVersion stagehand.dev/v1alpha1)",
		},
		{
			name:    "only comments",
			input:   "# nothing\n---\n# still nothing\n",
			wantErr: "no DeploymentConfig in the input: it holds no objects",
		},
		{
			name:    "empty",
			input:   "",
			wantErr: "no DeploymentConfig in the input: it holds no objects",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Convert([]byte(tt.input), Options{})
			require.Error(t, err)
			assert.Nil(t, res)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestNoteString(t *testing.T) {
	tests := []struct {
		name string
		note Note
		want string
	}{
		{
			name: "with a field",
			note: Note{Object: "deploymentconfig/web", Field: "spec.triggers[1].imageChangeParams.from", Severity: SeverityWarning, Message: "something"},
			want: "warning: deploymentconfig/web: spec.triggers[1].imageChangeParams.from: something",
		},
		{
			name: "about the whole object",
			note: Note{Object: "service/web (namespace shop)", Severity: SeverityNote, Message: "not a DeploymentConfig; left out"},
			want: "note: service/web (namespace shop): not a DeploymentConfig; left out",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.note.String())
		})
	}
}
