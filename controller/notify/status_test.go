package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func TestNeedsJudgingRechecksReadyAndNotReadyNotifiersOnTheirOwnClocks(t *testing.T) {
	now := time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)
	n := &v1alpha1.RolloutNotifier{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: v1alpha1.RolloutNotifierStatus{ObservedGeneration: 2}}
	ready := &metav1.Condition{Type: v1alpha1.NotifierConditionReady, Status: metav1.ConditionTrue}
	notReady := &metav1.Condition{Type: v1alpha1.NotifierConditionReady, Status: metav1.ConditionFalse}

	assert.True(t, needsJudging(n, nil, now, now), "no condition yet")
	assert.True(t, needsJudging(n, ready, time.Time{}, now), "not judged by this process")
	changed := n.DeepCopy()
	changed.Generation = 3
	assert.True(t, needsJudging(changed, ready, now, now), "the spec changed")

	assert.False(t, needsJudging(n, ready, now.Add(-time.Minute), now), "a receipt's change reads no Secret")
	assert.True(t, needsJudging(n, ready, now.Add(-readyRecheck), now), "a Ready notifier is checked again: a Secret may go")
	assert.False(t, needsJudging(n, notReady, now.Add(-10*time.Second), now))
	assert.True(t, needsJudging(n, notReady, now.Add(-notReadyRecheck), now), "a Secret may have come")
}
