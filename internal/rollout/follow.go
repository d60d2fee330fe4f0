package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// RolloutFailed is the error of Follow when the followed rollout fails.
type RolloutFailed struct {
	RevisionName string
	// Reason is the revision's status-reason: "<Reason>: <message>".
	Reason string
}

func (e *RolloutFailed) Error() string {
	return fmt.Sprintf("revision %s failed: %s", e.RevisionName, e.Reason)
}

// FollowResync is how often Follow reads the DC, its latest revision and its events when
// nothing woke it: a safety net. Follow is driven by watches on the DC, its revisions (its
// ReplicaSets, or a StatefulSet DC's ControllerRevisions and StatefulSet), its pods and its
// events, and reads again as soon as one of them changes.
var FollowResync = 10 * time.Second

// Follow follows the latest rollout of a DC until it is Complete (nil) or Failed
// (*RolloutFailed), writing its phase changes, the readiness of its pods and its hooks'
// progress to out. When a newer revision supersedes the followed one, it follows that one.
// ctx bounds the wait.
func (c *Client) Follow(ctx context.Context, name string, out io.Writer) error {
	f := &follower{c: c, name: name, out: out, seen: map[string]bool{}, images: map[string]string{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := c.watchChanges(ctx, name)
	for {
		done, err := f.step(ctx)
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			what := "the rollout"
			if f.rs != "" {
				what = "revision " + f.rs
			}
			return fmt.Errorf("stopped waiting for %s of deploymentconfig/%s (last seen: %s): %w", what, name, f.lastSeen(), ctx.Err())
		case <-changed:
		case <-time.After(FollowResync):
		}
	}
}

// watchChanges returns a channel that receives (coalesced) whenever the DC, one of its
// revisions (revisionWatches) or pods, or one of its events changes, until ctx is done. A
// watch the user may not open, or one that ends, leaves Follow to its resync.
func (c *Client) watchChanges(ctx context.Context, name string) <-chan struct{} {
	changed := make(chan struct{}, 1)
	byConfig := metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=" + name}
	opens := []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Watch(ctx,
				metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		},
	}
	opens = append(opens, c.revisionWatches(ctx, name, c.isStateful(ctx, name))...)
	opens = append(opens,
		func() (watch.Interface, error) { return c.Kube.CoreV1().Pods(c.Namespace).Watch(ctx, byConfig) },
		func() (watch.Interface, error) {
			return c.Kube.CoreV1().Events(c.Namespace).Watch(ctx,
				metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		},
	)
	for _, open := range opens {
		w, err := open()
		if err != nil {
			continue
		}
		go func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-w.ResultChan():
					if !ok {
						return
					}
					select {
					case changed <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return changed
}

type follower struct {
	c     *Client
	name  string
	out   io.Writer
	rs    string // the followed revision
	phase v1alpha1.RevisionPhase
	ready string
	seen  map[string]bool // hook events already printed, by UID and count
	// images holds the line last printed for each ImageChange trigger that holds back the
	// first rollout, by watched tag; waiting says that the last read found some.
	images  map[string]string
	waiting bool
	// stepText is the step of a rollout with steps, as last printed.
	stepText string
	// waitText is what the revision waits for (its waiting annotation), as last printed.
	waitText string
}

// lastSeen is what Follow last saw, for the message when it stops waiting.
func (f *follower) lastSeen() string {
	switch {
	case f.rs != "":
		return string(f.phase)
	case f.waiting:
		return lastSeenWaitingForImages
	}
	return "no revision yet"
}

// step reads the DC once and prints what changed since the last read, in the order in
// which it happened. One read can find several things that happened since the previous
// one: the deployer pod runs the hooks and records their events before it ends, and only
// then does the revision become Complete or Failed. So a phase change into Pending or
// Running comes first, the hook events next (oldest first), and the end of the revision
// last, after the hooks that led to it.
func (f *follower) step(ctx context.Context) (bool, error) {
	st, err := f.c.Get(ctx, f.name)
	if err != nil {
		return false, err
	}
	rs := st.Latest()
	if rs == nil {
		if err := f.nothingComing(st); err != nil {
			return false, err
		}
		f.imageTriggers(st)
		return false, nil
	}
	f.waiting = false
	if rs.Name != f.rs {
		if f.rs != "" && !f.phase.IsTerminal() {
			fmt.Fprintf(f.out, "revision %s was superseded by %s\n", f.rs, rs.Name)
		}
		f.rs, f.phase, f.ready = rs.Name, "", ""
		fmt.Fprintf(f.out, "Following revision %s (cause: %s)\n", rs.Name, causeText(rs.Annotations))
	}
	phase := revision.Phase(rs)
	if phase != f.phase && !phase.IsTerminal() {
		f.phase = phase
		fmt.Fprintf(f.out, "revision %s: %s\n", rs.Name, phase)
	}
	if err := f.hookEvents(ctx, st.DC, rs); err != nil {
		return false, err
	}
	desired := "?"
	if n, err := revision.DesiredReplicas(rs); err == nil {
		desired = strconv.Itoa(int(n))
	}
	readyPods, err := f.c.readyPods(ctx, rs)
	if err != nil {
		return false, err
	}
	ready := fmt.Sprintf("%d of %s pods ready", readyPods, desired)
	if phase == v1alpha1.RevisionPhaseRunning && ready != f.ready {
		f.ready = ready
		fmt.Fprintf(f.out, "revision %s: %s\n", rs.Name, ready)
	}
	if step, ok := v1alpha1.StepOf(rs); ok && phase == v1alpha1.RevisionPhaseRunning && step.String() != f.stepText {
		f.stepText = step.String()
		fmt.Fprintf(f.out, "revision %s: %s\n", rs.Name, f.stepText)
	}
	if _, wait := revision.Waiting(rs); wait != f.waitText && !phase.IsTerminal() {
		f.waitText = wait
		if wait != "" {
			fmt.Fprintf(f.out, "revision %s is waiting: %s\n", rs.Name, wait)
		}
	}
	if phase != f.phase {
		f.phase = phase
		fmt.Fprintf(f.out, "revision %s: %s\n", rs.Name, phase)
	}
	switch phase {
	case v1alpha1.RevisionPhaseComplete:
		fmt.Fprintf(f.out, "revision %s is complete: %s\n", rs.Name, ready)
		return true, nil
	case v1alpha1.RevisionPhaseFailed:
		return true, &RolloutFailed{RevisionName: rs.Name, Reason: revision.StatusReasonText(rs)}
	}
	return false, nil
}

// imageTriggers prints, once per change, each ImageChange trigger that holds back the
// first rollout and what its status says (the controller reports the wait as the
// Progressing condition WaitingForImages).
func (f *follower) imageTriggers(st *State) {
	if st.DC.Status.LatestVersion > 0 || st.pendingRequest() != nil {
		f.waiting = false
		return // a revision is being created
	}
	waits := imagesWaiting(st.DC)
	f.waiting = len(waits) > 0
	for _, w := range waits {
		if f.images[w.From] != w.Line {
			f.images[w.From] = w.Line
			fmt.Fprintln(f.out, w.Line)
		}
	}
}

// nothingComing fails when the DC has no revision yet and none will start on its own.
func (f *follower) nothingComing(st *State) error {
	if st.DC.Status.LatestVersion > 0 || st.pendingRequest() != nil {
		return nil // being created
	}
	if st.DC.Spec.Paused {
		return errors.New(st.Name() + " has no revision and is paused: resume it (kubectl stagehand rollout resume " + st.Name() + ")")
	}
	for _, t := range st.DC.Spec.Triggers {
		if t.Type == v1alpha1.DeploymentTriggerOnConfigChange || t.Type == v1alpha1.DeploymentTriggerOnImageChange {
			return nil
		}
	}
	return errors.New(st.Name() + " has no revision and no trigger that would start one: start it with kubectl stagehand rollout latest " + st.Name())
}

// hookEvents prints the hook events recorded on the DC since the revision was created.
func (f *follower) hookEvents(ctx context.Context, dc *v1alpha1.DeploymentConfig, rs *appsv1.ReplicaSet) error {
	list, err := f.c.Kube.CoreV1().Events(dc.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": dc.Name, "involvedObject.uid": string(dc.UID)}.String()})
	if err != nil {
		return fmt.Errorf("listing the events of %s: %w", dc.Name, err)
	}
	sortEvents(list.Items)
	for _, e := range list.Items {
		switch e.Reason {
		case v1alpha1.EventHookStarted, v1alpha1.EventHookSucceeded, v1alpha1.EventHookFailed:
		default:
			continue
		}
		// Event times have second precision: the previous revision's last hook may share
		// the second in which this one was created. Its hooks are named after it.
		if eventTime(e).Before(rs.CreationTimestamp.Time) || !namesHookOf(e.Message, rs.Name) {
			continue
		}
		key := fmt.Sprintf("%s/%d", e.UID, e.Count)
		if f.seen[key] {
			continue
		}
		f.seen[key] = true
		fmt.Fprintf(f.out, "revision %s: %s\n", rs.Name, e.Message)
	}
	return nil
}

// sortEvents orders events oldest first. Their times have second precision, so events
// of the same second keep the order of their names: the deployer, like client-go's
// recorder, names an event <object>.<creation time in hexadecimal nanoseconds>.
func sortEvents(events []corev1.Event) {
	sort.SliceStable(events, func(i, j int) bool {
		a, b := eventTime(events[i]), eventTime(events[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return events[i].Name < events[j].Name
	})
}

// namesHookOf reports whether a hook event's message names a hook (pod or exec hook) of
// revision, at any stage and attempt.
func namesHookOf(msg, revision string) bool {
	for _, stage := range []string{"pre", "mid", "post"} {
		for attempt := 1; attempt <= maxHookAttempts; attempt++ {
			if strings.Contains(msg, " "+v1alpha1.HookPodName(revision, stage, attempt)) {
				return true
			}
		}
	}
	return false
}

// maxHookAttempts is the most attempts a Retry hook may have (retry.maxAttempts).
const maxHookAttempts = 100

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
