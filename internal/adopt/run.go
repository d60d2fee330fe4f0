package adopt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Adopter carries out kubectl stagehand adopt in one namespace. Every step looks at what
// is there first, so a rerun after an interruption finishes the adoption.
type Adopter struct {
	Kube      kubernetes.Interface
	Stagehand stagehandclient.Interface
	Namespace string
	// Progress receives one line per step taken.
	Progress func(format string, args ...any)
	// Poll is the interval of the waits; Timeout bounds each wait.
	Poll, Timeout time.Duration
	// KeepHistory keeps the Deployment's older ReplicaSets (at 0 pods); by default they go.
	KeepHistory bool
	// RetargetHPA points the HorizontalPodAutoscalers of the Deployment at the
	// DeploymentConfig's scale subresource once it is adopted; without it, an HPA is a refusal.
	RetargetHPA bool
}

// Refused is an adoption that is not started: the reason says what to do.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return e.Reason }

func refusedf(format string, args ...any) error {
	return &Refused{Reason: fmt.Sprintf(format, args...)}
}

// Plan reads the Deployment name and returns the DeploymentConfig that adopts it, with
// the warnings of the mapping, or a Refused error: no such Deployment, a
// DeploymentConfig of that name, a rollout in progress, an HPA, or a missing permission.
func (a *Adopter) Plan(ctx context.Context, name string) (*v1alpha1.DeploymentConfig, []string, error) {
	d, err := a.Kube.AppsV1().Deployments(a.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, refusedf("deployment %s not found in namespace %s", name, a.Namespace)
	}
	if err != nil {
		return nil, nil, err
	}
	if _, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil, nil, refusedf("a DeploymentConfig named %s exists in namespace %s: adopt makes one of the Deployment's name; rename or delete it first", name, a.Namespace)
	} else if !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	current, err := a.currentReplicaSet(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	if err := a.refuseHPA(ctx, deploymentKind, name, "adopt", configKind); err != nil {
		return nil, nil, err
	}
	if err := a.checkAccess(ctx, "adopt", access); err != nil {
		return nil, nil, err
	}
	dc, warnings, err := ConfigFrom(d)
	if err != nil {
		return nil, nil, refusedf("%v", err)
	}
	note, err := recordRunning(dc, d, current)
	if err != nil {
		return nil, nil, err
	}
	if note != "" {
		warnings = append(warnings, note)
	}
	if _, err := a.Stagehand.StagehandV1alpha1().DeploymentConfigs(a.Namespace).Create(ctx, dc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		return nil, nil, refusedf("the DeploymentConfig that would adopt deployment %s is refused by the apiserver: %v; nothing was changed", name, err)
	}
	return dc, warnings, nil
}

