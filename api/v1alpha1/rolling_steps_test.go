package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStepStatusString(t *testing.T) {
	until := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	tests := []struct {
		s    StepStatus
		want string
	}{
		{StepStatus{Step: 3, Total: 7, State: StepPaused}, "step 3/7: paused until resumed (kubectl stagehand rollout resume, or rollout promote)"},
		{StepStatus{Step: 3, Total: 7, State: StepPaused, Until: &until}, "step 3/7: paused until 2026-11-27T01:02:03Z"},
		{StepStatus{Step: 5, Total: 7, State: StepRunning, Action: "hook verify-green"}, "step 5/7: hook verify-green running"},
		{StepStatus{Step: 7, Total: 7, State: StepsDone}, "steps 7/7 done: completing to 100%"},
		{StepStatus{Step: 2, Total: 5, State: StepsPromoted}, "promoted at step 2/5: completing to 100%"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.s.String())
	}
}

func TestStepAnnotations(t *testing.T) {
	s := StepStatus{Step: 2, Total: 5, Name: "canary", Action: "setReplicas 20% (2 of 10)", State: StepRunning}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		StepAnnotation: FormatStep(s), ResumeStepAnnotation: "1", PromoteAnnotation: "true",
	}}}
	got, ok := StepOf(rs)
	assert.True(t, ok)
	assert.Equal(t, s, got)
	assert.Equal(t, 1, ResumedStep(rs))
	assert.True(t, Promoted(rs))

	ClearSteps(rs.Annotations)
	_, ok = StepOf(rs)
	assert.False(t, ok)
	assert.Equal(t, 0, ResumedStep(rs))
	assert.False(t, Promoted(rs))

	rs.Annotations[StepAnnotation] = "not json"
	_, ok = StepOf(rs)
	assert.False(t, ok, "a step annotation that does not parse is no step")
	assert.Equal(t, "step-4", StepName(RollingStep{}, 4))
	assert.Equal(t, "verify", StepName(RollingStep{Name: "verify"}, 4))
	assert.Equal(t, "step-4", StepStage(4))
}
