package openshift

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func imageTrigger(image string, containers ...string) v1alpha1.DeploymentTriggerPolicy {
	return v1alpha1.DeploymentTriggerPolicy{Type: v1alpha1.DeploymentTriggerOnImageChange, ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{
		Automatic: true, ContainerNames: containers, From: v1alpha1.ImageReference{Image: image},
	}}
}

var configChange = v1alpha1.DeploymentTriggerPolicy{Type: v1alpha1.DeploymentTriggerOnConfigChange}

// firstTriggerFrom is the field of the first trigger's image.
const firstTriggerFrom = "spec.triggers[0].imageChangeParams.from"

// triggerCase is one case of TestConvertTriggers.
type triggerCase struct {
	name         string
	namespace    string
	triggers     string
	opts         Options
	want         []v1alpha1.DeploymentTriggerPolicy
	wantNotes    []string
	wantMessages map[string]string
}

// triggerCases are TestConvertTriggers's cases.
var triggerCases = []triggerCase{
	{
		name:      "ConfigChange",
		triggers:  "[{type: ConfigChange}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{configChange},
		wantNotes: []string{},
	},
	{
		name:      "an empty list stays empty: manual rollouts only",
		triggers:  "[]",
		want:      []v1alpha1.DeploymentTriggerPolicy{},
		wantNotes: []string{},
	},
	{
		name:      "ImageStreamTag in the DeploymentConfig's namespace, without --registry",
		namespace: "shop",
		triggers:  "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: ImageStreamTag, name: 'web:prod'}}}, {type: ConfigChange}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{imageTrigger("registry.invalid/shop/web:prod", "app"), configChange},
		wantNotes: []string{"warning " + firstTriggerFrom},
		wantMessages: map[string]string{firstTriggerFrom: "ImageStreamTag web:prod became registry.invalid/shop/web:prod: Stagehand watches a tag in a registry, not an ImageStream; " +
			"replace registry.invalid with the registry that holds the image, or convert again with --registry"},
	},
	{
		name:      "ImageStreamTag of another namespace, with --registry",
		namespace: "shop",
		opts:      Options{Registry: "https://registry.example.com/mirror/"},
		triggers:  "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: ImageStreamTag, name: 'base:1.2', namespace: openshift}}}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{imageTrigger("registry.example.com/mirror/openshift/base:1.2", "app")},
		wantNotes: []string{"note " + firstTriggerFrom},
		wantMessages: map[string]string{firstTriggerFrom: "ImageStreamTag base:1.2 became registry.example.com/mirror/openshift/base:1.2: Stagehand watches this tag in the registry, " +
			"not an ImageStream, so whatever moved the ImageStream tag (a build, oc tag) must now push the tag there"},
	},
	{
		name:         "ImageStreamTag without any namespace or tag",
		opts:         Options{Registry: "registry.example.com"},
		triggers:     "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: ImageStreamTag, name: web}}}]",
		want:         []v1alpha1.DeploymentTriggerPolicy{imageTrigger("registry.example.com/web:latest", "app")},
		wantNotes:    []string{"note " + firstTriggerFrom + ".name", "note " + firstTriggerFrom},
		wantMessages: map[string]string{firstTriggerFrom + ".name": `"web" has no tag; taken as web:latest`},
	},
	{
		name:      "DockerImage by tag, with lastTriggeredImage",
		triggers:  "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: DockerImage, name: 'registry.example.com/web:2'}, lastTriggeredImage: 'registry.example.com/web@sha256:aa'}}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{imageTrigger("registry.example.com/web:2", "app")},
		wantNotes: []string{"note spec.triggers[0].imageChangeParams.lastTriggeredImage"},
		wantMessages: map[string]string{"spec.triggers[0].imageChangeParams.lastTriggeredImage": "dropped: registry.example.com/web@sha256:aa is what OpenShift " +
			"last resolved the trigger to; Stagehand records its own once it has read the tag"},
	},
	{
		name:         "DockerImage by digest cannot be watched",
		triggers:     "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: DockerImage, name: 'registry.example.com/web@sha256:aa'}}}, {type: ConfigChange}]",
		want:         []v1alpha1.DeploymentTriggerPolicy{configChange},
		wantNotes:    []string{"warning " + firstTriggerFrom + ".name"},
		wantMessages: map[string]string{firstTriggerFrom + ".name": "registry.example.com/web@sha256:aa is a digest reference, which never moves, so there is nothing to watch: the trigger is dropped"},
	},
	{
		name:      "ImageStreamImage cannot be watched",
		triggers:  "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: ImageStreamImage, name: 'web@sha256:aa'}}}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{},
		wantNotes: []string{"warning " + firstTriggerFrom},
	},
	{
		name:         "an unknown from kind",
		triggers:     "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: {kind: Build, name: web}}}]",
		want:         []v1alpha1.DeploymentTriggerPolicy{},
		wantNotes:    []string{"warning " + firstTriggerFrom + ".kind"},
		wantMessages: map[string]string{firstTriggerFrom + ".kind": `"Build" cannot be watched (Stagehand watches registry tags: ImageStreamTag and DockerImage convert); the trigger is dropped`},
	},
	{
		name:         "an unknown trigger type, with its fields",
		triggers:     "[{type: GitHubWebHook, github: {secret: s}}, {type: ConfigChange}]",
		want:         []v1alpha1.DeploymentTriggerPolicy{configChange},
		wantNotes:    []string{"warning spec.triggers[0].type"},
		wantMessages: map[string]string{"spec.triggers[0].type": `"GitHubWebHook" is not a trigger type of Stagehand (ConfigChange, ImageChange); the trigger is dropped`},
	},
	{
		name:      "a second ConfigChange",
		triggers:  "[{type: ConfigChange}, {type: ConfigChange}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{configChange},
		wantNotes: []string{"note spec.triggers[1]"},
	},
	{
		name:      "ImageChange without parameters",
		triggers:  "[{type: ImageChange}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{},
		wantNotes: []string{"warning spec.triggers[0]"},
	},
	{
		name:     "containers that the template does not have, and unknown fields",
		triggers: "[{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app, sidecar], from: {kind: DockerImage, name: 'web:1', tag: x}, paused: true}}]",
		want:     []v1alpha1.DeploymentTriggerPolicy{imageTrigger("web:1", "app", "sidecar")},
		wantNotes: []string{
			"warning " + firstTriggerFrom + ".tag",
			"warning spec.triggers[0].imageChangeParams.paused",
			"warning spec.triggers[0].imageChangeParams.containerNames[1]",
		},
	},
	{
		name:      "no containerNames",
		triggers:  "[{type: ImageChange, imageChangeParams: {automatic: true, from: {kind: DockerImage, name: 'web:1'}}}]",
		want:      []v1alpha1.DeploymentTriggerPolicy{imageTrigger("web:1")},
		wantNotes: []string{"warning spec.triggers[0].imageChangeParams.containerNames"},
	},
	{
		name:         "triggers that are not a list",
		triggers:     "{type: ConfigChange}",
		want:         nil,
		wantNotes:    []string{"warning spec.triggers"},
		wantMessages: map[string]string{"spec.triggers": "not converted: want a list, got an object"},
	},
}