// recordRunning makes revision 1 of the planned DC the template that the current
// ReplicaSet's pods run, and annotates the DC for the hand-over. A Deployment template
// they do not run yet (paused, or its controller has not caught up) is kept in an
// annotation: it becomes the DC's template once revision 1 owns the pods, so revision 2,
// rolled out unless the Deployment was paused (then the DC is paused too). The note says so.
func recordRunning(dc *v1alpha1.DeploymentConfig, d *appsv1.Deployment, current *appsv1.ReplicaSet) (string, error) {
	selector, err := json.Marshal(current.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("encoding the selector of replicaset %s: %w", current.Name, err)
	}
	if dc.Annotations == nil {
		dc.Annotations = map[string]string{}
	}
	dc.Annotations[v1alpha1.AdoptAnnotation] = v1alpha1.AdoptPending
	dc.Annotations[v1alpha1.AdoptReplicaSetAnnotation] = current.Name
	dc.Annotations[v1alpha1.AdoptSelectorAnnotation] = string(selector)
	if d.Spec.Paused {
		dc.Annotations[v1alpha1.AdoptPausedAnnotation] = "true"
	}
	running := current.Spec.Template.DeepCopy()
	delete(running.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if apiequality.Semantic.DeepEqual(*running, d.Spec.Template) {
		return "", nil
	}
	pending, err := json.Marshal(d.Spec.Template)
	if err != nil {
		return "", fmt.Errorf("encoding the template of deployment %s: %w", d.Name, err)
	}
	dc.Spec.Template = *running
	dc.Annotations[v1alpha1.AdoptTemplateAnnotation] = string(pending)
	then := "rolled out once revision 1 owns the pods"
	if d.Spec.Paused {
		then = "not rolled out: the DeploymentConfig is paused as the Deployment was; kubectl stagehand rollout resume dc/" + d.Name + " rolls it out"
	}
	return fmt.Sprintf("deployment %s's template is not what its pods run (paused, or its controller has not caught up): "+
		"revision 1 is what they run (replicaset %s's template), and the Deployment's template becomes revision 2, %s", d.Name, current.Name, then), nil
}

// currentReplicaSet is the Deployment's one ReplicaSet with pods; more than one is a
// rollout in progress.
func (a *Adopter) currentReplicaSet(ctx context.Context, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, refusedf("deployment %s has an invalid selector: %v", d.Name, err)
	}
	list, err := a.Kube.AppsV1().ReplicaSets(a.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var withPods []*appsv1.ReplicaSet
	for i := range list.Items {
		rs := &list.Items[i]
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == d.UID && (rs.Status.Replicas > 0 || ptr.Deref(rs.Spec.Replicas, 1) > 0) {
			withPods = append(withPods, rs)
		}
	}
	switch len(withPods) {
	case 1:
		return withPods[0], nil
	case 0:
		return nil, refusedf("deployment %s has no ReplicaSet with pods: scale it up, or create the DeploymentConfig yourself", d.Name)
	}
	return nil, refusedf("deployment %s is mid-rollout: %d of its ReplicaSets have pods; wait for kubectl rollout status deployment/%s, then adopt", d.Name, len(withPods), d.Name)
}

// access is what adopt's steps need, checked first with SelfSubjectAccessReviews.
var access = []authorizationv1.ResourceAttributes{
	{Group: v1alpha1.GroupName, Resource: "deploymentconfigs", Verb: "create"},
	{Group: v1alpha1.GroupName, Resource: "deploymentconfigs", Verb: "update"},
	{Group: "apps", Resource: "deployments", Verb: "delete"},
	{Group: "apps", Resource: "replicasets", Verb: "delete"},
	{Resource: "pods", Verb: "patch"},
}

// hpaAccess is what --retarget-hpa needs on top.
var hpaAccess = authorizationv1.ResourceAttributes{Group: "autoscaling", Resource: "horizontalpodautoscalers", Verb: "update"}

// checkAccess refuses, before anything is written, when the user lacks one of needed
// (with hpaAccess when RetargetHPA); command is adopt or eject.
func (a *Adopter) checkAccess(ctx context.Context, command string, needed []authorizationv1.ResourceAttributes) error {
	if a.RetargetHPA {
		needed = append(needed[:len(needed):len(needed)], hpaAccess)
	}
	for _, attr := range needed {
		attr.Namespace = a.Namespace
		r, err := a.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attr}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("checking %s %s: %w", attr.Verb, attr.Resource, err)
		}
		if !r.Status.Allowed {
			return refusedf("%s needs %s on %s in namespace %s, which you lack; nothing was changed", command, attr.Verb, attr.Resource, a.Namespace)
		}
	}
	return nil
}

// waitFor polls cond every Poll until it holds or Timeout passes.
func (a *Adopter) waitFor(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, a.Poll, a.Timeout, true, cond); err != nil {
		return fmt.Errorf("waiting for %s: %w; run the same adopt command again to go on", what, err)
	}
	return nil
}

// podsOf selects the pods of the Deployment's ReplicaSet: its selector, recorded by Plan.
func podsOf(dc *v1alpha1.DeploymentConfig) (labels.Selector, error) {
	var ls metav1.LabelSelector
	if err := json.Unmarshal([]byte(dc.Annotations[v1alpha1.AdoptSelectorAnnotation]), &ls); err != nil {
		return nil, fmt.Errorf("reading annotation %s of deploymentconfig/%s (delete the DeploymentConfig and adopt again): %w",
			v1alpha1.AdoptSelectorAnnotation, dc.Name, err)
	}
	return metav1.LabelSelectorAsSelector(&ls)
}
