package notify

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corelisters "k8s.io/client-go/listers/core/v1"

	listers "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/hookpod/deferstep"
)

// Failure is a failed hook, ExecutionHook or defer step of one revision, read from the
// object that records it (docs/notifications.md, "Where each event comes from").
type Failure struct {
	Event   v1alpha1.NotifyEvent
	Time    time.Time
	Step    string
	Reason  string
	Message string
	LogTail string
}

// failureSources are the caches the failures are read from: the hook pods, the pods a
// DeferPolicy may select (the DC's own among them) and the ExecutionHooks.
type failureSources struct {
	hookPods  corelisters.PodLister
	pods      corelisters.PodLister
	execHooks listers.ExecutionHookLister
}

// of lists the failures of dc's revisions by revision name, oldest first.
func (s failureSources) of(dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet) map[string][]Failure {
	out := map[string][]Failure{}
	byConfig := labels.SelectorFromSet(labels.Set{v1alpha1.ConfigLabel: dc.Name})
	byNumber := map[string]*appsv1.ReplicaSet{}
	for _, rs := range revs {
		byNumber[rs.Labels[v1alpha1.RevisionLabel]] = rs
	}
	hookPods, _ := s.hookPods.Pods(dc.Namespace).List(byConfig)
	for _, pod := range hookPods {
		if rs := byNumber[pod.Labels[v1alpha1.RevisionLabel]]; rs != nil && revision.Owns(rs, pod) && pod.Status.Phase == corev1.PodFailed {
			out[rs.Name] = append(out[rs.Name], hookPodFailure(pod))
		}
	}
	pods, _ := s.pods.Pods(dc.Namespace).List(byConfig)
	for _, pod := range pods {
		if rs := podRevision(revs, byNumber, pod); rs != nil {
			if f, ok := deferFailure(pod); ok {
				out[rs.Name] = append(out[rs.Name], f)
			}
		}
	}
	// A failed step's pod outlives the pod it ran for (for --defer-step-ttl): it tells of
	// the failure once that pod and its run's record are gone.
	steps, _ := s.pods.Pods(dc.Namespace).List(stepPods)
	for _, step := range steps {
		target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: deferstep.TargetLabels(step)}}
		if step.Status.Phase != corev1.PodFailed || target.Labels[v1alpha1.ConfigLabel] != dc.Name {
			continue
		}
		if rs := podRevision(revs, byNumber, target); rs != nil {
			out[rs.Name] = append(out[rs.Name], stepPodFailure(step))
		}
	}
	if s.execHooks != nil {
		hooks, _ := s.execHooks.ExecutionHooks(dc.Namespace).List(labels.Everything())
		for _, h := range hooks {
			if h.Status.Phase != v1alpha1.ExecutionHookFailed {
				continue
			}
			if of := h.Labels[v1alpha1.ExecHookOfLabel]; of != "" {
				if rs := byNumber[h.Labels[v1alpha1.RevisionLabel]]; rs != nil && rs.Name == of && h.Labels[v1alpha1.ConfigLabel] == dc.Name {
					out[rs.Name] = append(out[rs.Name], execHookFailure(h, v1alpha1.NotifyHookFailed))
				}
				continue
			}
			for _, rs := range s.hookRevisions(dc, revs, byNumber, h) {
				out[rs.Name] = append(out[rs.Name], execHookFailure(h, v1alpha1.NotifyExecutionHookFailed))
			}
		}
	}
	for _, fs := range out {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Time.Before(fs[j].Time) })
	}
	return out
}

// hookRevisions are the revisions of dc whose pods a user's ExecutionHook failed in,
// found through the pods its status names that are still there; when no container is
// marked failed (a hook that ran out of time), those of every pod it names.
func (s failureSources) hookRevisions(dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, byNumber map[string]*appsv1.ReplicaSet,
	h *v1alpha1.ExecutionHook) []*appsv1.ReplicaSet {
	var failed, all []string
	for _, st := range h.Status.HookStatuses {
		all = append(all, st.PodName)
		if st.Succeed != nil && !*st.Succeed {
			failed = append(failed, st.PodName)
		}
	}
	if len(failed) == 0 {
		failed = all
	}
	var out []*appsv1.ReplicaSet
	seen := map[string]bool{}
	for _, name := range failed {
		pod, err := s.pods.Pods(h.Namespace).Get(name)
		if err != nil || pod.Labels[v1alpha1.ConfigLabel] != dc.Name {
			continue
		}
		if rs := podRevision(revs, byNumber, pod); rs != nil && !seen[rs.Name] {
			seen[rs.Name] = true
			out = append(out, rs)
		}
	}
	return out
}

// podRevision is the revision an application pod of the DC runs: by its revision label,
// or for a StatefulSet's pod by its template hash.
func podRevision(revs []*appsv1.ReplicaSet, byNumber map[string]*appsv1.ReplicaSet, pod *corev1.Pod) *appsv1.ReplicaSet {
	if rs := byNumber[pod.Labels[v1alpha1.RevisionLabel]]; rs != nil {
		return rs
	}
	if hash := pod.Labels[appsv1.ControllerRevisionHashLabelKey]; hash != "" {
		for _, rs := range revs {
			if revision.OfStatefulSet(rs) && revision.TemplateHash(rs) == hash {
				return rs
			}
		}
	}
	return nil
}

