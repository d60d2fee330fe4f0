package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A deletion that the apiserver fails (it restarts) is asked again until it goes through:
// the worker ends after deletePod, so a deletion given up would leave the pod Terminating.
func TestDeletePodAsksAgainUntilTheApiserverAnswers(t *testing.T) {
	old := deleteRetryInterval
	deleteRetryInterval = 10 * time.Millisecond
	t.Cleanup(func() { deleteRetryInterval = old })

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "uid"}}
	client := fake.NewClientset(pod)
	failures := 3
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewServiceUnavailable("the apiserver is shutting down")
	})
	a := &Agent{client: client, log: logrus.NewEntry(logrus.New()), cfg: Config{Dir: t.TempDir()}}
	w := newPodWorker(a, pod, newNodeGate())

	require.True(t, w.deletePod(t.Context()))
	assert.Equal(t, 0, failures, "every failed deletion was asked again")
	_, err := client.CoreV1().Pods("ns").Get(t.Context(), "app", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the pod object is gone: %v", err)

	// A node that stops (its context ends) ends the retries; the pod is deleted when it runs again.
	failures = 1 << 30
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	assert.False(t, w.deletePod(ctx))
}
