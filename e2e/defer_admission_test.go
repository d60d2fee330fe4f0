//go:build e2e

package e2e

// DeferPolicies at admission, on the real apiserver (docs/security.md): the CRD's schema
// and CEL rules, the MutatingAdmissionPolicy that adds the finalizer stagehand.dev/defer at
// pod creation, the run-code check on a policy's steps, and what the controller's identity
// may do with pods for a defer run. No step runs here: every pod is gated and never
// scheduled, and the finalizers are removed before the namespace goes.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	deferFinalizerPolicy   = "stagehand-defer-finalizer"
	controllerStepsPolicy  = "stagehand-controller-defer-steps"
	deferSentinelLabel     = "stagehand-e2e/sentinel"
	deferTargetUID         = "0123abcd-0000-4000-8000-000000000001"
	neverScheduledGateName = "stagehand.dev/never"
)

// admissionDeferPolicy is a policy with one shell step, selecting by selector.
func admissionDeferPolicy(name string, when stagehandv1.DeferWhen, selector metav1.LabelSelector) *stagehandv1.DeferPolicy {
	return &stagehandv1.DeferPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: stagehandv1.DeferPolicySpec{
			Selector: &selector,
			When:     when,
			Steps: []stagehandv1.DeferStep{{
				Name: "flush", Image: images.Shell, Command: []string{"/bin/sh", "-c", "echo flushed"},
				// No apiVersion: the apiserver defaults it to v1 in a pod, not in a DeferPolicy.
				Env: []corev1.EnvVar{{Name: "MODE", Value: "fast"}, {Name: "ME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				}}},
			}},
		},
	}
}

func matchLabels(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

// gatedPod is a pod that is never scheduled (a scheduling gate nobody removes).
func gatedPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: neverScheduledGateName}},
			Containers:      []corev1.Container{{Name: "app", Image: images.Shell, Command: []string{"/bin/sh", "-c", "sleep 3600"}}},
		},
	}
}

func deferFinalizers(pod *corev1.Pod) int {
	n := 0
	for _, f := range pod.Finalizers {
		if f == stagehandv1.DeferFinalizer {
			n++
		}
	}
	return n
}

// releaseDeferFinalizers removes the finalizer from every pod of ns when the test ends,
// before the namespace is deleted (cleanups run last-registered first), so that no pod of
// the test stays Terminating.
func releaseDeferFinalizers(t *testing.T, ns string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("listing the pods of %s to release them: %v", ns, err)
			return
		}
		for _, p := range pods.Items {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil || deferFinalizers(pod) == 0 {
					return client404(err)
				}
				pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == stagehandv1.DeferFinalizer })
				_, err = env.Kube.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{})
				return client404(err)
			})
			if err != nil {
				t.Errorf("releasing pod %s/%s: %v", ns, p.Name, err)
			}
		}
	})
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitForDeferParams creates a last AfterTermination policy selecting the sentinel label,
// and waits until the MutatingAdmissionPolicy gives a pod with that label the finalizer: the
// apiserver then knows the policy and, its watch being ordered, every policy created before.
func waitForDeferParams(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx,
		admissionDeferPolicy("sentinel", stagehandv1.DeferAfterTermination, matchLabels(deferSentinelLabel, "yes")), metav1.CreateOptions{})
	require.NoError(t, err)
	probe := gatedPod("probe", map[string]string{deferSentinelLabel: "yes"})
	require.Eventually(t, func() bool {
		pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, probe, dryRun)
		return err == nil && deferFinalizers(pod) == 1
	}, policyActivationTimeout, 250*time.Millisecond, "the MutatingAdmissionPolicy %s never gave a selected pod the finalizer", deferFinalizerPolicy)
}

