package deferrun

import (
	"context"
	"encoding/json"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

var deferNow = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(deferNow.Add(d)); return &t }

// deferredPod is a pod of ns with the run recorded (nil: none), Terminating with the
// finalizer when terminating.
func deferredPod(name string, run *v1alpha1.DeferRun, terminating bool) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "shop", UID: types.UID(name + "-uid"), ResourceVersion: "7",
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{},
	}}
	if run != nil {
		pod.Annotations[v1alpha1.DeferRunAnnotation] = run.Encode()
		pod.Annotations[v1alpha1.DeferProgressAnnotation] = run.Progress()
	}
	if terminating {
		pod.DeletionTimestamp = at(-time.Minute)
		pod.Finalizers = []string{"example.com/other", v1alpha1.DeferFinalizer}
	}
	return pod
}

// stepPod is attempt 1 of step i (from 1) for pod, in phase, with exit code when it ended.
func stepPod(pod *corev1.Pod, i int, phase corev1.PodPhase, exit int32) *corev1.Pod {
	sp := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name + "-defer-" + string(pod.UID)[:3] + "-" + string(rune('0'+i)) + "-1", Namespace: pod.Namespace,
			UID:               types.UID(pod.Name + "-step"),
			CreationTimestamp: metav1.NewTime(deferNow.Add(time.Duration(i) * time.Second)),
			Labels: map[string]string{
				v1alpha1.DeferStepOfLabel: string(pod.UID), v1alpha1.DeferStepLabel: string(rune('0' + i)),
				v1alpha1.DeferPolicyLabel: "web-cleanup",
			},
			Annotations: map[string]string{v1alpha1.DeferStepForAnnotation: pod.Name},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
	if phase != corev1.PodRunning {
		sp.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: v1alpha1.DeferStepContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}}}
	}
	return sp
}

func webCleanup() *v1alpha1.DeferPolicy {
	return &v1alpha1.DeferPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web-cleanup", Namespace: "shop"},
		Spec:       v1alpha1.DeferPolicySpec{Steps: []v1alpha1.DeferStep{{Name: "flush"}, {Name: "upload"}}},
	}
}

func running(current, attempt int) *v1alpha1.DeferRun {
	return &v1alpha1.DeferRun{Policy: "web-cleanup", When: v1alpha1.DeferAfterTermination, Steps: 2,
		Started: at(-30 * time.Second), Deadline: at(270 * time.Second), Current: current, Attempt: attempt}
}

func newDeferClient(kube *kubefake.Clientset, policies ...runtime.Object) *Client {
	return &Client{Kube: kube, Stagehand: stagehandfake.NewSimpleClientset(policies...), Now: func() time.Time { return deferNow }}
}

// printStatus writes what defer status prints: the report as tables, or its data as JSON.
func printStatus(ctx context.Context, d *Client, out io.Writer, ns, pod string, all bool, output string) error {
	report, err := d.Status(ctx, ns, pod, all)
	if err != nil {
		return err
	}
	if output == "json" {
		return json.NewEncoder(out).Encode(report.Data())
	}
	report.Print(out)
	return nil
}
