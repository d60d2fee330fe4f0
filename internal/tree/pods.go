package tree

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The rows under a revision: its deployer pod, hook pods and ExecutionHooks (the latest
// revision only), and its application pods.

// runOnceNodes are the latest revision's deployer pod, hook pods and ExecutionHooks, the
// hooks in the order they started.
func (o *Objects) runOnceNodes(rs *appsv1.ReplicaSet) []*treeNode {
	var out []*treeNode
	deployer := revision.DeployerPod(rs)
	number := rs.Labels[v1alpha1.RevisionLabel]
	type hook struct {
		created time.Time
		node    *treeNode
	}
	var hooks []hook
	found := false
	for _, p := range o.Pods {
		switch {
		case p.Name == deployer && p.Labels[v1alpha1.DeployerPodForLabel] == rs.Name:
			found = true
			n := runOncePodNode(p, "Deployer")
			if p.Status.Phase == corev1.PodFailed && revision.StatusReasonText(rs) != "" {
				n.info = []string{failureText(p, false)} // the revision's row gives its message
			}
			out = append(out, n)
		case p.Labels[v1alpha1.FailureHookForLabel] == rs.Name:
			hooks = append(hooks, hook{p.CreationTimestamp.Time, runOncePodNode(p, "Failure-hook runner")})
		case p.Labels[v1alpha1.HookStageLabel] != "" && p.Labels[v1alpha1.RevisionLabel] == number:
			hooks = append(hooks, hook{p.CreationTimestamp.Time, runOncePodNode(p, "Hook "+p.Labels[v1alpha1.HookStageLabel])})
		}
	}
	if !found && rs.Annotations[v1alpha1.AdoptedFromAnnotation] == "" { // an adopted revision never had one
		out = append(out, missingDeployer(rs, deployer))
	}
	for _, h := range o.ExecutionHooks {
		if h.Labels[v1alpha1.ExecHookOfLabel] == rs.Name {
			hooks = append(hooks, hook{h.CreationTimestamp.Time, execHookNode(h)})
		}
	}
	slices.SortStableFunc(hooks, func(a, b hook) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.node.name, b.node.name)
	})
	for _, h := range hooks {
		out = append(out, h.node)
	}
	return out
}

// missingDeployer is a deployer pod that is not there: not created yet (and what it waits
// for), never created (the apiserver refused it), or deleted.
func missingDeployer(rs *appsv1.ReplicaSet, name string) *treeNode {
	n := &treeNode{name: name, kind: "Deployer", mark: markInactive, status: "Gone",
		info: []string{"the pod was deleted; the revision keeps its outcome"}}
	phase := revision.Phase(rs)
	switch reason, msg := revision.StatusReason(rs); {
	case phase == v1alpha1.RevisionPhaseNew:
		n.mark, n.status, n.info = markProgress, "Not created yet", nil
		if _, waiting := revision.Waiting(rs); waiting != "" {
			n.mark, n.info = markDegraded, []string{waiting}
		}
	case phase == v1alpha1.RevisionPhaseFailed && reason == v1alpha1.ReasonDeployerPodNotAdmit:
		n.mark, n.status, n.info = markFailed, "Not created", []string{msg}
	case !phase.IsTerminal():
		n.mark, n.info = markDegraded, []string{"the pod was deleted while the revision is " + string(phase)}
	}
	return n
}

// runOncePodNode is a deployer or hook pod: its phase, and for a failure why.
func runOncePodNode(p *corev1.Pod, kind string) *treeNode {
	n := &treeNode{name: p.Name, kind: kind, status: string(p.Status.Phase), created: p.CreationTimestamp.Time}
	if n.status == "" {
		n.status = string(corev1.PodPending)
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		n.mark = markOK
	case corev1.PodFailed:
		n.mark = markFailed
		n.info = append(n.info, failureText(p, true))
	case corev1.PodRunning:
		n.mark = markProgress
	default:
		n.mark = markProgress
		if w := waitingReason(p); w != "" {
			n.info = append(n.info, w)
			if stuckWaiting[w] {
				n.mark = markDegraded
			}
		}
	}
	if p.DeletionTimestamp != nil {
		n.info = append(n.info, "being deleted")
	}
	return n
}

// stuckWaiting are the waiting reasons that need a person.
var stuckWaiting = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// waitingReason is the first waiting reason of the pod's containers (init containers
// first), or why it is not scheduled.
func waitingReason(p *corev1.Pod) string {
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range statuses {
			if w := s.State.Waiting; w != nil && w.Reason != "" {
				return w.Reason
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return c.Reason
		}
	}
	return ""
}

// failureText says why a pod failed: the pod's reason, or its first failed container's
// exit code and reason, withMessage with the last line of its termination message (the
// deployer's is JSON: its reason and message).
func failureText(p *corev1.Pod, withMessage bool) string {
	if p.Status.Reason != "" {
		return strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	}
	t := podstatus.FailedContainer(p)
	if t == nil {
		return "no reason recorded"
	}
	text := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" {
		text += " (" + t.Reason + ")"
	}
	if msg := terminationText(t.Message); msg != "" && withMessage {
		text += ": " + msg
	}
	return text
}

