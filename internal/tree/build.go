// Package tree lays out a DeploymentConfig as the tree that `kubectl stagehand get dc/NAME`
// shows: the DC with its triggers and conditions, its revisions newest first, the latest
// revision's deployer pod, hook pods and ExecutionHooks, and each revision's pods and
// notification receipts, every row with a status mark. Build reads only the objects it is
// given, so one read and a watch draw the same tree; render.go draws it.
package tree

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Objects are what one tree is built from: the DC and what carries its
// stagehand.dev/config label. Objects of other DCs are left out.
type Objects struct {
	DC *v1alpha1.DeploymentConfig
	// ReplicaSets are the revisions: ReplicaSets, or for a DC with spec.statefulSet the
	// ReplicaSet views of its ControllerRevisions (api/revision, record.go).
	ReplicaSets []*appsv1.ReplicaSet
	// StatefulSet is the StatefulSet of a DC with spec.statefulSet, nil while it does
	// not exist.
	StatefulSet *appsv1.StatefulSet
	// Pods are the DC's pods; a StatefulSet DC's may also be pods of its StatefulSet
	// without the config label (those of a template that adopt took over as it was).
	Pods           []*corev1.Pod
	ExecutionHooks []*v1alpha1.ExecutionHook
	// Receipts are the DC's notification receipts; none for a user who may not list them.
	Receipts []*v1alpha1.RolloutDelivery
}

// Latest is the revision status.latestVersion names, or nil.
func (o *Objects) Latest() *appsv1.ReplicaSet {
	return revision.Find(o.Revisions(), o.DC.Status.LatestVersion)
}

// Revisions are the DC's own revisions, oldest first.
func (o *Objects) Revisions() []*appsv1.ReplicaSet {
	return revision.Owned(o.DC.UID, o.ReplicaSets)
}

// DeferText describes a pod's defer steps (progress and where the run is), or is "" for a
// pod without a run. The plugin passes the one `defer status` uses.
type DeferText func(pod *corev1.Pod) string

// mark is a status mark; get_render.go draws it as a symbol or in ASCII.
type mark int

const (
	markNone     mark = iota
	markOK            // complete, ready, succeeded
	markProgress      // progressing, pending
	markFailed        // failed
	markDegraded      // complete or running, but not all there
	markInactive      // scaled to 0, no revision, gone
)

// treeNode is one row of the tree.
type treeNode struct {
	name, kind string
	mark       mark
	status     string
	created    time.Time // zero: no age
	info       []string  // joined with ", "
	children   []*treeNode
}

// headerLine is one line above the tree: "Key:  [mark] text"; a line with key "" continues
// the one before it.
type headerLine struct {
	key  string
	mark mark
	text string
}

// View is everything the tree shows about one DeploymentConfig.
type View struct {
	header []headerLine
	// conditions are rows of TYPE, STATUS, REASON, MESSAGE, each with a mark.
	conditions []conditionRow
	root       *treeNode
}

type conditionRow struct {
	mark                         mark
	typ, status, reason, message string
}

// Build lays out the objects as header lines, conditions and a tree; deferText (nil: none)
// describes the pods' defer steps. Ages are drawn later, by Render.
func Build(o *Objects, deferText DeferText) *View {
	dc := o.DC
	revs, pods := o.revisionsAndPods()
	latest := revision.Find(revs, dc.Status.LatestVersion)
	active := revision.NewestComplete(revs)
	v := &View{}

	ready, updated, available := replicaCounts(revs, latest)
	if set := o.statefulSet(); set != nil {
		// The StatefulSet counts its pods of every template, and their availability
		// (minReadySeconds): the tree has no clock.
		ready, available = set.Status.ReadyReplicas, set.Status.AvailableReplicas
	}
	rootMark, rootStatus, rootInfo := dcStatus(o, latest, ready)
	desired := dcReplicas(dc)
	v.header = append(v.header,
		headerLine{key: "Name", text: dc.Name},
		headerLine{key: "Namespace", text: dc.Namespace},
		headerLine{key: "Status", mark: rootMark, text: strings.Join(append([]string{rootStatus}, rootInfo...), ", ")},
		headerLine{key: "Strategy", text: strategyText(&dc.Spec.Strategy)},
		headerLine{key: "Replicas", text: fmt.Sprintf("%d/%d ready, %d updated, %d available", ready, desired, updated, available)},
	)
	v.header = append(v.header, o.workloadLines()...)
	v.header = append(v.header, triggerLines(dc)...)
	for _, c := range dc.Status.Conditions {
		v.conditions = append(v.conditions, conditionRow{mark: conditionMark(c), typ: c.Type, status: string(c.Status),
			reason: c.Reason, message: c.Message})
	}

	v.root = &treeNode{name: dc.Name, kind: "DeploymentConfig", mark: rootMark, status: rootStatus,
		created: dc.CreationTimestamp.Time, info: []string{fmt.Sprintf("ready %d/%d", ready, desired)}}
	if dc.Spec.StatefulSet != nil {
		v.root.children = append(v.root.children, o.statefulSetNode(pods.unknown, deferText))
	}
	receipts := map[string][]*v1alpha1.RolloutDelivery{}
	for _, d := range o.Receipts {
		receipts[d.Spec.Revision] = append(receipts[d.Spec.Revision], d)
	}
	for i := len(revs) - 1; i >= 0; i-- {
		rs := revs[i]
		n := revisionNode(rs, rs == active)
		if rs == latest {
			n.children = append(n.children, o.runOnceNodes(rs)...)
		}
		n.children = append(n.children, receiptNodes(receipts[rs.Name])...)
		n.children = append(n.children, podNodes(pods.of[rs.Name], deferText)...)
		v.root.children = append(v.root.children, n)
	}
	return v
}

