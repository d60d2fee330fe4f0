package adopt

import (
	"context"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The scale targets an HPA is moved between: adopt moves it to the DeploymentConfig,
// eject back to the Deployment.
const (
	deploymentKind  = "Deployment"
	statefulSetKind = "StatefulSet"
	configKind      = "DeploymentConfig"
)

func scaleTarget(kind, name string) autoscalingv2.CrossVersionObjectReference {
	if kind == configKind {
		return autoscalingv2.CrossVersionObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: configKind, Name: name}
	}
	return autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: name}
}

// refuseHPA refuses, for command (adopt or eject), an object of kind that a
// HorizontalPodAutoscaler scales, unless RetargetHPA; to is the kind it would scale after.
func (a *Adopter) refuseHPA(ctx context.Context, kind, name, command, to string) error {
	if a.RetargetHPA {
		return nil
	}
	hpas, err := a.hpasOf(ctx, kind, name)
	if err != nil || len(hpas) == 0 {
		return err
	}
	return refusedf("HorizontalPodAutoscaler %s scales %s %s: %s with --retarget-hpa to point it at the %s, or delete it first; nothing was changed",
		hpas[0].Name, strings.ToLower(kind), name, command, to)
}

// hpasOf are the HorizontalPodAutoscalers that scale the object kind/name.
func (a *Adopter) hpasOf(ctx context.Context, kind, name string) ([]autoscalingv2.HorizontalPodAutoscaler, error) {
	list, err := a.Kube.AutoscalingV2().HorizontalPodAutoscalers(a.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
	}
	var out []autoscalingv2.HorizontalPodAutoscaler
	for _, h := range list.Items {
		if ref := h.Spec.ScaleTargetRef; ref.Kind == kind && ref.Name == name {
			out = append(out, h)
		}
	}
	return out, nil
}

// retargetHPAs points the HorizontalPodAutoscalers of from/name at to/name.
func (a *Adopter) retargetHPAs(ctx context.Context, from, to, name string) error {
	hpas, err := a.hpasOf(ctx, from, name)
	if err != nil {
		return err
	}
	for i := range hpas {
		h := &hpas[i]
		h.Spec.ScaleTargetRef = scaleTarget(to, name)
		if _, err := a.Kube.AutoscalingV2().HorizontalPodAutoscalers(a.Namespace).Update(ctx, h, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("retargeting HorizontalPodAutoscaler %s: %w", h.Name, err)
		}
		a.Progress("horizontalpodautoscaler/%s now scales %s/%s", h.Name, strings.ToLower(to), name)
	}
	return nil
}
