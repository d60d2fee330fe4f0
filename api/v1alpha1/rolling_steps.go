package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// The annotations of a revision that rolls out with rollingParams.steps. The deployer
// writes StepAnnotation; kubectl stagehand rollout resume writes ResumeStepAnnotation and
// rollout promote PromoteAnnotation, which the deployer watches for.
const (
	// StepAnnotation holds the step the rollout is at: a StepStatus as JSON. A restarted
	// deployer resumes at that step, never at step 1.
	StepAnnotation = GroupName + "/step"
	// ResumeStepAnnotation holds the number of the last step that rollout resume let go
	// on: a pause without a duration at that step, or before it, ends.
	ResumeStepAnnotation = GroupName + "/resume-step"
	// PromoteAnnotation, "true", skips the remaining steps: the rollout completes to 100%.
	PromoteAnnotation = GroupName + "/promote"
)

// StepState is what the step the rollout is at is doing.
type StepState string

const (
	// StepRunning: a setReplicas step scales, or a hook step's hook runs.
	StepRunning StepState = "Running"
	// StepPaused: a pause step waits, for its duration or for rollout resume.
	StepPaused StepState = "Paused"
	// StepsDone: every step has run; the rollout completes to 100%.
	StepsDone StepState = "Done"
	// StepsPromoted: rollout promote skipped the remaining steps.
	StepsPromoted StepState = "Promoted"
)

// StepStatus is the value of the step annotation.
// +k8s:deepcopy-gen=false
type StepStatus struct {
	// Step is the number of the step, from 1; Total the number of steps.
	Step  int `json:"step"`
	Total int `json:"total"`
	// Name is the step's name (step-N when it has none).
	Name string `json:"name"`
	// Action says what the step does: "setReplicas 20% (2 of 10)", "pause",
	// "hook verify-green".
	Action string `json:"action"`
	// State is Running, Paused, Done or Promoted.
	State StepState `json:"state"`
	// Until is when a pause with a duration ends; nil for a pause until resumed.
	Until *time.Time `json:"until,omitempty"`
}

// String is the step as rollout status and get show it: "step 3/7: paused until
// resumed", "step 5/7: hook verify-green running".
func (s StepStatus) String() string {
	prefix := fmt.Sprintf("step %d/%d: ", s.Step, s.Total)
	switch s.State {
	case StepsDone:
		return fmt.Sprintf("steps %d/%d done: completing to 100%%", s.Total, s.Total)
	case StepsPromoted:
		return fmt.Sprintf("promoted at step %d/%d: completing to 100%%", s.Step, s.Total)
	case StepPaused:
		if s.Until != nil {
			return prefix + "paused until " + s.Until.UTC().Format(time.RFC3339)
		}
		return prefix + "paused until resumed (kubectl stagehand rollout resume, or rollout promote)"
	}
	return prefix + s.Action + " running"
}

// StepName is the name of step number n (from 1): its own, or step-N.
func StepName(step RollingStep, n int) string {
	if step.Name != "" {
		return step.Name
	}
	return "step-" + strconv.Itoa(n)
}

// StepStage is the hook stage of step number n: hook pods and ExecutionHooks are
// <revision>-hook-step-N, whatever the step's name, so no name can collide with the pre,
// mid, post or failed stage.
func StepStage(n int) string { return "step-" + strconv.Itoa(n) }

// StepOf reads the step annotation of a revision. ok is false when there is none or it
// does not parse.
func StepOf(rs *appsv1.ReplicaSet) (StepStatus, bool) {
	raw, found := rs.Annotations[StepAnnotation]
	if !found {
		return StepStatus{}, false
	}
	var s StepStatus
	if err := json.Unmarshal([]byte(raw), &s); err != nil || s.Step < 1 {
		return StepStatus{}, false
	}
	return s, true
}

// FormatStep is the step annotation's value for s.
func FormatStep(s StepStatus) string {
	raw, _ := json.Marshal(s) // a struct of strings, ints and a time: never fails
	return string(raw)
}

// ResumedStep is the number of the last step that rollout resume let go on, 0 for none.
func ResumedStep(rs *appsv1.ReplicaSet) int {
	n, err := strconv.Atoi(rs.Annotations[ResumeStepAnnotation])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Promoted reports whether rollout promote asked the revision to skip its remaining steps.
func Promoted(rs *appsv1.ReplicaSet) bool {
	return rs.Annotations[PromoteAnnotation] == "true"
}

// ClearSteps removes the step, resume-step and promote annotations: a retried revision
// runs its steps again from step 1.
func ClearSteps(annotations map[string]string) {
	delete(annotations, StepAnnotation)
	delete(annotations, ResumeStepAnnotation)
	delete(annotations, PromoteAnnotation)
}