// revisionsAndPods are the DC's revisions, oldest first, and their application pods. The
// revisions of a StatefulSet DC are views with no pods of their own; they come back with
// the counts of the StatefulSet's pods that run them (statefulset.go).
func (o *Objects) revisionsAndPods() ([]*appsv1.ReplicaSet, appPods) {
	if o.DC.Spec.StatefulSet != nil {
		return o.statefulRevisions()
	}
	revs := o.Revisions()
	return revs, o.replicaSetPods(revs)
}

// replicaCounts are the pods of every revision that are ready and available, and the pods
// of the latest revision, from the ReplicaSets: the DC's status may lag behind them, and
// the tree shows the ReplicaSets' own counts.
func replicaCounts(revs []*appsv1.ReplicaSet, latest *appsv1.ReplicaSet) (ready, updated, available int32) {
	for _, rs := range revs {
		ready += rs.Status.ReadyReplicas
		available += rs.Status.AvailableReplicas
	}
	if latest != nil {
		updated = latest.Status.Replicas
	}
	return ready, updated, available
}

// dcStatus is the DC's mark, status and notes: its latest revision's phase, or why it has
// none. ready counts the ready pods of every revision.
func dcStatus(o *Objects, latest *appsv1.ReplicaSet, ready int32) (mark, string, []string) {
	dc := o.DC
	var notes []string
	if dc.Spec.Paused {
		notes = append(notes, "paused")
	}
	if dc.Status.LatestVersion == 0 {
		if p := findCondition(dc.Status.Conditions, v1alpha1.ConditionProgressing); p != nil && p.Message != "" {
			notes = append(notes, p.Message)
		}
		return markInactive, "No revision yet", notes
	}
	if latest == nil {
		return markProgress, fmt.Sprintf("Revision %d is being created", dc.Status.LatestVersion), notes
	}
	phase := revision.Phase(latest)
	notes = append([]string{"revision " + strconv.FormatInt(dc.Status.LatestVersion, 10)}, notes...)
	switch phase {
	case v1alpha1.RevisionPhaseFailed:
		if dc.Status.Frozen != "" {
			// onFailure: Freeze: the status is Failed, and nothing was rolled back.
			return markFailed, "Failed, frozen", append(notes, "no revision is scaled until rollout retry, rollout undo or a new revision")
		}
		return markFailed, string(phase), notes
	case v1alpha1.RevisionPhaseComplete:
	default:
		if step, ok := v1alpha1.StepOf(latest); ok && phase == v1alpha1.RevisionPhaseRunning {
			notes = append(notes, step.String())
		}
		return markProgress, string(phase), notes
	}
	desired := dcReplicas(dc)
	switch {
	case desired == 0 || dc.Spec.Test:
		return markInactive, "Complete", append(notes, "scaled to 0")
	case ready < desired:
		return markDegraded, "Degraded", append(notes, fmt.Sprintf("Complete but only %d/%d ready", ready, desired))
	}
	return markOK, "Complete", notes
}

func dcReplicas(dc *v1alpha1.DeploymentConfig) int32 {
	if dc.Spec.Replicas == nil {
		return 1
	}
	return *dc.Spec.Replicas
}

// strategyText is the strategy's type and the stages that have hooks.
func strategyText(s *v1alpha1.DeploymentStrategy) string {
	typ := string(s.Type)
	if typ == "" {
		typ = string(v1alpha1.DeploymentStrategyTypeRolling)
	}
	var hooks []string
	add := func(stage string, h *v1alpha1.LifecycleHook) {
		switch {
		case h == nil:
		case h.Exec != nil:
			hooks = append(hooks, stage+" (exec)")
		default:
			hooks = append(hooks, stage)
		}
	}
	if p := s.RecreateParams; p != nil {
		add("pre", p.Pre)
		add("mid", p.Mid)
		add("post", p.Post)
	}
	if p := s.RollingParams; p != nil {
		add("pre", p.Pre)
		add("post", p.Post)
	}
	if s.OnFailure == v1alpha1.OnFailureFreeze {
		typ += ", onFailure Freeze"
	}
	if len(hooks) == 0 {
		return typ
	}
	return typ + ", hooks: " + strings.Join(hooks, ", ")
}

