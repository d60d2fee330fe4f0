package openshift

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestConvertMetadataAndStatus(t *testing.T) {
	input := `apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: web
  namespace: shop
  labels: {app: web, team: payments}
  annotations:
    openshift.io/generated-by: OpenShiftNewApp
    kubectl.kubernetes.io/last-applied-configuration: '{"kind":"DeploymentConfig"}'
  resourceVersion: "123"
  uid: 0c6e1d2a-1111-2222-3333-444455556666
  creationTimestamp: "2024-01-02T03:04:05Z"
  generation: 7
  selfLink: /apis/apps.openshift.io/v1/namespaces/shop/deploymentconfigs/web
  managedFields: [{manager: oc, operation: Update}]
  ownerReferences: [{apiVersion: v1, kind: Template, name: t, uid: x}]
  finalizers: [example.com/keep]
spec:
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: example/web:1}]}
status:
  latestVersion: 7
  replicas: 2
`
	dc, notes := convertOne(t, []byte(input), Options{})
	assert.Equal(t, "web", dc.Name)
	assert.Equal(t, "shop", dc.Namespace)
	assert.Equal(t, map[string]string{"app": "web", "team": "payments"}, dc.Labels)
	assert.Equal(t, map[string]string{"openshift.io/generated-by": "OpenShiftNewApp"}, dc.Annotations)
	assert.Empty(t, dc.ResourceVersion)
	assert.Empty(t, dc.UID)
	assert.True(t, dc.CreationTimestamp.IsZero())
	assert.Zero(t, dc.Generation)
	assert.Empty(t, dc.ManagedFields)
	assert.Empty(t, dc.OwnerReferences)
	assert.Empty(t, dc.Finalizers)
	assert.Zero(t, dc.Status.LatestVersion)

	assert.Equal(t, []string{"note metadata", "warning metadata.finalizers", "note status"}, where(notes))
	assert.Equal(t, "deploymentconfig/web (namespace shop)", notes[0].Object)
	assert.Equal(t, "dropped what the OpenShift cluster set: metadata.resourceVersion, metadata.uid, metadata.creationTimestamp, "+
		"metadata.generation, metadata.managedFields, metadata.selfLink, metadata.ownerReferences, "+
		"metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", notes[0].Message)
	assert.Equal(t, "not converted: only the name, namespace, labels and annotations of metadata carry over", notes[1].Message)
	assert.Equal(t, "dropped: the Stagehand controller computes the status of the new object", notes[2].Message)
}

func TestConvertSpecFields(t *testing.T) {
	dc, notes := convertOne(t, openshiftDC(t, `
replicas: 3
minReadySeconds: 5
revisionHistoryLimit: 4
paused: true
test: true
`), Options{})
	assert.Empty(t, notes)
	assert.Equal(t, ptr.To[int32](3), dc.Spec.Replicas)
	assert.Equal(t, int32(5), dc.Spec.MinReadySeconds)
	assert.Equal(t, ptr.To[int32](4), dc.Spec.RevisionHistoryLimit)
	assert.True(t, dc.Spec.Paused)
	assert.True(t, dc.Spec.Test)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, dc.Spec.Selector)
	assert.Nil(t, dc.Spec.Triggers, "no triggers in the input: Stagehand's default [ConfigChange] applies, as on OpenShift")
	want := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/web:1.0",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	assert.Equal(t, want, dc.Spec.Template)
}

// carryOverCase is one case of TestConvertReportsWhatItCannotCarryOver.
type carryOverCase struct {
	name      string
	spec      string // the spec of an OpenShift DC, openshiftDC's argument
	input     []byte // the whole document, when spec is empty
	wantNotes []string
	// wantMessages are exact messages of some of the notes, by field.
	wantMessages map[string]string
}

