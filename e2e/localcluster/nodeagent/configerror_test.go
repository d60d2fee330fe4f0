package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A container whose env refers to a missing ConfigMap key waits as the kubelet has it:
// Waiting with reason CreateContainerConfigError and the kubelet's message, the pod
// Pending; and it starts once the ConfigMap has the key, without the pod being recreated.
func TestConfigErrorWaitsLikeTheKubeletUntilTheConfigMapHasTheKey(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}})
	a := &Agent{client: client, log: logrus.NewEntry(logrus.New()), cfg: Config{Dir: t.TempDir()}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns", UID: "uid"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "lifecycle", Image: "app:1", // simulated: no command, no mapped image
			Env: []corev1.EnvVar{{Name: "DB", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "missing"}}}},
		}}},
	}
	ctx, cancel := context.WithCancel(t.Context())
	gate := newNodeGate()
	gate.open(ctx)
	w := newPodWorker(a, pod, gate)
	c := w.ctrs[0]
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.runOnce(ctx, c)
	}()
	defer func() { cancel(); <-done }()

	state := func() (corev1.ContainerState, corev1.PodPhase) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return *c.status.State.DeepCopy(), w.phaseLocked()
	}
	require.Eventually(t, func() bool {
		s, _ := state()
		return s.Waiting != nil && s.Waiting.Reason == reasonConfigError
	}, 5*time.Second, 10*time.Millisecond, "the container waits in CreateContainerConfigError")
	s, phase := state()
	assert.Equal(t, "couldn't find key missing in ConfigMap ns/cfg", s.Waiting.Message)
	assert.Equal(t, corev1.PodPending, phase)

	_, err := client.CoreV1().ConfigMaps("ns").Update(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"missing": "now here"}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		s, _ := state()
		return s.Running != nil
	}, 3*configRetryPeriod, 50*time.Millisecond, "the container starts at the next retry")
}
