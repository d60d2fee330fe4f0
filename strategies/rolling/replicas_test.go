package rolling

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestFenceposts(t *testing.T) {
	str := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	tests := []struct {
		name            string
		surge, unavail  *intstr.IntOrString
		desired         int32
		wantSurge       int32
		wantUnavailable int32
		wantErr         bool
	}{
		{name: "defaults of 25% on 4", surge: str("25%"), unavail: str("25%"), desired: 4, wantSurge: 1, wantUnavailable: 1},
		{name: "surge rounds up, unavailable rounds down", surge: str("25%"), unavail: str("25%"), desired: 3, wantSurge: 1, wantUnavailable: 0},
		{name: "25% of 10", surge: str("25%"), unavail: str("25%"), desired: 10, wantSurge: 3, wantUnavailable: 2},
		{name: "integers are taken as they are", surge: num(2), unavail: num(1), desired: 4, wantSurge: 2, wantUnavailable: 1},
		{name: "both zero makes unavailable 1", surge: num(0), unavail: num(0), desired: 4, wantSurge: 0, wantUnavailable: 1},
		{name: "both percentages resolve to zero", surge: str("0%"), unavail: str("10%"), desired: 4, wantSurge: 0, wantUnavailable: 1},
		{name: "unavailable is capped at desired", surge: num(0), unavail: num(10), desired: 3, wantSurge: 0, wantUnavailable: 3},
		{name: "nil values are zero", desired: 4, wantSurge: 0, wantUnavailable: 1},
		{name: "zero desired", surge: str("25%"), unavail: str("25%"), desired: 0, wantSurge: 0, wantUnavailable: 0},
		{name: "100% surge", surge: str("100%"), unavail: num(0), desired: 5, wantSurge: 5, wantUnavailable: 0},
		{name: "invalid percentage", surge: str("lots"), unavail: num(1), desired: 4, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			surge, unavailable, err := Fenceposts(tt.surge, tt.unavail, tt.desired)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantSurge, surge, "surge")
			assert.Equal(t, tt.wantUnavailable, unavailable, "unavailable")
		})
	}
}

func TestScaleUpTarget(t *testing.T) {
	tests := []struct {
		name  string
		state State
		want  int32
	}{
		{name: "first step uses the surge", state: State{Desired: 4, MaxSurge: 1, OldReplicas: 4}, want: 1},
		{name: "no surge waits for old to go down", state: State{Desired: 4, MaxSurge: 0, MaxUnavailable: 1, OldReplicas: 4}, want: 0},
		{name: "after old went down by one", state: State{Desired: 4, MaxSurge: 1, OldReplicas: 3, NewReplicas: 1}, want: 2},
		{name: "never above desired", state: State{Desired: 4, MaxSurge: 3, OldReplicas: 0, NewReplicas: 2}, want: 4},
		{name: "never below the current replicas", state: State{Desired: 4, MaxSurge: 1, OldReplicas: 4, NewReplicas: 2}, want: 2},
		{name: "large surge scales to desired at once", state: State{Desired: 4, MaxSurge: 4, OldReplicas: 4}, want: 4},
		{name: "already done", state: State{Desired: 4, MaxSurge: 1, NewReplicas: 4}, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ScaleUpTarget(tt.state))
		})
	}
}

func TestScaleDownTarget(t *testing.T) {
	tests := []struct {
		name  string
		state State
		want  int32
	}{
		{name: "nothing new available: only maxUnavailable may go", state: State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 4, OldAvailable: 4, NewReplicas: 1}, want: 3},
		{name: "one new available frees one more", state: State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 3, OldAvailable: 3, NewReplicas: 2, NewAvailable: 1}, want: 2},
		{name: "nothing to spare", state: State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 3, OldAvailable: 3, NewReplicas: 2}, want: 3},
		{name: "unavailable old replicas go first", state: State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 4, OldAvailable: 1, NewReplicas: 1}, want: 1},
		{name: "pods above the old replicas do not count", state: State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 3, OldAvailable: 4, NewReplicas: 2}, want: 3},
		{name: "new pods above their replicas do not count", state: State{Desired: 4, MaxUnavailable: 1, OldReplicas: 3, OldAvailable: 3, NewReplicas: 1, NewAvailable: 3}, want: 2},
		{name: "all new available removes every old", state: State{Desired: 4, MaxSurge: 1, MaxUnavailable: 1, OldReplicas: 2, OldAvailable: 2, NewReplicas: 4, NewAvailable: 4}, want: 0},
		{name: "zero unavailable keeps desired", state: State{Desired: 4, MaxSurge: 1, OldReplicas: 4, OldAvailable: 4, NewReplicas: 1, NewAvailable: 1}, want: 3},
		{name: "old already at zero", state: State{Desired: 4, MaxUnavailable: 1, NewReplicas: 4, NewAvailable: 2}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ScaleDownTarget(tt.state)
			assert.Equal(t, tt.want, got)
			// The invariant: whatever the ReplicaSet controller removes first, the available
			// pods left are at least desired − maxUnavailable, unless they were fewer before.
			before := min(tt.state.OldAvailable, tt.state.OldReplicas) + min(tt.state.NewAvailable, tt.state.NewReplicas)
			after := min(min(tt.state.OldAvailable, tt.state.OldReplicas), got) + min(tt.state.NewAvailable, tt.state.NewReplicas)
			assert.GreaterOrEqual(t, after, min(before, tt.state.Desired-tt.state.MaxUnavailable))
		})
	}
}

func TestDone(t *testing.T) {
	assert.True(t, Done(State{Desired: 4, NewReplicas: 4, NewAvailable: 4}))
	assert.False(t, Done(State{Desired: 4, NewReplicas: 4, NewAvailable: 4, OldReplicas: 1}))
	assert.False(t, Done(State{Desired: 4, NewReplicas: 4, NewAvailable: 3}))
	assert.True(t, Done(State{Desired: 0}))
}