// carryOverCases are TestConvertReportsWhatItCannotCarryOver's cases.
var carryOverCases = []carryOverCase{
	{
		name:         "an unknown spec field",
		spec:         "progressDeadlineSeconds: 600",
		wantNotes:    []string{"warning spec.progressDeadlineSeconds"},
		wantMessages: map[string]string{"spec.progressDeadlineSeconds": "not converted: Stagehand has no such field"},
	},
	{
		name:         "a value of the wrong type",
		spec:         `replicas: "three"`,
		wantNotes:    []string{"warning spec.replicas"},
		wantMessages: map[string]string{"spec.replicas": "not converted: want an integer, got string"},
	},
	{
		name: "unknown fields in the template are each reported, and the rest is kept",
		spec: `
template:
  metadata: {labels: {app: web}, color: blue}
  spec:
    containers: [{name: app, image: example/web:1, imagePullSecret: x, env: [{name: A, value: b, secret: true}]}]
    nodeSelectr: {disk: ssd}
`,
		wantNotes: []string{
			"warning spec.template.metadata.color",
			"warning spec.template.spec.containers[0].env[0].secret",
			"warning spec.template.spec.containers[0].imagePullSecret",
			"warning spec.template.spec.nodeSelectr",
		},
		wantMessages: map[string]string{"spec.template.spec.nodeSelectr": "not converted: unknown field (a typo, or a field of a newer Kubernetes version?)"},
	},
	{
		name:         "a template of the wrong shape",
		spec:         "template: {metadata: {labels: {app: web}}, spec: {terminationGracePeriodSeconds: soon}}",
		wantNotes:    []string{"warning spec.template", "warning spec.template.metadata.labels"},
		wantMessages: map[string]string{"spec.template": "not converted: want an integer at spec.terminationGracePeriodSeconds, got string"},
	},
	{
		name:         "no template",
		spec:         "template: null",
		wantNotes:    []string{"warning spec.template", "warning spec.template.metadata.labels"},
		wantMessages: map[string]string{"spec.template": "missing: Stagehand needs a pod template, so the result will be refused"},
	},
	{
		name:      "a template without labels",
		spec:      "selector: null\ntemplate: {spec: {containers: [{name: app, image: example/web:1}]}}",
		wantNotes: []string{"warning spec.template.metadata.labels"},
		wantMessages: map[string]string{"spec.template.metadata.labels": "missing: Stagehand needs labels on the template (they select the pods), " +
			"so the result will be refused; add some, such as app: web"},
	},
	{
		name:         "an empty selector is left out",
		spec:         "selector: {}",
		wantNotes:    []string{"note spec.selector"},
		wantMessages: map[string]string{"spec.selector": "empty; left out, so Stagehand selects the template's labels"},
	},
	{
		name:      "a selector that misses the template",
		spec:      "selector: {app: web, tier: front}",
		wantNotes: []string{"warning spec.selector"},
		wantMessages: map[string]string{"spec.selector": "tier=front is not a label of spec.template.metadata.labels: Stagehand refuses a selector " +
			"that misses the template's own pods; add the label to the template or remove it from the selector"},
	},
	{
		name: "an image in OpenShift's internal registry",
		spec: "template: {metadata: {labels: {app: web}}, spec: {initContainers: [{name: init, image: docker-registry.default.svc:5000/shop/init:1}], containers: [{name: app, image: image-registry.openshift-image-registry.svc:5000/shop/web@sha256:abc}]}}",
		wantNotes: []string{
			"warning spec.template.spec.initContainers[0].image",
			"warning spec.template.spec.containers[0].image",
		},
		wantMessages: map[string]string{"spec.template.spec.containers[0].image": "image-registry.openshift-image-registry.svc:5000/shop/web@sha256:abc is in OpenShift's internal registry, " +
			"which other clusters cannot pull from: push the image to a registry this cluster can reach and change the image"},
	},
	{
		name:         "no spec",
		input:        []byte("apiVersion: apps.openshift.io/v1\nkind: DeploymentConfig\nmetadata: {name: web}\n"),
		wantNotes:    []string{"warning spec"},
		wantMessages: map[string]string{"spec": "missing: Stagehand needs at least spec.template, so the result will be refused"},
	},
	{
		name:         "no name",
		input:        []byte("apiVersion: apps.openshift.io/v1\nkind: DeploymentConfig\nmetadata: {labels: {a: b}}\nspec: {template: {metadata: {labels: {app: web}}}}\n"),
		wantNotes:    []string{"warning metadata.name"},
		wantMessages: map[string]string{"metadata.name": "missing: set a name before applying"},
	},
	{
		name:      "a name too long for Stagehand",
		input:     []byte("apiVersion: apps.openshift.io/v1\nkind: DeploymentConfig\nmetadata: {name: " + strings.Repeat("a", 64) + "}\nspec: {template: {metadata: {labels: {app: web}}}}\n"),
		wantNotes: []string{"warning metadata.name"},
	},
	{
		name:         "an unknown top-level field",
		input:        []byte("apiVersion: apps.openshift.io/v1\nkind: DeploymentConfig\nmetadata: {name: web}\nspec: {template: {metadata: {labels: {app: web}}}}\nextra: 1\n"),
		wantNotes:    []string{"warning extra"},
		wantMessages: map[string]string{"extra": "not converted: Stagehand has no such field"},
	},
}

