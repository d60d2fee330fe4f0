package deferpolicy

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// The back-off between attempts of an OnFailure step: 1 s, doubling, at most 30 s.
const (
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
)

// advance moves run one transition on: it starts the clock, creates the current step's
// pod, records the step's outcome, or ends the run. Each transition is written to the pod
// before the next one happens, so that a restart resumes from it.
func (c *Controller) advance(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy) error {
	now := c.now()
	if run.Started == nil {
		run.Started = &metav1.Time{Time: now}
		run.Deadline = &metav1.Time{Time: now.Add(time.Duration(policy.GracePeriod()) * time.Second)}
		return c.write(ctx, pod, run, false)
	}
	// Every step has ended: the outcome stands even if the deadline passed since.
	if run.Current >= run.Steps {
		if len(run.Failed) > 0 {
			return c.finish(ctx, pod, run, v1alpha1.DeferFailed, "steps failed: "+strings.Join(run.Failed, ", "))
		}
		return c.finish(ctx, pod, run, v1alpha1.DeferCompleted, fmt.Sprintf("all %d steps succeeded", run.Steps))
	}
	if !now.Before(run.Deadline.Time) {
		c.stopSteps(ctx, pod)
		return c.finish(ctx, pod, run, v1alpha1.DeferTimedOut, fmt.Sprintf(
			"gracePeriodSeconds (%ds) ran out during step %d/%d (%s); the step was stopped and %d steps were skipped",
			policy.GracePeriod(), run.Current+1, run.Steps, policy.Spec.Steps[run.Current].Name, run.Steps-run.Current-1))
	}
	// Come back at the deadline whatever happens in between.
	c.addAfter(kindPod, pod.Namespace, pod.Name, run.Deadline.Sub(now)+50*time.Millisecond)
	if run.Attempt == 0 {
		run.Attempt = 1 // recorded before the pod exists: a restart finds the pod by name
		return c.write(ctx, pod, run, false)
	}
	if run.NotBefore != nil && now.Before(run.NotBefore.Time) {
		return plumbing.RequeueAfter(run.NotBefore.Sub(now), "back-off before the step's next attempt")
	}
	step := policy.Spec.Steps[run.Current]
	name := stepPodName(pod, run.Current, run.Attempt)
	sp, err := c.pods.Pods(pod.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.createStep(ctx, pod, run, policy, name)
	}
	if err != nil {
		return err
	}
	switch sp.Status.Phase {
	case corev1.PodSucceeded:
		c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStepSucceeded,
			"Step %d/%d (%s) succeeded in pod %s", run.Current+1, run.Steps, step.Name, sp.Name)
		c.nextStep(run)
		return c.write(ctx, pod, run, false)
	case corev1.PodFailed:
		return c.stepFailed(ctx, pod, run, policy, "its pod "+sp.Name+" failed"+exitOf(sp))
	}
	return nil // the step pod's updates bring the pod back
}

func (c *Controller) nextStep(run *v1alpha1.DeferRun) {
	run.Current++
	run.Attempt = 0
	run.NotBefore = nil
	run.QuotaWaits = 0
}

// stepFailed records a failed attempt: OnFailure tries again after a back-off, Never moves
// on to the next step.
func (c *Controller) stepFailed(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, why string) error {
	step := policy.Spec.Steps[run.Current]
	if policy.RestartPolicyOf(run.Current) == v1alpha1.DeferRestartOnFailure {
		delay := backoff(run.Attempt)
		c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepFailed,
			"Step %d/%d (%s) attempt %d failed: %s; runs again in %s (restartPolicy OnFailure)",
			run.Current+1, run.Steps, step.Name, run.Attempt, why, delay)
		run.Attempt++
		run.NotBefore = &metav1.Time{Time: c.now().Add(delay)}
		return c.write(ctx, pod, run, false)
	}
	c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepFailed,
		"Step %d/%d (%s) failed: %s; moving on (restartPolicy Never)", run.Current+1, run.Steps, step.Name, why)
	run.Failed = append(run.Failed, step.Name)
	c.nextStep(run)
	return c.write(ctx, pod, run, false)
}

