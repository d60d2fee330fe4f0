package revision

import (
	"time"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Timeout is how long one step of the strategy may go without progress: the
// timeoutSeconds of recreateParams or rollingParams (v1alpha1.StrategyTimeoutSeconds),
// and the default for a Custom strategy, which has no timeoutSeconds of its own, so that
// the SDK's waits in a custom flow are bounded too.
func Timeout(s *v1alpha1.DeploymentStrategy) time.Duration {
	seconds := v1alpha1.StrategyTimeoutSeconds(s)
	return TimeoutFrom(&seconds)
}

// TimeoutFrom is Timeout for a strategy that holds its params: timeoutSeconds, or
// v1alpha1.DefaultTimeoutSeconds when it is unset or not above 0. The CRD admits only 1
// and up (Minimum=1) and defaults it to 600, so the default matters only for params
// built in code, such as a custom strategy's or a test's.
func TimeoutFrom(timeoutSeconds *int64) time.Duration {
	seconds := v1alpha1.DefaultTimeoutSeconds
	if timeoutSeconds != nil && *timeoutSeconds > 0 {
		seconds = *timeoutSeconds
	}
	return time.Duration(seconds) * time.Second
}

// ActiveDeadline bounds the whole rollout, hooks included: the strategy's
// activeDeadlineSeconds, or its default.
func ActiveDeadline(s *v1alpha1.DeploymentStrategy) time.Duration {
	seconds := v1alpha1.DefaultActiveDeadlineSeconds
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds > 0 {
		seconds = *s.ActiveDeadlineSeconds
	}
	return time.Duration(seconds) * time.Second
}
