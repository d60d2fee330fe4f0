package v1alpha1

import "encoding/json"

// The deployer-pod contract (docs/deployer-contract.md). It is public: custom strategy
// images depend on every name and number here, so they change only with a new API version.
const (
	// DeployerContainerName is the name of the deployer pod's only container.
	DeployerContainerName = "deployer"
	// DeployerServiceAccountName is the service account of deployer pods, ensured by the
	// controller in every namespace that has a DeploymentConfig.
	DeployerServiceAccountName = "stagehand-deployer"
	// DeployerClusterRoleName is the shipped ClusterRole that the per-namespace RoleBinding
	// of the deployer service account refers to.
	DeployerClusterRoleName = "stagehand-deployer"
	// DefaultTerminationMessagePath is where the deployer writes its TerminationMessage.
	DefaultTerminationMessagePath = "/dev/termination-log"
)

// Environment of the deployer container.
const (
	// EnvRevision holds the name of the revision's ReplicaSet, e.g. web-3.
	EnvRevision = "STAGEHAND_REVISION"
	// EnvNamespace holds the namespace of the revision.
	EnvNamespace = "STAGEHAND_NAMESPACE"
	// EnvOpenShiftDeploymentName is EnvRevision under OpenShift's name, so that existing
	// OpenShift custom strategy images run unchanged.
	EnvOpenShiftDeploymentName = "OPENSHIFT_DEPLOYMENT_NAME"
	// EnvOpenShiftDeploymentNamespace is EnvNamespace under OpenShift's name.
	EnvOpenShiftDeploymentNamespace = "OPENSHIFT_DEPLOYMENT_NAMESPACE"
)

// DeployerExitCode is the deployer's exit code; the controller maps it to the revision.
type DeployerExitCode int

const (
	// ExitComplete: the rollout completed.
	ExitComplete DeployerExitCode = 0
	// ExitFailed: the rollout failed for any reason the other codes do not name.
	ExitFailed DeployerExitCode = 1
	// ExitInvalid: the inputs or the configuration are invalid.
	ExitInvalid DeployerExitCode = 2
	// ExitHookAborted: a hook with failure policy Abort (or an exhausted Retry) failed.
	ExitHookAborted DeployerExitCode = 3
	// ExitTimedOut: no progress within the strategy's timeoutSeconds.
	ExitTimedOut DeployerExitCode = 4
	// ExitCancelled: the rollout was cancelled or superseded (SIGTERM).
	ExitCancelled DeployerExitCode = 5
)

// TerminationMessage is what the deployer writes to its termination-message file before it
// exits. The controller copies it into the revision's status-reason annotation, the
// DeploymentConfig's Progressing condition and an event.
type TerminationMessage struct {
	// Reason is a short UpperCamelCase reason, e.g. HookFailed.
	Reason string `json:"reason"`
	// Message says what failed and what to do.
	Message string `json:"message"`
	// Hooks are the lifecycle hooks that this run of the deployer finished, at most
	// MaxReportedHooks, for the controller's stagehand_hooks_total metric. A hook that an
	// earlier run finished (a retry, a run after --until) is not in it again.
	Hooks []HookOutcome `json:"hooks,omitempty"`
}

// MaxReportedHooks bounds TerminationMessage.Hooks, so that the message stays under the
// kubelet's 4 KiB: a pre and a post hook and 16 rolling steps' hooks fit.
const MaxReportedHooks = 24

// HookOutcome is how one lifecycle hook of a deployer run ended.
type HookOutcome struct {
	// Stage is the hook's stage: pre, mid, post, step-N or a custom flow's stage name.
	Stage string `json:"stage"`
	// Result is how the hook ended, after its retries.
	Result HookResult `json:"result"`
	// Seconds is the time from its first attempt's start to its end, retries included.
	Seconds float64 `json:"seconds"`
}

// HookResult is how a lifecycle hook ended.
type HookResult string

const (
	// HookResultSucceeded: an attempt succeeded.
	HookResultSucceeded HookResult = "Succeeded"
	// HookResultFailed: the hook failed and stopped the rollout (Abort, or Retry out of
	// attempts or time); for the failure hook, it failed or could not run.
	HookResultFailed HookResult = "Failed"
	// HookResultIgnored: the hook failed and its failurePolicy Ignore let the rollout go on.
	HookResultIgnored HookResult = "Ignored"
	// HookResultTimedOut: the failure hook ran past its bound and was stopped by the
	// controller.
	HookResultTimedOut HookResult = "TimedOut"
	// HookResultNotRun: the hook could not run (an exec hook that found no running pod);
	// never counted as Succeeded.
	HookResultNotRun HookResult = "NotRun"
)

// Encode renders the message as the JSON the controller reads.
func (m TerminationMessage) Encode() string {
	data, _ := json.Marshal(m) // strings, a float and a slice of them cannot fail to marshal
	return string(data)
}

// Reasons of a revision's outcome, in termination messages, the status-reason annotation
// and the Progressing condition.
const (
	ReasonCompleted     = "Completed"
	ReasonFailed        = "Failed"
	ReasonInvalidConfig = "InvalidConfig"
	ReasonHookFailed    = "HookFailed"
	// ReasonHookNotRun: the failure-hook runner's hook could not run (no running pod for
	// its exec hook); the controller records the failure hook NotRun.
	ReasonHookNotRun          = "HookNotRun"
	ReasonTimedOut            = "TimedOut"
	ReasonCancelled           = "Cancelled"
	ReasonSuperseded          = "Superseded"
	ReasonDeadlineExceeded    = "DeadlineExceeded"
	ReasonDeployerPodGone     = "DeployerPodGone"
	ReasonDeployerPodNotAdmit = "DeployerPodCreateFailed"
	// ReasonDeployerPodWaiting: the apiserver refused the deployer pod for a reason that
	// time can fix (an exceeded quota); the revision stays New and the controller retries
	// until the strategy's timeout. A waiting reason, never an outcome.
	ReasonDeployerPodWaiting = "DeployerPodWaiting"
	// ReasonDeployerPodNameTaken: a pod that is not Stagehand's holds the deployer pod's
	// name; Stagehand never adopts, reads or deletes it.
	ReasonDeployerPodNameTaken = "DeployerPodNameTaken"
	// ReasonEndedWithoutRollout: the deployer exited 0 but the revision does not have its
	// desired replicas available, so it is not Complete (DESIGN.md §4 invariant 6).
	ReasonEndedWithoutRollout = "StrategyEndedWithoutRollout"
	// ReasonRevisionCreateFailed: the apiserver refused the revision's ReplicaSet.
	ReasonRevisionCreateFailed = "RevisionCreateFailed"
	// ReasonDeployerNodeNotReady: the deployer pod's node is not Ready, so nothing says
	// whether the deployer still runs. A waiting reason, never an outcome: the node may come
	// back, and no second deployer starts while the first may still run.
	ReasonDeployerNodeNotReady = "DeployerNodeNotReady"
	// ReasonDeployerNodeLost: the deployer pod's node was deleted, or the pod went away
	// while its node was not Ready. The revision fails, and the automatic rollback follows.
	ReasonDeployerNodeLost = "DeployerNodeLost"
)
