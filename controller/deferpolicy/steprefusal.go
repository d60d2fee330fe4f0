package deferpolicy

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// refusal is what a step pod's create error leads to.
type refusal int

const (
	refusalNone          refusal = iota // created
	refusalExists                       // created before: wait for it
	refusalQuotaExceeded                // a quota is used up: back off, try again
	refusalFinal                        // retrying cannot fix it: the attempt fails
	refusalTransient                    // anything else: the work queue retries
)

// refusalOf decides what a step pod's create error leads to.
func refusalOf(err error) refusal {
	switch {
	case err == nil:
		return refusalNone
	case apierrors.IsAlreadyExists(err):
		return refusalExists
	case plumbing.QuotaExceeded(err):
		return refusalQuotaExceeded
	case plumbing.Refused(err):
		return refusalFinal
	}
	return refusalTransient
}

// refusedMessage is the apiserver's message of a final refusal, and the fields to set
// when a quota or LimitRange names them.
func refusedMessage(err error, step int) string {
	msg := plumbing.APIMessage(err)
	fields := plumbing.ResourceFieldsOf(err)
	if len(fields) == 0 {
		return msg
	}
	for i, f := range fields {
		fields[i] = fmt.Sprintf("spec.steps[%d].resources.%s", step, f)
	}
	return msg + "; set " + strings.Join(fields, ", ") + " in the DeferPolicy (or the controller's --defer-step-* resource defaults)"
}

// waitForQuota records a create that an exceeded ResourceQuota refused, and tries again
// after a capped back-off. The run's deadline still bounds the wait.
func (c *Controller) waitForQuota(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, err error) error {
	run.QuotaWaits++
	delay := deferstep.RetryDelay(run.QuotaWaits)
	run.NotBefore = &metav1.Time{Time: c.now().Add(delay)}
	c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepWaitsForQuota,
		"Step %d/%d (%s) waits for ResourceQuota %s: %s; trying again in %s, until the grace period ends",
		run.Current+1, run.Steps, policy.Spec.Steps[run.Current].Name, plumbing.ExceededQuotaName(err), plumbing.APIMessage(err), delay)
	if werr := c.write(ctx, pod, run, false); werr != nil {
		return werr
	}
	return plumbing.RequeueAfter(delay, "a ResourceQuota is used up; the step's pod is created again after a back-off")
}

// stepResources are a step pod's container resources: the step's own, and the
// controller's defaults for what it leaves unset (v1alpha1.WithDefaultResources).
func stepResources(step *corev1.ResourceRequirements, defaults corev1.ResourceRequirements) corev1.ResourceRequirements {
	var set corev1.ResourceRequirements
	if step != nil {
		set = *step
	}
	return v1alpha1.WithDefaultResources(set, defaults)
}

// DefaultStepResources are the stagehand-controller's defaults for a step pod's
// resources (its --defer-step-* flags): small, so that a namespace whose ResourceQuota
// requires requests and limits admits the steps.
func DefaultStepResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
}