// terminationText is the deployer's "Reason: message", or the last line of a log tail.
func terminationText(msg string) string {
	msg = strings.TrimSpace(msg)
	var tm v1alpha1.TerminationMessage
	if strings.HasPrefix(msg, "{") && json.Unmarshal([]byte(msg), &tm) == nil && tm.Reason != "" {
		return revision.FormatStatusReason(tm.Reason, tm.Message)
	}
	return podstatus.TruncateStart(podstatus.LastLine(msg), maxInfoText)
}

// maxInfoText is the most bytes of a pod's or hook's message that a row shows.
const maxInfoText = 120

// execHookNode is an ExecutionHook of an exec lifecycle hook: phase, summary, failure.
func execHookNode(h *v1alpha1.ExecutionHook) *treeNode {
	phase := h.Status.Phase
	if phase == "" {
		phase = v1alpha1.ExecutionHookPending
	}
	n := &treeNode{name: h.Name, kind: "ExecutionHook " + h.Labels[v1alpha1.HookStageLabel], status: string(phase),
		created: h.CreationTimestamp.Time, mark: markProgress}
	if h.Status.Summary != "" {
		n.info = append(n.info, h.Status.Summary+" succeeded")
	}
	switch phase {
	case v1alpha1.ExecutionHookComplete:
		n.mark = markOK
	case v1alpha1.ExecutionHookFailed:
		n.mark = markFailed
		if e := h.Status.Error; e != nil {
			n.info = append(n.info, hookErrorText(e))
		}
		for _, s := range h.Status.HookStatuses {
			if s.Succeed != nil && !*s.Succeed && s.Error != nil {
				n.info = append(n.info, s.PodName+"/"+s.ContainerName+": "+hookErrorText(s.Error))
				break
			}
		}
	}
	return n
}

func hookErrorText(e *v1alpha1.HookError) string {
	if e.Message == "" {
		return string(e.ErrorType)
	}
	return string(e.ErrorType) + ": " + podstatus.TruncateStart(e.Message, maxInfoText)
}

// appPods are the application pods (not deployer or hook pods) of each revision, by
// revision name, and for a StatefulSet DC the StatefulSet's pods of no known revision.
type appPods struct {
	of      map[string][]*corev1.Pod
	unknown []*corev1.Pod
}

// replicaSetPods are the application pods of each ReplicaSet revision: those with its
// revision label.
func (o *Objects) replicaSetPods(revs []*appsv1.ReplicaSet) appPods {
	out := appPods{of: map[string][]*corev1.Pod{}}
	for _, rs := range revs {
		number := rs.Labels[v1alpha1.RevisionLabel]
		for _, p := range o.Pods {
			if p.Labels[v1alpha1.RevisionLabel] == number && !v1alpha1.IsStagehandRunOncePod(p.Labels) {
				out.of[rs.Name] = append(out.of[rs.Name], p)
			}
		}
	}
	return out
}

// podNodes are rows of application pods, by name, with their defer steps.
func podNodes(pods []*corev1.Pod, deferText DeferText) []*treeNode {
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	out := make([]*treeNode, 0, len(pods))
	for _, p := range pods {
		out = append(out, appPodNode(p, deferText))
	}
	return out
}

// appPodNode is an application pod: ready, restarts and state, and its defer run.
func appPodNode(p *corev1.Pod, deferText DeferText) *treeNode {
	n := &treeNode{name: p.Name, kind: "Pod", status: string(p.Status.Phase), created: p.CreationTimestamp.Time}
	if n.status == "" {
		n.status = string(corev1.PodPending)
	}
	ready, restarts := 0, int32(0)
	for _, s := range p.Status.ContainerStatuses {
		if s.Ready {
			ready++
		}
		restarts += s.RestartCount
	}
	n.info = append(n.info, fmt.Sprintf("ready %d/%d", ready, len(p.Spec.Containers)))
	if restarts > 0 {
		n.info = append(n.info, fmt.Sprintf("restarts %d", restarts))
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		n.mark = markOK
		if ready < len(p.Spec.Containers) {
			n.mark = markProgress
		}
	case corev1.PodSucceeded:
		n.mark = markInactive
	case corev1.PodFailed:
		n.mark = markFailed
		n.info = append(n.info, failureText(p, true))
	default:
		n.mark = markProgress
	}
	if w := waitingReason(p); w != "" {
		n.status = w
		if stuckWaiting[w] {
			n.mark = markDegraded
		}
	}
	if p.DeletionTimestamp != nil {
		n.mark, n.status = markProgress, "Terminating"
	}
	if deferText != nil {
		if d := deferText(p); d != "" {
			n.info = append(n.info, d)
		}
	}
	return n
}