// The CRD refuses what a DeferPolicy must not be, and each refusal names the field.
func TestDeferPolicySchemaNamesTheField(t *testing.T) {
	requireCluster(t)
	ns := env.Namespace(t)
	valid := func() *stagehandv1.DeferPolicy {
		return admissionDeferPolicy("p", stagehandv1.DeferAfterTermination, matchLabels("app", "web"))
	}
	cases := []struct {
		name, field, message string
		change               func(*stagehandv1.DeferPolicy)
	}{
		{"an empty selector", "spec.selector", "must not be empty",
			func(p *stagehandv1.DeferPolicy) { p.Spec.Selector = &metav1.LabelSelector{} }},
		// The rule's message ("step names must be unique") does not reach the client: the
		// apiserver writes a FieldValueDuplicate cause as "Duplicate value".
		{"duplicate step names", "spec.steps", "Duplicate value",
			func(p *stagehandv1.DeferPolicy) { p.Spec.Steps = append(p.Spec.Steps, p.Spec.Steps[0]) }},
		{"gracePeriodSeconds 0", "spec.gracePeriodSeconds", "greater than or equal to 1",
			func(p *stagehandv1.DeferPolicy) { p.Spec.GracePeriodSeconds = ptr.To[int64](0) }},
		{"gracePeriodSeconds 3601", "spec.gracePeriodSeconds", "less than or equal to 3600",
			func(p *stagehandv1.DeferPolicy) { p.Spec.GracePeriodSeconds = ptr.To[int64](3601) }},
		{"a step name that is not a DNS label", "spec.steps[0].name", "should match",
			func(p *stagehandv1.DeferPolicy) { p.Spec.Steps[0].Name = "Flush_Cache" }},
		// A rule on the object's root has no field path to report: the message names it.
		{"a name longer than 63", "", "metadata.name: must be at most 63 characters",
			func(p *stagehandv1.DeferPolicy) { p.Name = strings.Repeat("a", 64) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := valid()
			c.change(p)
			_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(context.Background(), p, metav1.CreateOptions{
				DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict,
			})
			require.Error(t, err, "the apiserver accepted an invalid DeferPolicy")
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			var status apierrors.APIStatus
			require.True(t, errors.As(err, &status), "not an API status: %v", err)
			var causes []string
			for _, cause := range status.Status().Details.Causes {
				if (cause.Field == c.field || c.field == "") && strings.Contains(cause.Message, c.message) {
					return
				}
				causes = append(causes, cause.Field+": "+cause.Message)
			}
			t.Errorf("no cause names %q with %q; the causes were:\n  %s", c.field, c.message, strings.Join(causes, "\n  "))
		})
	}
	_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(context.Background(), valid(), dryRun)
	assert.NoError(t, err, "the valid policy the cases start from")
}

