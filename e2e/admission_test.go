//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// admissionCase is one document of e2e/testdata/admission/{valid,invalid}.yaml.
type admissionCase struct {
	name    string
	field   string // the field a Status cause must name; empty when the error has no causes
	message string // a fragment of that cause's message (or of the whole error)
	object  *unstructured.Unstructured
}

var (
	caseLine    = regexp.MustCompile(`(?m)^# case: (.*)$`)
	fieldLine   = regexp.MustCompile(`(?m)^# field: (.*)$`)
	messageLine = regexp.MustCompile(`(?m)^# message: (.*)$`)
)

func loadAdmissionCases(t *testing.T, file string) []admissionCase {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var cases []admissionCase
	for _, doc := range strings.Split(string(data), "\n---\n") {
		c := admissionCase{object: &unstructured.Unstructured{}}
		m := caseLine.FindStringSubmatch(doc)
		require.NotNil(t, m, "a document of %s has no '# case:' line:\n%s", file, doc)
		c.name = m[1]
		if m := fieldLine.FindStringSubmatch(doc); m != nil {
			c.field = m[1]
		}
		if m := messageLine.FindStringSubmatch(doc); m != nil {
			c.message = m[1]
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &c.object.Object), c.name)
		cases = append(cases, c)
	}
	return cases
}

func dcClient(ns string) interface {
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
} {
	return env.Dynamic.Resource(stagehandv1.SchemeGroupVersion.WithResource("deploymentconfigs")).Namespace(ns)
}

// Invalid DeploymentConfigs are refused by the real apiserver (CRD schema and CEL), and the
// refusal names the field. Strict field validation is what kubectl sends by default.
func TestAdmissionRejectsInvalidConfigs(t *testing.T) {
	requireCluster(t)
	cases := loadAdmissionCases(t, "testdata/admission/invalid.yaml")
	require.GreaterOrEqual(t, len(cases), 70, "a document of invalid.yaml went missing")
	ns := env.Namespace(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NotEmpty(t, c.message, "the case needs a '# message:' line")
			_, err := dcClient(ns).Create(context.Background(), c.object, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			})
			require.Error(t, err, "the apiserver accepted an invalid DeploymentConfig")
			var status apierrors.APIStatus
			require.True(t, errors.As(err, &status), "not an API status: %v", err)
			if c.field == "" {
				assert.Contains(t, err.Error(), c.message)
				return
			}
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			var causes []string
			for _, cause := range status.Status().Details.Causes {
				if cause.Field == c.field && strings.Contains(cause.Message, c.message) {
					return
				}
				causes = append(causes, cause.Field+": "+cause.Message)
			}
			t.Errorf("no cause names %s with %q; the causes were:\n  %s", c.field, c.message, strings.Join(causes, "\n  "))
		})
	}
}

// Valid DeploymentConfigs, many at the edge of a rule, are accepted and stored.
func TestAdmissionAcceptsValidConfigs(t *testing.T) {
	requireCluster(t)
	cases := loadAdmissionCases(t, "testdata/admission/valid.yaml")
	require.GreaterOrEqual(t, len(cases), 15, "a document of valid.yaml went missing")
	ns := env.Namespace(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := dcClient(ns).Create(context.Background(), c.object, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
			assert.NoError(t, err)
		})
	}
}

// The schema defaults of DESIGN.md §3 are applied by the apiserver, and SetDefaults on the
// stored object adds only what the schema cannot express.
func TestAdmissionAppliesDefaults(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: stagehand.dev/v1alpha1
kind: DeploymentConfig
metadata: {name: defaults}
spec:
  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: app:1}]}}
`), &obj.Object))
	created, err := dcClient(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	var dc stagehandv1.DeploymentConfig
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, &dc))

	spec := dc.Spec
	require.NotNil(t, spec.Replicas)
	assert.Equal(t, stagehandv1.DefaultReplicas, *spec.Replicas)
	require.NotNil(t, spec.RevisionHistoryLimit)
	assert.Equal(t, stagehandv1.DefaultRevisionHistoryLimit, *spec.RevisionHistoryLimit)
	assert.Equal(t, []stagehandv1.DeploymentTriggerPolicy{{Type: stagehandv1.DeploymentTriggerOnConfigChange}}, spec.Triggers)
	assert.Equal(t, stagehandv1.DeploymentStrategyTypeRolling, spec.Strategy.Type)
	assert.Equal(t, stagehandv1.OnFailureRollback, spec.Strategy.OnFailure)
	require.NotNil(t, spec.Strategy.ActiveDeadlineSeconds)
	assert.Equal(t, stagehandv1.DefaultActiveDeadlineSeconds, *spec.Strategy.ActiveDeadlineSeconds)
	assert.Nil(t, spec.Selector, "the schema cannot default the selector; SetDefaults does")

	defaulted := dc.DeepCopy()
	stagehandv1.SetDefaults(defaulted)
	assert.Equal(t, map[string]string{"app": "web"}, defaulted.Spec.Selector.MatchLabels)
	require.NotNil(t, defaulted.Spec.Strategy.RollingParams)
	assert.Equal(t, stagehandv1.DefaultMaxSurge, defaulted.Spec.Strategy.RollingParams.MaxSurge.StrVal)

	// An explicit empty trigger list is kept: manual rollouts only.
	manual, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(context.Background(), &stagehandv1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "manual"},
		Spec: stagehandv1.DeploymentConfigSpec{
			Template: dc.Spec.Template,
			Triggers: []stagehandv1.DeploymentTriggerPolicy{},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotNil(t, manual.Spec.Triggers)
	assert.Empty(t, manual.Spec.Triggers, "an empty trigger list from a Go client must not be defaulted to ConfigChange")
}
