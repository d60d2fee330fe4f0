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
	if seconds <= 0 {
		seconds = v1alpha1.DefaultTimeoutSeconds
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