// The MutatingAdmissionPolicy adds the finalizer once to the pods an AfterTermination
// policy selects, with LabelSelector semantics, and to no other pod.
func TestDeferFinalizerAddedAtPodCreation(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	releaseDeferFinalizers(t, ns)
	_, err := env.Kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, deferFinalizerPolicy, metav1.GetOptions{})
	require.NoError(t, err, "the binding of %s", deferFinalizerPolicy)

	// Given policies of every kind of selector, two of them selecting app=web
	for _, p := range []*stagehandv1.DeferPolicy{
		admissionDeferPolicy("web", stagehandv1.DeferAfterTermination, matchLabels("app", "web")),
		admissionDeferPolicy("web-or-api", "", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}),
		admissionDeferPolicy("batch", stagehandv1.DeferBeforeScaleDown, matchLabels("app", "batch")),
		admissionDeferPolicy("cache-not-db", stagehandv1.DeferAfterTermination, metav1.LabelSelector{
			MatchLabels: map[string]string{"role": "cache"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}),
		admissionDeferPolicy("worker-no-debug", stagehandv1.DeferAfterTermination, metav1.LabelSelector{
			MatchLabels: map[string]string{"role": "worker"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "debug", Operator: metav1.LabelSelectorOpDoesNotExist}}}),
		admissionDeferPolicy("sharded", stagehandv1.DeferAfterTermination, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "shard", Operator: metav1.LabelSelectorOpExists}}}),
	} {
		_, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err, "creating DeferPolicy %s", p.Name)
	}
	waitForDeferParams(t, ns)

	cases := []struct {
		name   string
		labels map[string]string
		want   int
	}{
		{"selected by two policies", map[string]string{"app": "web"}, 1},
		{"In", map[string]string{"app": "api"}, 1},
		{"selected by none", map[string]string{"app": "other"}, 0},
		{"no labels", nil, 0},
		{"BeforeScaleDown only", map[string]string{"app": "batch"}, 0},
		{"NotIn without the key", map[string]string{"role": "cache"}, 1},
		{"NotIn with another value", map[string]string{"role": "cache", "tier": "frontend"}, 1},
		{"NotIn with the value", map[string]string{"role": "cache", "tier": "db"}, 0},
		{"DoesNotExist", map[string]string{"role": "worker"}, 1},
		{"DoesNotExist with the key", map[string]string{"role": "worker", "debug": "true"}, 0},
		{"Exists", map[string]string{"shard": "3"}, 1},
		{"a step pod", map[string]string{"app": "web", stagehandv1.DeferStepOfLabel: deferTargetUID}, 0},
		{"a hook pod (it copies the template's labels)", map[string]string{"app": "web", stagehandv1.HookStageLabel: "pre"}, 0},
		{"a deployer pod", map[string]string{"app": "web", stagehandv1.DeployerPodForLabel: "web-1"}, 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gatedPod("pod-"+strconv.Itoa(i), c.labels), metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, c.want, deferFinalizers(pod), "finalizers %v", pod.Finalizers)
		})
	}

	// A pod that already asks for the finalizer, among others, keeps one copy and the others
	asked := gatedPod("asked", map[string]string{"app": "web"})
	asked.Finalizers = []string{"example.com/keep", stagehandv1.DeferFinalizer}
	pod, err := env.Kube.CoreV1().Pods(ns).Create(ctx, asked, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/keep", stagehandv1.DeferFinalizer}, pod.Finalizers)
	t.Cleanup(func() { // example.com/keep has no controller: the test removes it
		_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), "asked", metav1.GetOptions{})
			if err != nil {
				return client404(err)
			}
			p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == "example.com/keep" })
			_, err = env.Kube.CoreV1().Pods(ns).Update(context.Background(), p, metav1.UpdateOptions{})
			return client404(err)
		})
	})
}

// A user with stagehand-edit only may not add or change a DeferPolicy's steps: they run as
// pods with the selected pods' volumes. Once allowed to create pods, the same user may.
func TestDeferRunningStepsNeedsCreatePods(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	bindEdit(t, ns, "erin")
	_, erin := impersonating(t, "erin")
	policies := erin.StagehandV1alpha1().DeferPolicies(ns)
	policy := func() *stagehandv1.DeferPolicy {
		return admissionDeferPolicy("flush", stagehandv1.DeferAfterTermination, matchLabels("app", "web"))
	}
	waitForPolicy(t, runCodePolicy, func() error {
		_, err := policies.Create(ctx, policy(), dryRun)
		return err
	})

	// Creating a policy is refused, naming the steps and the permission
	_, err := policies.Create(ctx, policy(), metav1.CreateOptions{})
	msg := deniedBy(t, runCodePolicy, err)
	assert.Contains(t, msg, "spec.steps[0]")
	assert.Contains(t, msg, "code in a pod: you need create pods in namespace "+ns)

	// Given the same policy created by an admin, the editor may change what runs no code
	_, err = env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx, policy(), metav1.CreateOptions{})
	require.NoError(t, err)
	update := func(change func(*stagehandv1.DeferPolicy)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := policies.Get(ctx, "flush", metav1.GetOptions{})
			require.NoError(t, err)
			change(p)
			_, err = policies.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
	}
	assert.NoError(t, update(func(p *stagehandv1.DeferPolicy) { p.Spec.GracePeriodSeconds = ptr.To[int64](60) }))
	// But not a step's image, nor its env
	err = update(func(p *stagehandv1.DeferPolicy) { p.Spec.Steps[0].Image = "registry.example/other:1" })
	assert.Contains(t, deniedBy(t, runCodePolicy, err), "spec.steps[0].image runs code in a pod")
	err = update(func(p *stagehandv1.DeferPolicy) { p.Spec.Steps[0].Env[0].Value = "slow" })
	assert.Contains(t, deniedBy(t, runCodePolicy, err), "spec.steps[0].env runs code in a pod")

	// When the user may also create pods, the policy is accepted
	grantCreatePods(t, ns, "erin")
	second := policy()
	second.Name = "flush-2"
	deadline := time.Now().Add(rbacPropagationTimeout)
	for {
		_, err = policies.Create(ctx, second, metav1.CreateOptions{})
		if err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond) // the new RoleBinding reaches the authorizer
	}
	assert.NoError(t, err, "a user who may create pods may create a DeferPolicy")
	assert.NoError(t, update(func(p *stagehandv1.DeferPolicy) { p.Spec.Steps[0].Image = "registry.example/other:1" }))
}

