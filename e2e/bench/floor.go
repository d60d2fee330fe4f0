package main

// The third side of the many part's first rollouts: bare run-once pods shaped like deployer
// pods, with nothing to deploy. A DC rollout runs one deployer pod that a Deployment does
// not, so the cost of one such pod's life on this machine is the floor the DC side cannot
// go below (floorreport.go turns it into figures).

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// The bare pods' labels: as many as a deployer pod's, under keys of the bench's own, so that
// the controller's deployer-pod informer (which selects stagehand.dev/deployer-pod-for)
// never sees them.
const (
	floorConfigLabel   = "bench.stagehand.dev/config"
	floorRevisionLabel = "bench.stagehand.dev/revision"
	floorPodForLabel   = "bench.stagehand.dev/pod-for"
)

// firstBarePods times manyFirst bare run-once pods created at once in a fresh namespace,
// alone, from the first create to the last one Succeeded, with the same CPU and request
// accounting as the DC and Deployment sides.
func (r *ManyResult) firstBarePods(ctx context.Context, env *framework.Env, cl *bulkClients) error {
	ns, err := newNamespace(ctx, env, "bench-many-pod-")
	if err != nil {
		return err
	}
	// The deployer's account, made here as the controller makes it for a DC's namespace;
	// the pods do not call the API, so no RoleBinding.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: stagehandv1.DeployerServiceAccountName}}
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		deleteNamespace(ctx, env, ns)
		return fmt.Errorf("creating the ServiceAccount of the bare pods: %w", err)
	}
	image := framework.TestImages().TestApp
	logf("many: %d bare run-once pods (%s exit 0) created at once in %s", manyFirst, image, ns)
	metricsBefore := snapshotMetrics(ctx, env)
	machine, byBinary := machineCPU(), cpuByBinary()
	podMS, failed, reasons, err := barePodsAll(ctx, cl, ns, image, manyFirst, manyFirstLimit)
	r.FirstBarePodMachineCPUSeconds = machineCPU() - machine
	r.FirstBarePodThrottle = throttleSince(ctx, env, metricsBefore, manyFirst)
	r.FirstBarePodCPUByBinary = topCPU(cpuSince(byBinary, cpuByBinary()), 8)
	logf("many: CPU while the bare pods ran: machine %.1f s; by binary %s", r.FirstBarePodMachineCPUSeconds, cpuList(r.FirstBarePodCPUByBinary))
	deleteNamespace(ctx, env, ns)
	if err != nil {
		return fmt.Errorf("%d bare pods: %w", manyFirst, err)
	}
	r.FirstBarePodMS, r.FirstBarePodFailed, r.FirstBarePodFailReasons = podMS, failed, reasons
	for _, line := range reasons {
		logf("many: bare pod failed: %s", line)
	}
	r.Floor = manyFloor(r)
	logf("many: %d bare pods Succeeded in %s (%d failed)", manyFirst, ms(podMS), failed)
	if f := r.Floor; f != nil {
		logf("many: floor of a DC rollout = Deployment + bare pod: %s, %.2f× the Deployments' time (DCs measured %.2f×)", ms(f.MS), f.Ratio, r.FirstRatio)
	}
	return nil
}

// barePodsAll creates n bare pods at once in ns and returns the time from the first create
// to the last one Succeeded, how many Failed, and why.
func barePodsAll(ctx context.Context, cl *bulkClients, ns, image string, n int, limit time.Duration) (float64, int, []string, error) {
	t := newTracker(n)
	list, err := cl.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, nil, err
	}
	t.watch(ctx, list.ResourceVersion, func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
		return cl.kube.CoreV1().Pods(ns).Watch(ctx, lo)
	}, func(obj any) (string, int) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return "", 0
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return p.Name, 1
		case corev1.PodFailed:
			t.failedBecause(p.Name, p.Status.Reason+"\x00"+p.Status.Message)
			return p.Name, 2
		}
		return "", 0
	})
	start := time.Now()
	err = parallel(n, bulkWorkers, func(i int) error {
		_, err := cl.kube.CoreV1().Pods(ns).Create(ctx, barePod(manyName("p", i)+"-1", ns, image), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, 0, nil, err
	}
	if err := t.wait(ctx, limit); err != nil {
		return 0, 0, nil, err
	}
	last, _, failed := t.result()
	return sinceMS(start, last), failed, t.failReasons(), nil
}

// barePod is a pod of the deployer pod's shape (controller/deployerpod NewPod, copied: e2e
// does not import the controller) for a revision named rev, with no owner, whose container
// runs the test app's "exit 0". The resources are the controller's default deployer
// requests and limits (STAGEHAND_DEPLOYER_REQUESTS, STAGEHAND_DEPLOYER_LIMITS).
func barePod(rev, ns, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   stagehandv1.DeployerPodName(rev),
			Labels: map[string]string{floorConfigLabel: rev, floorRevisionLabel: "1", floorPodForLabel: rev},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName:    stagehandv1.DeployerServiceAccountName,
			RestartPolicy:         corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: new(stagehandv1.DefaultActiveDeadlineSeconds),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  stagehandv1.DeployerContainerName,
				Image: image,
				Args:  []string{"exit", "0"},
				Env: []corev1.EnvVar{
					{Name: stagehandv1.EnvRevision, Value: rev},
					{Name: stagehandv1.EnvNamespace, Value: ns},
					{Name: stagehandv1.EnvOpenShiftDeploymentName, Value: rev},
					{Name: stagehandv1.EnvOpenShiftDeploymentNamespace, Value: ns},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				TerminationMessagePath:   stagehandv1.DefaultTerminationMessagePath,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             new(true),
					AllowPrivilegeEscalation: new(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}