// backoff is the wait after attempt n of a step.
func backoff(n int) time.Duration {
	d := firstBackoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

func exitOf(sp *corev1.Pod) string {
	for _, s := range sp.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			msg := fmt.Sprintf(" (exit code %d", t.ExitCode)
			if t.Reason != "" {
				msg += ", " + t.Reason
			}
			return msg + ")"
		}
	}
	return ""
}

// createStep creates the current step's pod. An exceeded ResourceQuota is waited for with
// a capped back-off, within the grace period (the ReplicaSet controller treats it so too);
// a refusal that retrying cannot fix (a volume the step may not share, an admission
// denial, a quota or LimitRange that wants other resources) fails the attempt with the
// apiserver's message and the field to set.
func (c *Controller) createStep(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, name string) error {
	sp, err := buildStepPod(pod, run, policy, name, c.stepResources)
	if err != nil {
		return c.stepFailedForGood(ctx, pod, run, policy, err.Error())
	}
	_, err = c.kube.CoreV1().Pods(pod.Namespace).Create(ctx, sp, metav1.CreateOptions{})
	switch refusalOf(err) {
	case refusalNone:
		c.recorder.Eventf(pod, corev1.EventTypeNormal, v1alpha1.EventDeferStepStarted,
			"Step %d/%d (%s) started in pod %s on node %s", run.Current+1, run.Steps, policy.Spec.Steps[run.Current].Name, name, pod.Spec.NodeName)
		return nil
	case refusalExists:
		return nil // created before a restart; the cache will show it
	case refusalQuotaExceeded:
		return c.waitForQuota(ctx, pod, run, policy, err)
	case refusalFinal:
		return c.stepFailedForGood(ctx, pod, run, policy, "its pod was refused: "+refusedMessage(err, run.Current))
	}
	return fmt.Errorf("creating the step pod %s: %w", name, err)
}

// stepFailedForGood records a step that cannot run at all, whatever its restart policy,
// and moves on.
func (c *Controller) stepFailedForGood(ctx context.Context, pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, why string) error {
	step := policy.Spec.Steps[run.Current]
	c.recorder.Eventf(pod, corev1.EventTypeWarning, v1alpha1.EventDeferStepFailed,
		"Step %d/%d (%s) cannot run: %s", run.Current+1, run.Steps, step.Name, why)
	run.Failed = append(run.Failed, step.Name)
	c.nextStep(run)
	return c.write(ctx, pod, run, false)
}

// stopSteps deletes the step pods of pod that still run.
func (c *Controller) stopSteps(ctx context.Context, pod *corev1.Pod) {
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.DeferStepOfLabel: string(pod.UID)})
	steps, err := c.pods.Pods(pod.Namespace).List(sel)
	if err != nil {
		return
	}
	for _, sp := range steps {
		if isTerminal(sp) || sp.DeletionTimestamp != nil {
			continue
		}
		err := c.kube.CoreV1().Pods(sp.Namespace).Delete(ctx, sp.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](1),
			Preconditions:      &metav1.Preconditions{UID: &sp.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.log.WithError(err).WithField("pod", sp.Namespace+"/"+sp.Name).Warn("stopping a step pod")
		}
	}
}