func grantCreatePods(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-creator"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-pod-creator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-creator"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// stepPodShape is step 1, attempt 1, of policy for target, as the controller builds it
// (hookpod/deferstep/build.go), never scheduled.
func stepPodShape(target *corev1.Pod, policy *stagehandv1.DeferPolicy) *corev1.Pod {
	step := policy.Spec.Steps[0]
	env := append([]corev1.EnvVar{
		{Name: "STAGEHAND_POD_NAME", Value: target.Name},
		{Name: "STAGEHAND_POD_UID", Value: string(target.UID)},
		{Name: "STAGEHAND_DEFER_STEP", Value: "1"},
	}, step.Env...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: target.Name + "-defer-" + string(target.UID)[:8] + "-1-1",
			Labels: map[string]string{
				stagehandv1.DeferStepOfLabel: string(target.UID),
				stagehandv1.DeferStepLabel:   "1",
				stagehandv1.DeferPolicyLabel: policy.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: target.Name, UID: target.UID}},
		},
		Spec: corev1.PodSpec{
			SchedulingGates:              []corev1.PodSchedulingGate{{Name: neverScheduledGateName}},
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			Containers: []corev1.Container{{
				Name: stagehandv1.DeferStepContainer, Image: step.Image, Command: step.Command, Args: step.Args, Env: env,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
		},
	}
}

// The controller's identity may create a step pod that runs exactly its policy's step, in
// the step pod's shape, and delete it; it may update a pod's defer annotations and
// finalizer, and nothing else of it.
func TestDeferControllerIdentityStepPodsAndPodUpdates(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	releaseDeferFinalizers(t, ns)
	controller, _ := impersonating(t, "system:serviceaccount:"+framework.ControllerNamespace+":"+controllerServiceAccount)
	pods := controller.CoreV1().Pods(ns)

	// Given a policy and a pod it selects
	policy, err := env.Stagehand.StagehandV1alpha1().DeferPolicies(ns).Create(ctx,
		admissionDeferPolicy("flush", stagehandv1.DeferAfterTermination, matchLabels("app", "web")), metav1.CreateOptions{})
	require.NoError(t, err)
	target, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gatedPod("web-0", map[string]string{"app": "web"}), metav1.CreateOptions{})
	require.NoError(t, err)
	otherImage := stepPodShape(target, policy)
	otherImage.Spec.Containers[0].Image = "registry.example/miner:1"
	require.Eventually(t, func() bool {
		_, err := pods.Create(ctx, otherImage, dryRun)
		return err != nil && strings.Contains(err.Error(), "image, command and args of step 1 of DeferPolicy flush")
	}, policyActivationTimeout, 250*time.Millisecond, "policy %s never refused a step pod with another image", controllerStepsPolicy)

	// The step pod as the controller makes it is allowed, and the controller may delete it.
	// The running controller deletes it too, at once, as a step no run wants: either
	// deletion is made by the controller's identity under the same policy.
	step, err := pods.Create(ctx, stepPodShape(target, policy), metav1.CreateOptions{})
	require.NoError(t, err, "the step pod as the controller makes it")
	assert.Zero(t, deferFinalizers(step), "a step pod never gets the defer finalizer")
	if err := pods.Delete(ctx, step.Name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		assert.NoError(t, err, "deleting the step pod as the controller")
	}

	denied := []struct {
		name, policy, message string
		change                func(*corev1.Pod)
	}{
		{"another image", controllerStepsPolicy, "image, command and args of step 1",
			func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/miner:1" }},
		{"another env", controllerStepsPolicy, "env of step 1 of DeferPolicy flush",
			func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/x.so"})
			}},
		{"a hostPath volume", controllerPodsPolicy, "no hostPath, secret",
			func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
			}},
		{"a secret volume", controllerPodsPolicy, "no hostPath, secret",
			func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}})
			}},
		{"a ServiceAccount token", controllerPodsPolicy, "automountServiceAccountToken false",
			func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }},
		{"a Secret in the env", controllerPodsPolicy, "no Secret in its environment",
			func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
			}},
		{"a privileged container", controllerPodsPolicy, "no privileged container",
			func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}},
		{"another name", controllerPodsPolicy, "<pod>-defer-<first 8 characters of the pod UID>-<index>-<attempt>",
			func(p *corev1.Pod) { p.Name = "kube-proxy-debug" }},
	}
	for _, c := range denied {
		pod := stepPodShape(target, policy)
		c.change(pod)
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		assert.Contains(t, deniedBy(t, c.policy, err), c.message, c.name)
	}

	// A step pod in a namespace without any DeferPolicy is refused
	empty := env.Namespace(t)
	_, err = controller.CoreV1().Pods(empty).Create(ctx, stepPodShape(target, policy), dryRun)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy '"+controllerStepsPolicy+"'")

	// Updates: the defer annotations and finalizer, not the spec nor other metadata
	update := func(change func(*corev1.Pod)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, "web-0", metav1.GetOptions{})
			require.NoError(t, err)
			change(p)
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
	}
	setAnnotation := func(key, value string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[key] = value
		}
	}
	err = update(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/miner:1" })
	assert.Contains(t, deniedBy(t, controllerPodsPolicy, err), "may not change a pod's spec")
	err = update(setAnnotation("example.com/owner", "mallory"))
	assert.Contains(t, deniedBy(t, controllerPodsPolicy, err), "this update changes the annotations example.com/owner")
	err = update(func(p *corev1.Pod) { p.Labels["app"] = "other" })
	assert.Contains(t, deniedBy(t, controllerPodsPolicy, err), "may change a pod's metadata only")
	assert.NoError(t, update(setAnnotation(stagehandv1.DeferProgressAnnotation, "1/1")))
	assert.NoError(t, update(setAnnotation(stagehandv1.PodDeletionCostAnnotation, "-100")))
	// Releasing the finalizer is the controller's last write of a run
	assert.NoError(t, update(func(p *corev1.Pod) {
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == stagehandv1.DeferFinalizer })
	}))

	// And it may still not delete a pod that is not Stagehand's
	err = pods.Delete(ctx, "web-0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	assert.Contains(t, deniedBy(t, controllerPodsPolicy, err), "and defer step pods (label stagehand.dev/defer-step-of)")
}

// The defer-steps policy type-checks without a warning against the pod and DeferPolicy
// schemas.
func TestDeferStepsPolicyTypeChecks(t *testing.T) {
	requireCluster(t)
	vaps := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	deadline := time.Now().Add(policyActivationTimeout)
	for {
		vap, err := vaps.Get(context.Background(), controllerStepsPolicy, metav1.GetOptions{})
		require.NoError(t, err)
		if vap.Status.ObservedGeneration == vap.Generation {
			if vap.Status.TypeChecking != nil {
				assert.Empty(t, vap.Status.TypeChecking.ExpressionWarnings)
			}
			return
		}
		require.True(t, time.Now().Before(deadline), "policy %s was not type-checked within %s", controllerStepsPolicy, policyActivationTimeout)
		time.Sleep(250 * time.Millisecond)
	}
}
