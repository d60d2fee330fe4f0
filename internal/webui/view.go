package webui

import (
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Summary is one row of the DC list.
type Summary struct {
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	Phase      string    `json:"phase"`
	Revision   int64     `json:"revision"`
	Ready      int32     `json:"ready"`
	Desired    int32     `json:"desired"`
	Paused     bool      `json:"paused"`
	Frozen     string    `json:"frozen,omitempty"`
	LastChange time.Time `json:"lastChange,omitzero"`
	Images     []string  `json:"images"`
	Why        string    `json:"why,omitempty"`
}

// Detail is one DC: its row, the timeline of its revisions (newest first) and its pods.
type Detail struct {
	Summary
	Revisions []Revision `json:"revisions"`
	Pods      []Pod      `json:"pods"`
}

// Revision is one revision on the timeline.
type Revision struct {
	Number  int64     `json:"number"`
	Name    string    `json:"name"`
	Phase   string    `json:"phase"`
	Cause   string    `json:"cause,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Images  []string  `json:"images"`
	Created time.Time `json:"created"`
	Step    string    `json:"step,omitempty"`
	Stages  []Stage   `json:"stages"`
}

// Stage is one stage of a revision's rollout, timed from its pod: the deployer, or a hook
// attempt (pre, mid, post, failed).
type Stage struct {
	Name     string    `json:"name"`
	Pod      string    `json:"pod"`
	State    string    `json:"state"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Duration string    `json:"duration,omitempty"`
}

// Pod is one pod of the DC: an application pod of a revision, its deployer or a hook pod.
type Pod struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Revision string `json:"revision,omitempty"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Restarts int32  `json:"restarts"`
	Node     string `json:"node,omitempty"`
	Defer    string `json:"defer,omitempty"`
}

func summaryOf(c *config) Summary {
	dc := c.dc
	s := Summary{
		Namespace: dc.Namespace, Name: dc.Name, Phase: string(dc.Status.Phase), Revision: dc.Status.LatestVersion,
		Desired: revision.ConfigReplicas(dc), Paused: dc.Spec.Paused, Frozen: dc.Status.Frozen,
		Images: images(dc.Spec.Template.Spec.Containers),
	}
	// Ready counts the pods themselves: the DC's status may lag a rollout by a few seconds.
	s.Ready = 0
	for _, p := range c.pods {
		if podOf(p).Role == "app" && p.DeletionTimestamp == nil && podReady(p) {
			s.Ready++
		}
	}
	if latest := revision.Find(c.revs, dc.Status.LatestVersion); latest != nil {
		s.LastChange = latest.CreationTimestamp.Time
		s.Phase = string(revision.Phase(latest))
	}
	s.Why = why(c)
	return s
}

func detailOf(c *config) Detail {
	d := Detail{Summary: summaryOf(c)}
	for i := len(c.revs) - 1; i >= 0; i-- {
		d.Revisions = append(d.Revisions, revisionOf(c.revs[i], c.pods, c.events))
	}
	byHash := map[string]string{} // a StatefulSet pod's revision is the one of its template hash
	for _, rs := range c.revs {
		if hash := revision.TemplateHash(rs); hash != "" {
			byHash[hash] = rs.Labels[v1alpha1.RevisionLabel]
		}
	}
	for _, p := range c.pods {
		pod := podOf(p)
		if n, ok := byHash[p.Labels[appsv1.ControllerRevisionHashLabelKey]]; ok && pod.Role == "app" {
			pod.Revision = n
		}
		d.Pods = append(d.Pods, pod)
	}
	sort.Slice(d.Pods, func(i, j int) bool {
		if d.Pods[i].Revision != d.Pods[j].Revision {
			return d.Pods[i].Revision > d.Pods[j].Revision
		}
		return d.Pods[i].Name < d.Pods[j].Name
	})
	return d
}

func revisionOf(rs *appsv1.ReplicaSet, pods []*corev1.Pod, events []*corev1.Event) Revision {
	n, _ := revision.Number(rs)
	r := Revision{Number: n, Name: rs.Name, Phase: string(revision.Phase(rs)), Cause: rs.Annotations[v1alpha1.CauseAnnotation],
		Reason: rs.Annotations[v1alpha1.StatusReasonAnnotation], Images: images(rs.Spec.Template.Spec.Containers),
		Created: rs.CreationTimestamp.Time}
	if step, ok := v1alpha1.StepOf(rs); ok {
		r.Step = step.String()
	}
	have := map[string]bool{}
	for _, p := range pods {
		if name := stageOf(rs, p); name != "" {
			r.Stages = append(r.Stages, stageTimes(name, p))
			have[p.Name] = true
		}
	}
	r.Stages = append(r.Stages, hookStages(rs, events, have)...)
	sort.SliceStable(r.Stages, func(i, j int) bool { return r.Stages[i].Start.Before(r.Stages[j].Start) })
	return r
}

// stageOf names the stage that pod p runs for revision rs: "deployer", "pre hook",
// "post hook (attempt 2)"; "" when p is not one of rs's deployer or hook pods.
func stageOf(rs *appsv1.ReplicaSet, p *corev1.Pod) string {
	if p.Labels[v1alpha1.DeployerPodForLabel] == rs.Name {
		return "deployer"
	}
	stage := p.Labels[v1alpha1.HookStageLabel]
	if stage == "" || p.Labels[v1alpha1.RevisionLabel] != rs.Labels[v1alpha1.RevisionLabel] {
		return ""
	}
	if a := attemptOf(rs.Name, stage, p.Name); a > 1 {
		return stage + " hook (attempt " + strconv.Itoa(a) + ")"
	}
	return stage + " hook"
}

// hookStages are the hook attempts of rs timed by the deployer's events (HookStarted, then
// HookSucceeded or HookFailed, whose messages name the hook pod), for the pods that are
// gone: a hook pod is deleted once it has finished. have names the pods still there.
func hookStages(rs *appsv1.ReplicaSet, events []*corev1.Event, have map[string]bool) []Stage {
	byPod := map[string]*Stage{}
	var order []string
	for _, e := range events {
		words := strings.Fields(e.Message)
		if len(words) < 3 || words[1] != "hook" || !strings.HasPrefix(words[2], rs.Name+"-hook-") || have[words[2]] {
			continue
		}
		pod, stage := words[2], words[0]
		st := byPod[pod]
		if st == nil {
			name := stage + " hook"
			if a := attemptOf(rs.Name, stage, pod); a > 1 {
				name += " (attempt " + strconv.Itoa(a) + ")"
			}
			st = &Stage{Name: name, Pod: pod, State: "Running"}
			byPod[pod] = st
			order = append(order, pod)
		}
		at := eventTime(e)
		switch e.Reason {
		case v1alpha1.EventHookStarted:
			st.Start = at
		case v1alpha1.EventHookSucceeded:
			st.End, st.State = at, string(corev1.PodSucceeded)
		case v1alpha1.EventHookFailed:
			st.End, st.State = at, string(corev1.PodFailed)
		}
	}
	var out []Stage
	for _, pod := range order {
		st := byPod[pod]
		if !st.Start.IsZero() && !st.End.IsZero() {
			st.Duration = st.End.Sub(st.Start).Round(time.Second).String()
		}
		out = append(out, *st)
	}
	return out
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// attemptOf is the attempt whose hook pod is named name, from 1; 0 when none is.
func attemptOf(rs, stage, name string) int {
	for a := 1; a <= 100; a++ {
		if v1alpha1.HookPodName(rs, stage, a) == name {
			return a
		}
	}
	return 0
}

func stageTimes(name string, p *corev1.Pod) Stage {
	s := Stage{Name: name, Pod: p.Name, State: string(p.Status.Phase), Start: p.CreationTimestamp.Time}
	if p.Status.StartTime != nil {
		s.Start = p.Status.StartTime.Time
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(s.End) {
			s.End = t.FinishedAt.Time
		}
	}
	end := s.End
	if end.IsZero() {
		end = now()
	}
	if !s.Start.IsZero() {
		s.Duration = end.Sub(s.Start).Round(time.Second).String()
	}
	return s
}

func podOf(p *corev1.Pod) Pod {
	out := Pod{Name: p.Name, Role: "app", Revision: p.Labels[v1alpha1.RevisionLabel], Phase: string(p.Status.Phase),
		Ready: podReady(p), Node: p.Spec.NodeName, Defer: p.Annotations[v1alpha1.DeferProgressAnnotation]}
	switch {
	case p.Labels[v1alpha1.DeployerPodForLabel] != "":
		out.Role = "deployer"
	case p.Labels[v1alpha1.HookStageLabel] != "":
		out.Role = p.Labels[v1alpha1.HookStageLabel] + " hook"
	case p.Labels[v1alpha1.DeferStepOfLabel] != "":
		out.Role = "defer step"
	}
	if p.DeletionTimestamp != nil {
		out.Phase = "Terminating"
	}
	for _, cs := range p.Status.ContainerStatuses {
		out.Restarts += cs.RestartCount
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func images(containers []corev1.Container) []string {
	var out []string
	for _, c := range containers {
		out = append(out, c.Image)
	}
	return out
}

func sortConfigs(cs []*config) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i].dc, cs[j].dc
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && strings.Compare(a.Name, b.Name) < 0)
	})
}
