//go:build e2e

package e2e

// The trap that issue 39's rollback must get out of, reproduced on a plain StatefulSet
// (kubernetes/kubernetes#67250): after a template whose pods never become Ready is
// reverted, the StatefulSet controller (OrderedReady, RollingUpdate) waits for the
// broken pod to become Ready before it does anything else, so the pod that was updated
// to the bad revision is never replaced by one on the restored template. docs/statefulsets.md
// says how a StatefulSet DeploymentConfig's rollback gets out of it; this test proves
// that the local cluster runs StatefulSets with claims, and that the trap is real there.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// stuckWindow is how long the test watches the reverted StatefulSet stay stuck. The
// StatefulSet controller syncs on every event of its pods, and the broken pod's failing
// readiness probe changes nothing, so the controller has had every chance to act well
// before this: it replaces a pod within a second of deciding to.
const stuckWindow = 20 * time.Second

func TestStatefulSetPlainStaysStuckAfterABadTemplateIsReverted(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	for i := range 3 {
		createHostPathVolume(t, ns, fmt.Sprintf("/stagehand-test/%s/data-%d", ns, i))
	}
	plainStaysStuck(t, ns, "db")
}

// plainStaysStuck runs the sequence of kubernetes#67250 on a plain StatefulSet name in ns,
// whose 3 claims bind to hostPath volumes labelled volume=<ns> that the caller made, and
// checks that it stays stuck.
func plainStaysStuck(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	sets := env.Kube.AppsV1().StatefulSets(ns)
	last := name + "-2"

	// Given a 3-replica StatefulSet with a claim per pod, all Ready on revision 1
	sts, err := sets.Create(ctx, plainStatefulSet(name, ns), metav1.CreateOptions{})
	require.NoError(t, err)
	good := waitForStatefulSet(t, ns, name, "3 Ready pods on revision 1", func(s *appsv1.StatefulSet) bool {
		return s.Status.ReadyReplicas == 3 && s.Status.UpdatedReplicas == 3 && s.Status.CurrentRevision == s.Status.UpdateRevision
	})
	claims := claimUIDs(t, ns)

	// When revision 2's pods never become Ready, the controller updates the last ordinal and waits
	updateStatefulSet(t, ns, name, func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "exit 1"}}},
			PeriodSeconds: 1,
		}
	})
	bad := waitForStatefulSet(t, ns, name, "ordinal 2 on the bad revision", func(s *appsv1.StatefulSet) bool {
		return s.Status.UpdateRevision != good.Status.CurrentRevision && s.Status.UpdatedReplicas == 1
	})
	env.WaitForPod(t, ns, last, podTimeout, last+" running on the bad revision, not Ready", func(p *corev1.Pod) bool {
		return p != nil && p.Labels[appsv1.ControllerRevisionHashLabelKey] == bad.Status.UpdateRevision &&
			p.Status.Phase == corev1.PodRunning && !framework.PodReady(p)
	})

	// And the template is reverted to revision 1's, which the controller observes
	updateStatefulSet(t, ns, name, func(s *appsv1.StatefulSet) { s.Spec.Template = sts.Spec.Template })
	waitForStatefulSet(t, ns, name, "the revert observed", func(s *appsv1.StatefulSet) bool {
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision == good.Status.CurrentRevision
	})

	// Then the last pod stays on the bad revision, not Ready, and is never replaced
	stuck := env.WaitForPod(t, ns, last, podTimeout, last+" present", func(p *corev1.Pod) bool { return p != nil })
	deadline := time.Now().Add(stuckWindow)
	for time.Now().Before(deadline) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, last, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, stuck.UID, p.UID, "the StatefulSet controller replaced %s: kubernetes#67250 no longer reproduces here", last)
		require.Equal(t, bad.Status.UpdateRevision, p.Labels[appsv1.ControllerRevisionHashLabelKey])
		require.False(t, framework.PodReady(p), "%s became Ready on the bad revision", last)
		time.Sleep(time.Second)
	}
	// And the claims were never touched
	assert.Equal(t, claims, claimUIDs(t, ns))
}

// plainStatefulSet is a StatefulSet of the test app with a claim template "data" that binds
// to the hostPath volumes labelled volume=<ns>.
func plainStatefulSet(name, ns string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](3),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "app", Image: images.TestApp,
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(""),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Selector:         &metav1.LabelSelector{MatchLabels: map[string]string{"volume": ns}},
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
				},
			}},
		},
	}
}

// updateStatefulSet changes the StatefulSet with mutate, again on a conflict.
func updateStatefulSet(t *testing.T, ns, name string, mutate func(*appsv1.StatefulSet)) {
	t.Helper()
	sets := env.Kube.AppsV1().StatefulSets(ns)
	require.Eventually(t, func() bool {
		s, err := sets.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		mutate(s)
		_, err = sets.Update(context.Background(), s, metav1.UpdateOptions{})
		return err == nil
	}, podTimeout, 200*time.Millisecond, "updating StatefulSet %s", name)
}

// waitForStatefulSet polls until cond holds for the StatefulSet, and returns it.
func waitForStatefulSet(t *testing.T, ns, name, what string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var last *appsv1.StatefulSet
	require.Eventually(t, func() bool {
		s, err := env.Kube.AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = s
		return cond(s)
	}, 2*podTimeout, 200*time.Millisecond, "StatefulSet %s: %s", name, what)
	return last
}

// claimUIDs maps the namespace's bound claims to their UIDs.
func claimUIDs(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	uids := map[string]string{}
	for _, c := range list.Items {
		if c.Status.Phase == corev1.ClaimBound {
			uids[c.Name] = string(c.UID)
		}
	}
	return uids
}