// stepPodName is the deterministic name of attempt a of step i (0-based) for pod. It
// carries the pod's UID, so that a pod of the same name created later (a StatefulSet's)
// never meets the old pod's steps.
func stepPodName(pod *corev1.Pod, i, attempt int) string {
	base := pod.Name
	if len(base) > 200 {
		base = base[:200]
	}
	uid := string(pod.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return fmt.Sprintf("%s-defer-%s-%d-%d", base, uid, i+1, attempt)
}

// buildStepPod is the pod of the current step: on pod's node, with the volumes the step
// mounts, the pod's identity in its environment, and no API credentials.
func buildStepPod(pod *corev1.Pod, run *v1alpha1.DeferRun, policy *v1alpha1.DeferPolicy, name string, defaults corev1.ResourceRequirements) (*corev1.Pod, error) {
	step := policy.Spec.Steps[run.Current]
	volumes, err := stepVolumes(pod, step)
	if err != nil {
		return nil, err
	}
	sc := step.SecurityContext
	if sc == nil && len(pod.Spec.Containers) > 0 {
		sc = pod.Spec.Containers[0].SecurityContext
	}
	env := append(identityEnv(pod, run.Current, run.When), step.Env...)
	ctr := corev1.Container{
		Name:            v1alpha1.DeferStepContainer,
		Image:           step.Image,
		Command:         step.Command,
		Args:            step.Args,
		Env:             env,
		VolumeMounts:    step.VolumeMounts,
		SecurityContext: sc.DeepCopy(),
	}
	ctr.Resources = stepResources(step.Resources, defaults)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: pod.Namespace,
			Labels: map[string]string{
				v1alpha1.DeferStepOfLabel: string(pod.UID),
				v1alpha1.DeferStepLabel:   strconv.Itoa(run.Current + 1),
				v1alpha1.DeferPolicyLabel: policy.Name,
			},
			// Not owned by the pod: the garbage collector would delete the steps, and
			// their logs, the moment the pod goes. The controller deletes them after
			// its --defer-step-ttl instead (cleanup.go).
			Annotations: map[string]string{v1alpha1.DeferStepForAnnotation: pod.Name},
		},
		Spec: corev1.PodSpec{
			NodeName:                     pod.Spec.NodeName,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              pod.Spec.SecurityContext.DeepCopy(),
			Tolerations:                  pod.Spec.Tolerations,
			ImagePullSecrets:             pod.Spec.ImagePullSecrets,
			Volumes:                      volumes,
			Containers:                   []corev1.Container{ctr},
		},
	}, nil
}

// identityEnv tells a step which pod it runs for.
func identityEnv(pod *corev1.Pod, i int, when v1alpha1.DeferWhen) []corev1.EnvVar {
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+"="+pod.Labels[k])
	}
	return []corev1.EnvVar{
		{Name: "STAGEHAND_POD_NAME", Value: pod.Name},
		{Name: "STAGEHAND_POD_NAMESPACE", Value: pod.Namespace},
		{Name: "STAGEHAND_POD_UID", Value: string(pod.UID)},
		{Name: "STAGEHAND_POD_LABELS", Value: strings.Join(pairs, ",")},
		{Name: "STAGEHAND_NODE_NAME", Value: pod.Spec.NodeName},
		{Name: "STAGEHAND_DEFER_STEP", Value: strconv.Itoa(i + 1)},
		{Name: "STAGEHAND_DEFER_WHEN", Value: string(when)},
	}
}

// stepVolumes are the pod's volumes that the step mounts. Only volumes that a second pod
// may share are allowed: a generic ephemeral volume becomes its PVC; an emptyDir, a
// hostPath (the controller's identity may not mount one) or a Secret is refused.
func stepVolumes(pod *corev1.Pod, step v1alpha1.DeferStep) ([]corev1.Volume, error) {
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		byName[v.Name] = v
	}
	var out []corev1.Volume
	seen := map[string]bool{}
	for _, m := range step.VolumeMounts {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		v, ok := byName[m.Name]
		if !ok {
			return nil, fmt.Errorf("step %s mounts volume %q, which the pod does not have", step.Name, m.Name)
		}
		switch {
		case v.PersistentVolumeClaim != nil, v.ConfigMap != nil, v.DownwardAPI != nil:
			out = append(out, *v.DeepCopy())
		case v.Ephemeral != nil:
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pod.Name + "-" + v.Name},
			}})
		default:
			return nil, fmt.Errorf("step %s mounts volume %q, of a kind a step cannot share (%s); steps share persistentVolumeClaim, ephemeral, configMap and downwardAPI volumes (docs/defer.md)",
				step.Name, m.Name, volumeKind(v))
		}
	}
	return out, nil
}

func volumeKind(v corev1.Volume) string {
	switch {
	case v.EmptyDir != nil:
		return "emptyDir: it goes with the pod"
	case v.HostPath != nil:
		return "hostPath"
	case v.Secret != nil:
		return "secret"
	case v.Projected != nil:
		return "projected"
	}
	return "unsupported"
}
