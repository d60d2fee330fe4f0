// Package tree lays out a DeploymentConfig as the tree that `kubectl stagehand get dc/NAME`
// shows: the DC with its triggers and conditions, its revisions newest first, the latest
// revision's deployer pod, hook pods and ExecutionHooks, and each revision's pods, every
// row with a status mark. Build reads only the objects it is given, so one read and a
// watch draw the same tree; render.go draws it.
package tree

import (
	"encoding/json"
	"fmt"
	"slices"
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
	DC             *v1alpha1.DeploymentConfig
	ReplicaSets    []*appsv1.ReplicaSet
	Pods           []*corev1.Pod
	ExecutionHooks []*v1alpha1.ExecutionHook
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
	revs := o.Revisions()
	latest := o.Latest()
	active := revision.NewestComplete(revs)
	v := &View{}

	rootMark, rootStatus, rootInfo := dcStatus(o, latest)
	desired := dcReplicas(dc)
	v.header = append(v.header,
		headerLine{key: "Name", text: dc.Name},
		headerLine{key: "Namespace", text: dc.Namespace},
		headerLine{key: "Status", mark: rootMark, text: strings.Join(append([]string{rootStatus}, rootInfo...), ", ")},
		headerLine{key: "Strategy", text: strategyText(&dc.Spec.Strategy)},
		headerLine{key: "Replicas", text: fmt.Sprintf("%d/%d ready, %d updated, %d available", dc.Status.ReadyReplicas, desired,
			dc.Status.UpdatedReplicas, dc.Status.AvailableReplicas)},
	)
	v.header = append(v.header, triggerLines(dc)...)
	for _, c := range dc.Status.Conditions {
		v.conditions = append(v.conditions, conditionRow{mark: conditionMark(c), typ: c.Type, status: string(c.Status),
			reason: c.Reason, message: c.Message})
	}

	v.root = &treeNode{name: dc.Name, kind: "DeploymentConfig", mark: rootMark, status: rootStatus,
		created: dc.CreationTimestamp.Time, info: []string{fmt.Sprintf("ready %d/%d", dc.Status.ReadyReplicas, desired)}}
	for i := len(revs) - 1; i >= 0; i-- {
		rs := revs[i]
		n := revisionNode(rs, rs == active)
		if rs == latest {
			n.children = append(n.children, o.runOnceNodes(rs)...)
		}
		n.children = append(n.children, o.podNodes(rs, deferText)...)
		v.root.children = append(v.root.children, n)
	}
	return v
}

// dcStatus is the DC's mark, status and notes: its latest revision's phase, or why it has
// none.
func dcStatus(o *Objects, latest *appsv1.ReplicaSet) (mark, string, []string) {
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
		return markFailed, string(phase), notes
	case v1alpha1.RevisionPhaseComplete:
	default:
		return markProgress, string(phase), notes
	}
	desired := dcReplicas(dc)
	switch {
	case desired == 0 || dc.Spec.Test:
		return markInactive, "Complete", append(notes, "scaled to 0")
	case dc.Status.ReadyReplicas < desired:
		return markDegraded, "Degraded", append(notes, fmt.Sprintf("Complete but only %d/%d ready", dc.Status.ReadyReplicas, desired))
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
		if reason := rs.Annotations[v1alpha1.StatusReasonAnnotation]; reason != "" {
			node.info = append(node.info, reason)
		}
	case v1alpha1.RevisionPhaseComplete:
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
	}
	if active {
		node.info = append(node.info, "active")
	}
	return node
}

// revisionCause is ConfigChange, Manual, "Rollback to N" or "ImageChange <tag>".
func revisionCause(rs *appsv1.ReplicaSet) string {
	cause := string(revision.Cause(rs))
	switch {
	case cause == "":
		return "cause unknown"
	case cause == string(v1alpha1.DeploymentCauseRollback) && rs.Annotations[v1alpha1.RollbackToAnnotation] != "":
		return cause + " to " + rs.Annotations[v1alpha1.RollbackToAnnotation]
	case cause == string(v1alpha1.DeploymentCauseImageChange) && rs.Annotations[v1alpha1.ImageTriggerAnnotation] != "":
		tag, _, _ := strings.Cut(rs.Annotations[v1alpha1.ImageTriggerAnnotation], " -> ")
		return cause + " " + tag
	}
	return cause
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

// runOnceNodes are the latest revision's deployer pod, hook pods and ExecutionHooks, the
// hooks in the order they started.
func (o *Objects) runOnceNodes(rs *appsv1.ReplicaSet) []*treeNode {
	var out []*treeNode
	deployer := rs.Annotations[v1alpha1.DeployerPodAnnotation]
	if deployer == "" {
		deployer = v1alpha1.DeployerPodName(rs.Name)
	}
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
			out = append(out, runOncePodNode(p, "Deployer"))
		case p.Labels[v1alpha1.HookStageLabel] != "" && p.Labels[v1alpha1.RevisionLabel] == number:
			hooks = append(hooks, hook{p.CreationTimestamp.Time, runOncePodNode(p, "Hook "+p.Labels[v1alpha1.HookStageLabel])})
		}
	}
	if !found {
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

// missingDeployer is a deployer pod that is not there: not created yet, or deleted.
func missingDeployer(rs *appsv1.ReplicaSet, name string) *treeNode {
	n := &treeNode{name: name, kind: "Deployer", mark: markInactive, status: "Gone",
		info: []string{"the pod was deleted; the revision keeps its outcome"}}
	if phase := revision.Phase(rs); phase == v1alpha1.RevisionPhaseNew {
		n.mark, n.status, n.info = markProgress, "Not created yet", nil
	} else if !phase.IsTerminal() {
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
		n.info = append(n.info, failureText(p))
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
// exit code and reason with the last line of its termination message (the deployer's is
// JSON: its reason and message).
func failureText(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range statuses {
			t := s.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			text := fmt.Sprintf("exit code %d", t.ExitCode)
			if t.Reason != "" {
				text += " (" + t.Reason + ")"
			}
			if msg := terminationText(t.Message); msg != "" {
				text += ": " + msg
			}
			return text
		}
	}
	return "no reason recorded"
}

// terminationText is the deployer's "Reason: message", or the last line of a log tail.
func terminationText(msg string) string {
	msg = strings.TrimSpace(msg)
	var tm v1alpha1.TerminationMessage
	if strings.HasPrefix(msg, "{") && json.Unmarshal([]byte(msg), &tm) == nil && tm.Reason != "" {
		return revision.FormatStatusReason(tm.Reason, tm.Message)
	}
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	return shorten(msg, 120)
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

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
	return string(e.ErrorType) + ": " + shorten(e.Message, 120)
}

// podNodes are the application pods of revision rs (not its deployer or hook pods), by
// name, with their defer steps.
func (o *Objects) podNodes(rs *appsv1.ReplicaSet, deferText DeferText) []*treeNode {
	number := rs.Labels[v1alpha1.RevisionLabel]
	var pods []*corev1.Pod
	for _, p := range o.Pods {
		if p.Labels[v1alpha1.RevisionLabel] == number && !v1alpha1.IsStagehandRunOncePod(p.Labels) {
			pods = append(pods, p)
		}
	}
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
		n.info = append(n.info, failureText(p))
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
