package revision

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Timeout and TimeoutFrom give one meaning to timeoutSeconds: unset, 0 or below (which
// admission refuses) is the default; any other value is taken as it is.
func TestTimeoutFrom(t *testing.T) {
	seconds := func(n int64) *int64 { return &n }
	def := time.Duration(v1alpha1.DefaultTimeoutSeconds) * time.Second
	for _, tt := range []struct {
		name string
		in   *int64
		want time.Duration
	}{
		{name: "unset", in: nil, want: def},
		{name: "zero", in: seconds(0), want: def},
		{name: "negative", in: seconds(-5), want: def},
		{name: "one", in: seconds(1), want: time.Second},
		{name: "set", in: seconds(42), want: 42 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, TimeoutFrom(tt.in))
			recreate := &v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate,
				RecreateParams: &v1alpha1.RecreateDeploymentStrategyParams{TimeoutSeconds: tt.in}}
			rolling := &v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRolling,
				RollingParams: &v1alpha1.RollingDeploymentStrategyParams{TimeoutSeconds: tt.in}}
			assert.Equal(t, tt.want, Timeout(recreate), "the controller's deadline and the strategy's wait agree")
			assert.Equal(t, tt.want, Timeout(rolling))
		})
	}
}
