package notify

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Occurrence is one event of one revision that has happened, with its payload (without
// the key, which is the receipt's).
type Occurrence struct {
	Revision *appsv1.ReplicaSet
	Payload  Payload
}

// Happened lists the revision events of dc that its state shows have happened, from what
// the controller and the deployer already record: the phase, the step and waiting
// annotations, the outcome and the frozen status, and the failures of hooks,
// ExecutionHooks and defer steps by revision name (failures.go). It is a function of the
// state alone, so a controller that starts again, or a new leader, finds the same events;
// the receipts make each one sent once. Of the failures, the first of each kind is the
// revision's event.
func Happened(dc *v1alpha1.DeploymentConfig, revs []*appsv1.ReplicaSet, failures map[string][]Failure) []Occurrence {
	var out []Occurrence
	serving := revision.NewestComplete(revs)
	for _, rs := range revs {
		n, ok := revision.Number(rs)
		if !ok {
			continue
		}
		base := Payload{Version: PayloadVersion, Namespace: dc.Namespace, DeploymentConfig: dc.Name, Revision: n, RevisionName: rs.Name,
			Images: images(rs), Time: rs.CreationTimestamp.UTC()}
		add := func(e v1alpha1.NotifyEvent, mutate func(*Payload)) {
			p := base
			p.Event = e
			if mutate != nil {
				mutate(&p)
			}
			out = append(out, Occurrence{Revision: rs, Payload: p})
		}
		phase := revision.Phase(rs)
		reason, message := revision.StatusReason(rs)
		if phase == v1alpha1.RevisionPhaseRunning || phase == v1alpha1.RevisionPhaseComplete ||
			(phase == v1alpha1.RevisionPhaseFailed && reason != v1alpha1.ReasonCancelled && reason != v1alpha1.ReasonSuperseded) {
			add(v1alpha1.NotifyStarted, nil)
		}
		if step, ok := v1alpha1.StepOf(rs); ok && step.State == v1alpha1.StepPaused {
			add(v1alpha1.NotifyWaiting, func(p *Payload) { p.Step = step.String() })
		} else if w, msg := revision.Waiting(rs); w != "" {
			add(v1alpha1.NotifyWaiting, func(p *Payload) { p.Reason, p.Message = w, msg })
		}
		switch phase {
		case v1alpha1.RevisionPhaseComplete:
			add(v1alpha1.NotifyComplete, nil)
		case v1alpha1.RevisionPhaseFailed:
			outcome := func(p *Payload) {
				p.Reason = reason
				p.Message, p.LogTail = splitLogTail(message)
			}
			add(v1alpha1.NotifyFailed, outcome)
			// The DC's status may name the freeze a moment after the revision failed: the
			// latest revision failing under onFailure: Freeze is frozen, as the controller
			// decides (it never rolls back then).
			frozen := dc.Status.Frozen == rs.Name ||
				(n == dc.Status.LatestVersion && dc.Spec.Strategy.OnFailure == v1alpha1.OnFailureFreeze)
			switch {
			case frozen:
				add(v1alpha1.NotifyFrozen, outcome)
			case reason == v1alpha1.ReasonSuperseded:
				// a newer revision took over: nothing rolled back
			case serving != nil && serving != rs && revisionAfter(rs, serving) && !revision.FailureHookPending(rs):
				add(v1alpha1.NotifyRolledBack, func(p *Payload) {
					outcome(p)
					p.Message = "rolled back to " + serving.Name + ": " + p.Message
				})
			}
		}
		sent := map[v1alpha1.NotifyEvent]bool{}
		for _, f := range failures[rs.Name] {
			if !sent[f.Event] {
				sent[f.Event] = true
				add(f.Event, func(p *Payload) {
					p.Time, p.Step, p.Reason, p.Message, p.LogTail = f.Time, f.Step, f.Reason, f.Message, f.LogTail
				})
			}
		}
	}
	return out
}

// revisionAfter reports whether rs is newer than other.
func revisionAfter(rs, other *appsv1.ReplicaSet) bool {
	a, _ := revision.Number(rs)
	b, _ := revision.Number(other)
	return a > b
}

// splitLogTail splits a failed hook's message into its summary and the log (or output)
// tail that the deployer puts at its end.
func splitLogTail(message string) (summary, tail string) {
	for _, marker := range []string{"; its log ends with:\n", "; its output ends with:\n"} {
		if i := strings.LastIndex(message, marker); i >= 0 {
			return message[:i], message[i+len(marker):]
		}
	}
	return message, ""
}

func images(rs *appsv1.ReplicaSet) []string {
	var out []string
	for _, c := range rs.Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}
