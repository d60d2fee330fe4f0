package deferstep

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The pod the tests build steps for.
const (
	podName = "db-0"
	podUID  = "0123abcd-4567-89ef-aaaa-bbbbccccdddd"
	nodeA   = "node-a"
)

// runningPod is db-0 of namespace ns on node-a, labelled app=db and tier=data, with one
// container.
func runningPod() *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = podName, "ns", podUID
	pod.Labels = map[string]string{"tier": "data", "app": "db"}
	pod.Spec.NodeName = nodeA
	pod.Spec.Containers = []corev1.Container{{Name: "db", Image: "postgres"}}
	pod.Status.Phase = corev1.PodRunning
	return pod
}

// policy is a DeferPolicy of namespace ns selecting app=<app>, with one busybox step per
// name that runs `sh -c <name>`.
func policy(name string, when v1alpha1.DeferWhen, app string, steps ...string) *v1alpha1.DeferPolicy {
	p := &v1alpha1.DeferPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	p.Spec.Selector = metav1.SetAsLabelSelector(map[string]string{"app": app})
	p.Spec.When, p.Spec.GracePeriodSeconds = when, ptr.To[int64](60)
	for _, s := range steps {
		p.Spec.Steps = append(p.Spec.Steps, v1alpha1.DeferStep{Name: s, Image: "busybox", Command: []string{"sh", "-c", s}})
	}
	return p
}
