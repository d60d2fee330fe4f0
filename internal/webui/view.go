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
		Ready: dc.Status.ReadyReplicas, Desired: revision.ConfigReplicas(dc), Paused: dc.Spec.Paused, Frozen: dc.Status.Frozen,
		Images: images(dc.Spec.Template.Spec.Containers),
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
		d.Revisions = append(d.Revisions, revisionOf(c.revs[i], c.pods))
	}
	for _, p := range c.pods {
		d.Pods = append(d.Pods, podOf(p))
	}
	sort.Slice(d.Pods, func(i, j int) bool {
		if d.Pods[i].Revision != d.Pods[j].Revision {
			return d.Pods[i].Revision > d.Pods[j].Revision
		}
		return d.Pods[i].Name < d.Pods[j].Name
	})
	return d
}

func revisionOf(rs *appsv1.ReplicaSet, pods []*corev1.Pod) Revision {
	n, _ := revision.Number(rs)
	r := Revision{Number: n, Name: rs.Name, Phase: string(revision.Phase(rs)), Cause: rs.Annotations[v1alpha1.CauseAnnotation],
		Reason: rs.Annotations[v1alpha1.StatusReasonAnnotation], Images: images(rs.Spec.Template.Spec.Containers),
		Created: rs.CreationTimestamp.Time}
	if step, ok := v1alpha1.StepOf(rs); ok {
		r.Step = step.String()
	}
	for _, p := range pods {
		if name := stageOf(rs, p); name != "" {
			r.Stages = append(r.Stages, stageTimes(name, p))
		}
	}
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
