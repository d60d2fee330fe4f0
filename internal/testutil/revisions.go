package testutil

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// SimulatedImage is an image the local cluster does not map: with no command, its
// containers are simulated, Running and Ready at once, and cost nothing.
const SimulatedImage = "example.com/simulated:1"

// DeploymentConfig returns a DeploymentConfig named name with replicas pods of image,
// labelled app=<name>, and the given strategy.
func DeploymentConfig(name, image string, replicas int32, strategy v1alpha1.DeploymentStrategy) *v1alpha1.DeploymentConfig {
	return &v1alpha1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DeploymentConfigSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "app", Image: image}},
					TerminationGracePeriodSeconds: new(int64(5)),
				},
			},
			Strategy: strategy,
		},
	}
}

// Revision builds revision n of dc as the controller does (revision.New, with dc's
// defaults applied), with replicas and the given phase.
func Revision(dc *v1alpha1.DeploymentConfig, n int64, replicas int32, phase v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	defaulted := dc.DeepCopy()
	v1alpha1.SetDefaults(defaulted)
	rs, err := revision.New(defaulted, n)
	if err != nil {
		panic(err) // a spec always marshals
	}
	rs.Annotations[v1alpha1.PhaseAnnotation] = string(phase)
	rs.Spec.Replicas = &replicas
	return rs
}