func TestConvertTriggers(t *testing.T) {
	tests := triggerCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := withNamespace(t, openshiftDC(t, "triggers: "+tt.triggers), tt.namespace)
			dc, notes := convertOne(t, input, tt.opts)
			assert.Equal(t, tt.want, dc.Spec.Triggers)
			assert.Equal(t, tt.wantNotes, where(notes))
			for field, msg := range tt.wantMessages {
				assert.Equal(t, msg, message(t, notes, field))
			}
		})
	}
}

func TestConvertFillsContainerImagesFromTriggers(t *testing.T) {
	tests := []struct {
		name         string
		image        string
		from         string
		wantImage    string
		wantTriggers int
		wantNotes    []string
		wantMessage  string
	}{
		{
			name:         "a blank image gets the trigger's image",
			image:        "' '",
			from:         "{kind: ImageStreamTag, name: 'web:prod'}",
			wantImage:    "registry.invalid/web:prod",
			wantTriggers: 1,
			wantNotes:    []string{"warning spec.triggers[0].imageChangeParams.from", "note spec.template.spec.containers[0].image"},
			wantMessage:  "empty (OpenShift fills it from the ImageChange trigger); set to registry.invalid/web:prod",
		},
		{
			name:         "a blank image gets the digest of a trigger that is dropped",
			image:        "''",
			from:         "{kind: DockerImage, name: 'registry.example.com/web@sha256:aa'}",
			wantImage:    "registry.example.com/web@sha256:aa",
			wantTriggers: 0,
			wantNotes:    []string{"warning spec.triggers[0].imageChangeParams.from.name", "note spec.template.spec.containers[0].image"},
		},
		{
			name:         "an image of OpenShift's internal registry is replaced",
			image:        "image-registry.openshift-image-registry.svc:5000/shop/web@sha256:aa",
			from:         "{kind: DockerImage, name: 'registry.example.com/web:prod'}",
			wantImage:    "registry.example.com/web:prod",
			wantTriggers: 1,
			wantNotes:    []string{"warning spec.template.spec.containers[0].image"},
			wantMessage: "image-registry.openshift-image-registry.svc:5000/shop/web@sha256:aa is in OpenShift's internal registry, which other clusters " +
				"cannot pull from; replaced with the trigger's image registry.example.com/web:prod",
		},
		{
			name:         "an image that is set stays",
			image:        "registry.example.com/web:1.0",
			from:         "{kind: DockerImage, name: 'registry.example.com/web:prod'}",
			wantImage:    "registry.example.com/web:1.0",
			wantTriggers: 1,
			wantNotes:    []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc, notes := convertOne(t, openshiftDC(t, `
template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: `+tt.image+`}]}}
triggers: [{type: ImageChange, imageChangeParams: {automatic: true, containerNames: [app], from: `+tt.from+`}}]
`), Options{})
			require.Len(t, dc.Spec.Template.Spec.Containers, 1)
			assert.Equal(t, tt.wantImage, dc.Spec.Template.Spec.Containers[0].Image)
			assert.Len(t, dc.Spec.Triggers, tt.wantTriggers)
			assert.Equal(t, tt.wantNotes, where(notes))
			if tt.wantMessage != "" {
				assert.Equal(t, tt.wantMessage, message(t, notes, "spec.template.spec.containers[0].image"))
			}
		})
	}
}
