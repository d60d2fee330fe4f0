package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeferRunOfRefusesARecordThatDoesNotHoldTogether(t *testing.T) {
	now := metav1.Now()
	good := &DeferRun{Policy: "p", Steps: 3, Current: 3, Started: &now, Deadline: &now}
	pod := &metav1.ObjectMeta{Annotations: map[string]string{DeferRunAnnotation: good.Encode()}}
	run, err := DeferRunOf(pod)
	require.NoError(t, err)
	assert.Equal(t, "3/3", run.Progress())

	for name, raw := range map[string]string{
		"not JSON":             "{",
		"current past the end": `{"steps":2,"current":3}`,
		"negative current":     `{"steps":2,"current":-1}`,
		"too many steps":       `{"steps":17,"current":0}`,
		"started, no deadline": `{"steps":2,"current":0,"started":"2026-01-01T00:00:00Z"}`,
		"negative attempt":     `{"steps":2,"current":0,"attempt":-1}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DeferRunOf(&metav1.ObjectMeta{Annotations: map[string]string{DeferRunAnnotation: raw}})
			assert.Error(t, err)
		})
	}
	none, err := DeferRunOf(&metav1.ObjectMeta{})
	assert.NoError(t, err)
	assert.Nil(t, none)
}