// triggerLines are the DC's triggers, one a line.
func triggerLines(dc *v1alpha1.DeploymentConfig) []headerLine {
	key := "Triggers"
	if dc.Spec.Triggers == nil { // left out: the API's default
		return []headerLine{{key: key, text: string(v1alpha1.DeploymentTriggerOnConfigChange)}}
	}
	if len(dc.Spec.Triggers) == 0 {
		return []headerLine{{key: key, text: "none (rollouts start only with kubectl stagehand rollout latest)"}}
	}
	var out []headerLine
	for _, t := range dc.Spec.Triggers {
		text := string(t.Type)
		if p := t.ImageChangeParams; t.Type == v1alpha1.DeploymentTriggerOnImageChange && p != nil {
			mode := "manual"
			if p.Automatic {
				mode = "automatic"
			}
			text = fmt.Sprintf("ImageChange of %s from %s, %s", strings.Join(p.ContainerNames, ","), p.From.Image, mode)
			if p.LastTriggeredImage != "" {
				text += ", last triggered " + p.LastTriggeredImage
			}
			for _, ti := range dc.Status.TriggerImages {
				if ti.From == p.From.Image && ti.Error != "" {
					text += ", last check failed: " + ti.Error
				}
			}
		}
		out = append(out, headerLine{key: key, text: text})
		key = ""
	}
	return out
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// conditionMark reads a condition the way its type means it.
func conditionMark(c metav1.Condition) mark {
	switch {
	case c.Type == v1alpha1.ConditionProgressing && c.Status == metav1.ConditionFalse:
		return markFailed
	case c.Type == v1alpha1.ConditionProgressing && c.Reason == v1alpha1.ReasonRolloutComplete:
		return markOK
	case c.Type == v1alpha1.ConditionProgressing:
		return markProgress
	case c.Status == metav1.ConditionTrue:
		return markOK
	case c.Reason == v1alpha1.ReasonImagesPending || c.Status == metav1.ConditionUnknown:
		return markProgress
	}
	return markDegraded
}

// revisionNode is one revision: its phase, cause, images, ready/desired, and for a
// failure its reason. The active revision is the one that serves (the newest Complete).
func revisionNode(rs *appsv1.ReplicaSet, active bool) *treeNode {
	n, _ := revision.Number(rs)
	phase := revision.Phase(rs)
	replicas := int32(0)
	if rs.Spec.Replicas != nil {
		replicas = *rs.Spec.Replicas
	}
	node := &treeNode{name: rs.Name, kind: "Revision " + strconv.FormatInt(n, 10), status: string(phase),
		created: rs.CreationTimestamp.Time}
	node.info = append(node.info, revisionCause(rs), imagesText(rs.Spec.Template.Spec.Containers),
		fmt.Sprintf("ready %d/%d", rs.Status.ReadyReplicas, replicas))
	switch phase {
	case v1alpha1.RevisionPhaseFailed:
		node.mark = markFailed
		if reason := revision.StatusReasonText(rs); reason != "" {
			node.info = append(node.info, reason)
		}
		if state, msg := v1alpha1.FailureHookStateOf(rs); state != "" {
			node.info = append(node.info, strings.TrimSuffix("failed hook "+string(state)+": "+msg, ": "))
		}
	case v1alpha1.RevisionPhaseComplete:
		if from := rs.Annotations[v1alpha1.AdoptedFromAnnotation]; from != "" {
			node.info = append(node.info, "adopted from "+from)
		}
		switch {
		case replicas == 0:
			node.mark = markInactive
		case rs.Status.ReadyReplicas < replicas:
			node.mark = markDegraded
		default:
			node.mark = markOK
		}
	default:
		node.mark = markProgress
		if step, ok := v1alpha1.StepOf(rs); ok && phase == v1alpha1.RevisionPhaseRunning {
			node.info = append(node.info, step.String())
		}
	}
	if active {
		node.info = append(node.info, "active")
	}
	return node
}

// revisionCause is ConfigChange, Manual, "Rollback to N" or "ImageChange <tag>".
func revisionCause(rs *appsv1.ReplicaSet) string {
	if cause := revision.CauseText(rs); cause != "" {
		return cause
	}
	return "cause unknown"
}

// imagesText is the image of a single container, or container=image for each of several.
func imagesText(containers []corev1.Container) string {
	if len(containers) == 1 {
		return containers[0].Image
	}
	parts := make([]string, 0, len(containers))
	for _, c := range containers {
		parts = append(parts, c.Name+"="+c.Image)
	}
	return strings.Join(parts, " ")
}
