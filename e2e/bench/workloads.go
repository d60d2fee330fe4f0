package main

import (
	"context"
	"strconv"
	"time"

	stagehandtyped "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/typed/api/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

const (
	dcName     = "bench-dc"
	deployName = "bench-deploy"
	versionEnv = "VERSION"
)

// template is the pod template both sides run: a simulated container (always Ready, no
// cost) with VERSION in its environment. Only the app label differs, so that the two
// selectors do not overlap.
func template(app string, version int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app, "bench": "stagehand"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: testutil.SimulatedImage,
				Env:   []corev1.EnvVar{{Name: versionEnv, Value: strconv.Itoa(version)}},
			}},
		},
	}
}

func setVersion(t *corev1.PodTemplateSpec, version int) {
	t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: versionEnv, Value: strconv.Itoa(version)}}
}

func versionOf(t *corev1.PodTemplateSpec) string {
	for _, e := range t.Spec.Containers[0].Env {
		if e.Name == versionEnv {
			return e.Value
		}
	}
	return ""
}

func newDC(c benchCase) *stagehandv1.DeploymentConfig {
	quarter := intstr.FromString("25%")
	dc := &stagehandv1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: dcName},
		Spec: stagehandv1.DeploymentConfigSpec{
			Replicas:        ptr.To(c.Replicas),
			Template:        template(dcName, 1),
			MinReadySeconds: c.MinReadySeconds,
			Strategy:        stagehandv1.DeploymentStrategy{Type: c.Strategy},
		},
	}
	if c.Strategy == stagehandv1.DeploymentStrategyTypeRolling {
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{MaxSurge: &quarter, MaxUnavailable: &quarter}
	}
	return dc
}

func newDeployment(c benchCase) *appsv1.Deployment {
	quarter := intstr.FromString("25%")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deployName},
		Spec: appsv1.DeploymentSpec{
			Replicas:        ptr.To(c.Replicas),
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": deployName}},
			Template:        template(deployName, 1),
			MinReadySeconds: c.MinReadySeconds,
		},
	}
	if c.Strategy == stagehandv1.DeploymentStrategyTypeRecreate {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	} else {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}}
	}
	return d
}

// changeDC sets the template's VERSION of DeploymentConfig name to version, retrying
// conflicts. sent, when not nil, gets the moment the update that succeeded was sent.
func changeDC(ctx context.Context, client stagehandtyped.DeploymentConfigInterface, name string, version int, sent *time.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dc, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setVersion(&dc.Spec.Template, version)
		if sent != nil {
			*sent = time.Now()
		}
		_, err = client.Update(ctx, dc, metav1.UpdateOptions{})
		return err
	})
}

// changeDeployment sets the template's VERSION of Deployment name to version, retrying
// conflicts.
func changeDeployment(ctx context.Context, client appsv1client.DeploymentInterface, name string, version int) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setVersion(&d.Spec.Template, version)
		_, err = client.Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// deploymentDone is the Deployment's "fully rolled out": the controller saw the current
// spec and every replica is updated and available, with no old one left.
func deploymentDone(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}