// hookPodFailure describes a failed hook pod from its container's end: the termination
// message holds the log tail (FallbackToLogsOnError).
func hookPodFailure(pod *corev1.Pod) Failure {
	f := Failure{Event: v1alpha1.NotifyHookFailed, Time: pod.CreationTimestamp.UTC(), Step: pod.Labels[v1alpha1.HookStageLabel],
		Reason: "Failed", Message: fmt.Sprintf("%s hook pod %s failed", pod.Labels[v1alpha1.HookStageLabel], pod.Name)}
	if pod.Status.Reason != "" {
		f.Reason, f.Message = pod.Status.Reason, f.Message+": "+pod.Status.Message
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			f.Reason = t.Reason
			f.Message = fmt.Sprintf("%s hook pod %s failed with exit code %d", pod.Labels[v1alpha1.HookStageLabel], pod.Name, t.ExitCode)
			f.LogTail = strings.TrimRight(t.Message, "\n")
			f.Time = t.FinishedAt.UTC()
		}
	}
	return f
}

// execHookFailure describes a failed ExecutionHook: its error, and the output of the
// first container it failed in.
func execHookFailure(h *v1alpha1.ExecutionHook, event v1alpha1.NotifyEvent) Failure {
	f := Failure{Event: event, Time: h.CreationTimestamp.UTC(), Reason: "Failed", Message: h.Status.Summary}
	if event == v1alpha1.NotifyHookFailed {
		f.Step = h.Labels[v1alpha1.HookStageLabel]
	} else {
		f.Step = "ExecutionHook " + h.Name
	}
	if h.Status.CompletionTime != nil {
		f.Time = h.Status.CompletionTime.UTC()
	}
	if e := h.Status.Error; e != nil {
		f.Reason = string(e.ErrorType)
		f.Message = strings.TrimPrefix(strings.Join([]string{f.Message, e.Message}, "; "), "; ")
	}
	for _, st := range h.Status.HookStatuses {
		if st.Succeed != nil && !*st.Succeed {
			f.LogTail = strings.TrimRight(st.Output, "\n")
			if f.Message == "" && st.Error != nil {
				f.Message = fmt.Sprintf("in %s/%s: %s", st.PodName, st.ContainerName, st.Error.Message)
			}
			break
		}
	}
	return f
}

// stepPods selects the defer step pods.
var stepPods = labels.SelectorFromSet(nil).Add(func() labels.Requirement {
	r, _ := labels.NewRequirement(v1alpha1.DeferStepOfLabel, selection.Exists, nil) // a fixed, valid key
	return *r
}())

// stepPodFailure describes a failed step pod.
func stepPodFailure(step *corev1.Pod) Failure {
	f := Failure{Event: v1alpha1.NotifyDeferStepFailed, Time: step.CreationTimestamp.UTC(), Reason: "DeferStepFailed",
		Step: "step " + step.Labels[v1alpha1.DeferStepLabel],
		Message: fmt.Sprintf("step %s of DeferPolicy %s for pod %s failed (step pod %s)", step.Labels[v1alpha1.DeferStepLabel],
			step.Labels[v1alpha1.DeferPolicyLabel], step.Annotations[v1alpha1.DeferStepForAnnotation], step.Name)}
	for _, cs := range step.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			f.Message = fmt.Sprintf("step %s of DeferPolicy %s for pod %s failed with exit code %d (step pod %s)", step.Labels[v1alpha1.DeferStepLabel],
				step.Labels[v1alpha1.DeferPolicyLabel], step.Annotations[v1alpha1.DeferStepForAnnotation], t.ExitCode, step.Name)
			f.LogTail = strings.TrimRight(t.Message, "\n")
		}
	}
	return f
}

// deferFailure reads a failed step from a pod's defer run: one that failed for good
// (restartPolicy Never, or it could not run), or an attempt that runs again.
func deferFailure(pod *corev1.Pod) (Failure, bool) {
	run, err := v1alpha1.DeferRunOf(pod)
	if err != nil || run == nil || (len(run.Failed) == 0 && run.Attempt == 0) {
		return Failure{}, false
	}
	f := Failure{Event: v1alpha1.NotifyDeferStepFailed, Time: pod.CreationTimestamp.UTC(), Reason: "DeferStepFailed"}
	if run.Started != nil {
		f.Time = run.Started.UTC()
	}
	if len(run.Failed) > 0 {
		f.Step = run.Failed[0]
		f.Message = fmt.Sprintf("the %s steps of DeferPolicy %s for pod %s: %s failed", run.When, run.Policy, pod.Name, strings.Join(run.Failed, ", "))
	} else {
		f.Step = fmt.Sprintf("step %d/%d", run.Current+1, run.Steps)
		f.Message = fmt.Sprintf("the %s steps of DeferPolicy %s for pod %s: step %d/%d failed (attempt %d) and runs again (restartPolicy OnFailure)",
			run.When, run.Policy, pod.Name, run.Current+1, run.Steps, run.Attempt)
	}
	return f, true
}