func TestConvertReportsWhatItCannotCarryOver(t *testing.T) {
	tests := carryOverCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := tt.input
			if input == nil {
				input = openshiftDC(t, tt.spec)
			}
			_, notes := convertOne(t, input, Options{})
			assert.Equal(t, tt.wantNotes, where(notes))
			for field, msg := range tt.wantMessages {
				assert.Equal(t, msg, message(t, notes, field))
			}
		})
	}
}

func TestConvertKeepsTheRestOfATemplateWithUnknownFields(t *testing.T) {
	dc, _ := convertOne(t, openshiftDC(t, `
template:
  metadata: {labels: {app: web}}
  spec:
    containers: [{name: app, image: example/web:1, bogus: 1, env: [{name: A, value: b}]}]
    terminationGracePeriodSeconds: 2
`), Options{})
	require.Len(t, dc.Spec.Template.Spec.Containers, 1)
	assert.Equal(t, []corev1.EnvVar{{Name: "A", Value: "b"}}, dc.Spec.Template.Spec.Containers[0].Env)
	assert.Equal(t, ptr.To[int64](2), dc.Spec.Template.Spec.TerminationGracePeriodSeconds)
}

func TestInOpenShiftRegistry(t *testing.T) {
	tests := []struct {
		image string
		want  bool
	}{
		{image: "image-registry.openshift-image-registry.svc:5000/shop/web@sha256:abc", want: true},
		{image: "image-registry.openshift-image-registry.svc.cluster.local:5000/shop/web:1", want: true},
		{image: "docker-registry.default.svc:5000/shop/web:latest", want: true},
		{image: "registry.example.com/shop/web:1", want: false},
		{image: "openshift-image-registry", want: false},
		{image: "nginx", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			assert.Equal(t, tt.want, inOpenShiftRegistry(tt.image))
		})
	}
}

// deploy.openshift.io/deployer-pod.ignore stops OpenShift's deployer pods; Stagehand has no
// such switch, so the annotation is dropped with a warning that says what happens instead.
func TestConvertDropsTheIgnoreDeployerPodAnnotation(t *testing.T) {
	tests := []struct {
		name        string
		annotations string
		want        map[string]string
	}{
		{name: "with other annotations", annotations: "{deploy.openshift.io/deployer-pod.ignore: 'true', team: payments}",
			want: map[string]string{"team": "payments"}},
		{name: "alone, with any value (OpenShift checks only that it is there)", annotations: "{deploy.openshift.io/deployer-pod.ignore: ''}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := `apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: web
  annotations: ` + tt.annotations + `
spec:
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: example/web:1}]}
`
			dc, notes := convertOne(t, []byte(input), Options{})
			assert.Equal(t, tt.want, dc.Annotations)
			field := "metadata.annotations[deploy.openshift.io/deployer-pod.ignore]"
			assert.Equal(t, []string{"warning " + field}, where(notes))
			assert.Equal(t, "dropped: on OpenShift it stops the controller from creating deployer pods, so a new deployment stays New "+
				"until whoever set it runs the rollout; Stagehand has no such switch and would ignore it. "+
				"Stagehand's controller creates exactly one deployer pod for every revision (<name>-<N>-deploy, owned by the revision), "+
				"which runs the strategy and the hooks: this DeploymentConfig rolls out on its own once applied. "+
				"A deployer pod that finished is kept, with its log, until its revision is pruned; "+
				"the deployer pod of a cancelled, superseded or retried revision is deleted. "+
				"If you want no rollout yet, set spec.paused: true before applying", message(t, notes, field))
		})
	}
}
