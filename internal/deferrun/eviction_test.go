package deferrun

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lifecyclev1alpha1 "k8s.io/api/lifecycle/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func evictionRequest(name string, pod *corev1.Pod, conds ...metav1.Condition) *lifecyclev1alpha1.EvictionRequest {
	return &lifecyclev1alpha1.EvictionRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace},
		Spec: lifecyclev1alpha1.EvictionRequestSpec{Requester: "drain.example/x", Intent: lifecyclev1alpha1.EvictionRequestIntentEviction,
			Target: lifecyclev1alpha1.EvictionRequestTarget{Pod: &lifecyclev1alpha1.EvictionRequestPodReference{Name: pod.Name, UID: pod.UID}}},
		Status: lifecyclev1alpha1.EvictionRequestStatus{Conditions: conds},
	}
}

// A pod in its BeforeEviction run shows the requests to evict it and what Stagehand
// says on them; another pod's request is not shown.
func TestDeferStatusOfOnePodShowsItsEvictionRequests(t *testing.T) {
	run := &v1alpha1.DeferRun{Policy: "web-cleanup", When: v1alpha1.DeferBeforeEviction, Steps: 2,
		Started: at(-30e9), Deadline: at(270e9), Current: 0, Attempt: 1}
	pod := deferredPod("web-1", run, false)
	pod.Spec.EvictionResponders = []corev1.EvictionResponder{{Name: v1alpha1.EvictionResponderName}}
	other := deferredPod("web-2", nil, false)
	kube := kubefake.NewClientset(pod, stepPod(pod, 1, corev1.PodRunning, 0),
		evictionRequest("drain-web-1", pod, metav1.Condition{Type: v1alpha1.EvictionRequestConditionDeferSteps, Status: metav1.ConditionFalse,
			Reason: "Running", Message: "DeferPolicy web-cleanup: step 1/2 running; last heartbeat 2026-03-04T09:59:40Z"}),
		evictionRequest("drain-web-2", other))
	var out bytes.Buffer
	require.NoError(t, printStatus(context.Background(), newDeferClient(kube, webCleanup()), &out, "shop", "web-1", false, ""))
	assert.Equal(t, strings.Join([]string{
		"POD     POLICY        WHEN             PROGRESS   STEP    STATE                      DEADLINE",
		"web-1   web-cleanup   BeforeEviction   0/2        flush   Running step 1 attempt 1   in 4m30s",
		"",
		"EVICTION REQUEST   REQUESTER         INTENT     STEPS     MESSAGE",
		"drain-web-1        drain.example/x   Eviction   Running   DeferPolicy web-cleanup: step 1/2 running; last heartbeat 2026-03-04T09:59:40Z",
		"",
		"STEP POD              STEP        PHASE     EXIT CODE",
		"web-1-defer-web-1-1   1 (flush)   Running   -",
		"",
	}, "\n"), out.String())
}
