package deferpolicy

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func forbiddenStep(msg string) error {
	return apierrors.NewForbidden(corev1.Resource("pods"), "db-0-defer-0123abcd-1-1", errors.New(msg))
}

// The retry decision: an exceeded quota waits, a refusal retrying cannot fix is final,
// anything else goes back to the work queue.
func TestRefusalOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want refusal
	}{
		{"created", nil, refusalNone},
		{"created before", apierrors.NewAlreadyExists(corev1.Resource("pods"), "x"), refusalExists},
		{"exceeded quota", forbiddenStep("exceeded quota: compute, requested: requests.cpu=10m, used: requests.cpu=1, limited: requests.cpu=1"), refusalQuotaExceeded},
		{"quota requires limits", forbiddenStep("failed quota: compute: must specify limits.cpu for: step"), refusalFinal},
		{"LimitRange maximum", forbiddenStep("maximum memory usage per Container is 32Mi, but limit is 64Mi"), refusalFinal},
		{"pod security", forbiddenStep(`violates PodSecurity "restricted:latest"`), refusalFinal},
		{"service account not seen yet", forbiddenStep("error looking up service account ns/default"), refusalTransient},
		{"timeout", apierrors.NewServerTimeout(corev1.Resource("pods"), "create", 1), refusalTransient},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, refusalOf(tc.err)) })
	}
	assert.Contains(t, refusedMessage(forbiddenStep("failed quota: compute: must specify limits.cpu for: step"), 1),
		"set spec.steps[1].resources.limits.cpu")
}

func TestStepResourcesFillsWhatTheStepDoesNotSet(t *testing.T) {
	q := resource.MustParse
	defaults := DefaultStepResources()
	for _, tc := range []struct {
		name string
		step *corev1.ResourceRequirements
		want corev1.ResourceRequirements
	}{
		{"none set", nil, defaults},
		{"the step's own win", &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("200m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
		}, corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("200m")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("200m"), corev1.ResourceMemory: q("1Gi")},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stepResources(tc.step, defaults)
			assert.Equal(t, len(tc.want.Requests), len(got.Requests))
			for k, v := range tc.want.Requests {
				assert.Zero(t, v.Cmp(got.Requests[k]), "request %s", k)
			}
			assert.Equal(t, len(tc.want.Limits), len(got.Limits))
			for k, v := range tc.want.Limits {
				assert.Zero(t, v.Cmp(got.Limits[k]), "limit %s", k)
			}
		})
	}
	assert.Empty(t, stepResources(nil, corev1.ResourceRequirements{}).Requests, "no defaults, none set")
}

// An exceeded quota is not final, even for a step under Never: the create waits with a
// back-off and an event that names the quota, and the step is not recorded as failed.
func TestAStepRefusedByAnExceededQuotaWaitsAndTriesAgain(t *testing.T) {
	pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), inRun(0))
	f := newFixture(t, pod, cleanup(), readyNode())
	f.c.stepResources = DefaultStepResources()
	refuse := true
	var created *corev1.Pod
	f.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if refuse {
			return true, nil, forbiddenStep("exceeded quota: compute, requested: requests.cpu=10m, used: requests.cpu=1, limited: requests.cpu=1")
		}
		return false, nil, nil
	})

	err := f.sync(kindPod + "/ns/" + podName)
	require.Error(t, err, "requeued after the back-off")
	run := runOf(t, f.pod(podName))
	assert.Empty(t, run.Failed, "not a failed step")
	assert.Equal(t, 1, run.QuotaWaits)
	require.NotNil(t, run.NotBefore)
	assert.True(t, run.NotBefore.Time.Equal(t0.Add(time.Second)))
	assert.Contains(t, eventWith(f.drainEvents(), v1alpha1.EventDeferStepWaitsForQuota), "ResourceQuota compute")
	assert.Equal(t, "10m", created.Spec.Containers[0].Resources.Requests.Cpu().String(), "the default request")

	// After the back-off, with room in the quota, the same attempt's pod is created.
	refuse = false
	f.clock = t0.Add(2 * time.Second)
	f.syncPod(podName)
	assert.Equal(t, []string{"create pods db-0-defer-0123abcd-1-1"}, f.actions())
}

func TestAStepRefusedForAMissingLimitFailsWithTheFieldToSet(t *testing.T) {
	pod := withRun(ended(deleting(runningPod(), 30), corev1.PodSucceeded), inRun(0))
	p := cleanup()
	p.Spec.RestartPolicy = v1alpha1.DeferRestartOnFailure
	f := newFixture(t, pod, p, readyNode())
	f.kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbiddenStep("failed quota: compute: must specify limits.memory for: step")
	})

	f.syncPod(podName)
	run := runOf(t, f.pod(podName))
	assert.Equal(t, []string{"flush"}, run.Failed, "final even under OnFailure")
	event := eventWith(f.drainEvents(), v1alpha1.EventDeferStepFailed)
	assert.Contains(t, event, "must specify limits.memory")
	assert.Contains(t, event, "spec.steps[0].resources.limits.memory")
}
