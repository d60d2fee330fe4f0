package main

// The third side of the many part's first rollouts: the floor. A DC rollout runs one
// deployer pod that a Deployment does not, so the least it can cost on this machine is a
// Deployment's rollout and one bare run-once pod of the deployer pod's shape, with nothing
// to deploy. The floor side creates as many of both as there are DCs, together, and times
// them together (floorreport.go turns it into figures and targets).

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

// firstFloor times the floor of manyFirst DC first rollouts: manyFirst one-replica
// Deployments and manyFirst bare run-once pods created together in a fresh namespace
// (interleaved, with the same concurrent creates as the other sides), from the first create
// to the last Deployment available and the last pod Succeeded, with the same CPU and
// request accounting as the DC and Deployment sides.
func (r *ManyResult) firstFloor(ctx context.Context, env *framework.Env, cl *bulkClients) error {
	ns, err := newNamespace(ctx, env, "bench-many-floor-")
	if err != nil {
		return err
	}
	defer deleteNamespace(ctx, env, ns)
	// The deployer's account, made here as the controller makes it for a DC's namespace;
	// the pods do not call the API, so no RoleBinding.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: stagehandv1.DeployerServiceAccountName}}
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ServiceAccount of the bare pods: %w", err)
	}
	image := framework.TestImages().TestApp
	logf("many: the floor: %d one-replica Deployments and %d bare run-once pods (%s exit 0) created together in %s",
		manyFirst, manyFirst, image, ns)
	deployments, err := trackDeployments(ctx, cl, ns, manyFirst)
	if err != nil {
		return err
	}
	pods, err := trackBarePods(ctx, cl, ns, manyFirst)
	if err != nil {
		return err
	}
	metricsBefore := snapshotMetrics(ctx, env)
	machine, byBinary := machineCPU(), cpuByBinary()
	start := time.Now()
	err = parallel(2*manyFirst, bulkWorkers, func(i int) error {
		if i%2 == 0 {
			return createBenchDeployment(ctx, cl, ns, i/2)
		}
		_, err := cl.kube.CoreV1().Pods(ns).Create(ctx, barePod(manyName("p", i/2)+"-1", ns, image), metav1.CreateOptions{})
		return err
	})
	if err == nil {
		err = deployments.wait(ctx, manyFirstLimit)
	}
	if err == nil {
		err = pods.wait(ctx, manyFirstLimit)
	}
	r.FirstFloorMachineCPUSeconds = machineCPU() - machine
	r.FirstFloorThrottle = throttleSince(ctx, env, metricsBefore, manyFirst)
	r.FirstFloorCPUByBinary = topCPU(cpuSince(byBinary, cpuByBinary()), 8)
	logf("many: CPU while the floor ran: machine %.1f s; by binary %s", r.FirstFloorMachineCPUSeconds, cpuList(r.FirstFloorCPUByBinary))
	if err != nil {
		return fmt.Errorf("the floor (%d Deployments and %d bare pods): %w", manyFirst, manyFirst, err)
	}
	dLast, _, _ := deployments.result()
	pLast, _, failed := pods.result()
	r.FirstFloorDeploymentsMS, r.FirstFloorPodsMS = sinceMS(start, dLast), sinceMS(start, pLast)
	r.FirstFloorMS = max(r.FirstFloorDeploymentsMS, r.FirstFloorPodsMS)
	r.FirstFloorPodsFailed, r.FirstFloorPodFailReasons = failed, pods.failReasons()
	for _, line := range r.FirstFloorPodFailReasons {
		logf("many: bare pod failed: %s", line)
	}
	r.Floor = manyFloor(r)
	logf("many: the floor done in %s (the Deployments available at %s, the bare pods Succeeded at %s, %d failed)",
		ms(r.FirstFloorMS), ms(r.FirstFloorDeploymentsMS), ms(r.FirstFloorPodsMS), failed)
	if f := r.Floor; f != nil {
		logf("many: DCs %.2f× the floor's time (%.2f× the Deployments'); the floor is %.2f× the Deployments' time",
			f.DCRatio, r.FirstRatio, f.DeploymentRatio)
	}
	return nil
}

// trackBarePods watches ns for n bare pods to end: Succeeded, or Failed (and why).
func trackBarePods(ctx context.Context, cl *bulkClients, ns string, n int) (*tracker, error) {
	t := newTracker(n)
	// Only the bare pods: the Deployments' pods share the namespace.
	list, err := cl.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: floorPodForLabel})
	if err != nil {
		return nil, err
	}
	t.watch(ctx, list.ResourceVersion, func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
		lo.LabelSelector = floorPodForLabel
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
	return t, nil
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
