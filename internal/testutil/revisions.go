package testutil

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// SimulatedImage is an image the local cluster does not map: with no command, its
// containers are simulated, Running and Ready at once, and cost nothing.
const SimulatedImage = "example.com/simulated:1"

// TestAppImage runs e2e/testapp on the local cluster: a long-running server process.
const TestAppImage = "stagehand/testapp:e2e"

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

// CreateDeploymentConfig creates dc in namespace through the generated clientset.
func CreateDeploymentConfig(t *testing.T, client versioned.Interface, namespace string, dc *v1alpha1.DeploymentConfig) *v1alpha1.DeploymentConfig {
	t.Helper()
	created, err := client.StagehandV1alpha1().DeploymentConfigs(namespace).Create(context.Background(), dc, metav1.CreateOptions{})
	require.NoError(t, err, "creating DeploymentConfig %s", dc.Name)
	return created
}

// Revision builds revision n of dc as the controller would: the ReplicaSet <dc>-<n>
// with replicas, the config and revision labels, a selector and template that carry the
// revision label, the snapshot of dc.Spec, the desired replicas and the phase, controlled
// by dc.
func Revision(dc *v1alpha1.DeploymentConfig, n int64, replicas int32, phase v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	snapshot, err := json.Marshal(dc.Spec)
	if err != nil {
		panic(err) // a spec always marshals
	}
	version := strconv.FormatInt(n, 10)
	podLabels := map[string]string{v1alpha1.RevisionLabel: version}
	for k, v := range dc.Spec.Template.Labels {
		podLabels[k] = v
	}
	selector := map[string]string{v1alpha1.RevisionLabel: version}
	for k, v := range dc.Spec.Template.Labels {
		selector[k] = v
	}
	template := *dc.Spec.Template.DeepCopy()
	template.Labels = podLabels
	desired := int32(1)
	if dc.Spec.Replicas != nil {
		desired = *dc.Spec.Replicas
	}
	controller := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      v1alpha1.RevisionName(dc.Name, n),
			Namespace: dc.Namespace,
			Labels:    map[string]string{v1alpha1.ConfigLabel: dc.Name, v1alpha1.RevisionLabel: version},
			Annotations: map[string]string{
				v1alpha1.ConfigSnapshotAnnotation:  string(snapshot),
				v1alpha1.DesiredReplicasAnnotation: strconv.Itoa(int(desired)),
				v1alpha1.PhaseAnnotation:           string(phase),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "DeploymentConfig",
				Name: dc.Name, UID: dc.UID, Controller: &controller,
			}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: template,
		},
	}
}

// CreateReplicaSet creates rs.
func CreateReplicaSet(t *testing.T, client kubernetes.Interface, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	t.Helper()
	created, err := client.AppsV1().ReplicaSets(rs.Namespace).Create(context.Background(), rs, metav1.CreateOptions{})
	require.NoError(t, err, "creating ReplicaSet %s", rs.Name)
	return created
}
