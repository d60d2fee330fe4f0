package v1alpha1

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// The failure hook (recreateParams.failed, rollingParams.failed) runs once when a
// revision ends Failed, in a run-once pod of the built-in deployer image that the
// controller creates once the revision's deployer pod is gone or finished
// (docs/hooks.md, "The failure hook").
const (
	// FailureHookAnnotation on a Failed revision holds the failure hook's progress,
	// written by the controller: Running, Succeeded, or Failed, TimedOut or NotRun with a
	// message after a colon.
	FailureHookAnnotation = GroupName + "/failure-hook"
	// FailureHookForLabel on the failure-hook runner pod names its revision. The pod also
	// carries DeployerPodForLabel (so that the deployer-pod informer sees it and every
	// selector of application pods leaves it out), but its name is not the deployer pod's.
	FailureHookForLabel = GroupName + "/failure-hook-for"
	// FailureHookStage is the stage of the failure hook: its hook pod and ExecutionHook
	// are <revision>-hook-failed.
	FailureHookStage = "failed"
	// FailureHookFlag runs the deployer binary as the failure-hook runner.
	FailureHookFlag = "--failure-hook"
)

// FailureHookState is the failure hook's progress on its revision.
type FailureHookState string

const (
	FailureHookRunning   FailureHookState = "Running"
	FailureHookSucceeded FailureHookState = "Succeeded"
	FailureHookFailed    FailureHookState = "Failed"
	FailureHookTimedOut  FailureHookState = "TimedOut"
	// FailureHookNotRun: the hook could not run (an exec hook that found no running pod
	// to run in), with the reason after a colon. It is never recorded as Succeeded.
	FailureHookNotRun FailureHookState = "NotRun"
)

// Finished reports whether the failure hook is over: succeeded, failed, timed out or not
// run.
func (s FailureHookState) Finished() bool {
	return s == FailureHookSucceeded || s == FailureHookFailed || s == FailureHookTimedOut || s == FailureHookNotRun
}

// FailureHookRunnerName is the name of a revision's failure-hook runner pod:
// <revision>-failure-hook. It differs from the deployer pod (<revision>-deploy) and from
// the hook pod it starts (<revision>-hook-failed). Like the deployer pod's, it is never
// shortened: a pod name may be up to 253 characters.
func FailureHookRunnerName(revision string) string {
	return revision + "-failure-hook"
}

// FailureHookOf is the failure hook of spec's strategy type, or nil.
func FailureHookOf(spec *DeploymentConfigSpec) *LifecycleHook {
	switch s := spec.Strategy; s.Type {
	case DeploymentStrategyTypeRecreate:
		if s.RecreateParams != nil {
			return s.RecreateParams.Failed
		}
	case DeploymentStrategyTypeRolling, "":
		if s.RollingParams != nil {
			return s.RollingParams.Failed
		}
	}
	return nil
}

// FailedOnSupersede reports whether spec's failure hook also runs for a superseded revision.
func FailedOnSupersede(spec *DeploymentConfigSpec) bool {
	switch s := spec.Strategy; s.Type {
	case DeploymentStrategyTypeRecreate:
		return s.RecreateParams != nil && s.RecreateParams.FailedOnSupersede
	case DeploymentStrategyTypeRolling, "":
		return s.RollingParams != nil && s.RollingParams.FailedOnSupersede
	}
	return false
}

// FailureHookStateOf reads the failure-hook annotation: the state, and the message of a
// Failed, TimedOut or NotRun one. The state is empty when the hook has not started.
func FailureHookStateOf(rs *appsv1.ReplicaSet) (FailureHookState, string) {
	state, msg, _ := strings.Cut(rs.Annotations[FailureHookAnnotation], ": ")
	return FailureHookState(state), msg
}

// FormatFailureHook is the failure-hook annotation's value.
func FormatFailureHook(state FailureHookState, msg string) string {
	if msg == "" {
		return string(state)
	}
	return string(state) + ": " + msg
}
