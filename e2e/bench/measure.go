package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"time"

	stagehandtyped "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/typed/api/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/internal/testutil"
)

const (
	dcName     = "bench-dc"
	deployName = "bench-deploy"
	versionEnv = "VERSION"
)

type benchCase struct {
	Strategy        stagehandv1.DeploymentStrategyType
	Replicas        int32
	MinReadySeconds int32
	Rounds          int
	limit           time.Duration
	// alone: the DeploymentConfig without a Deployment beside it (the fixed-overhead case).
	alone bool
	// rng picks each round's start within the second (seeded by -seed).
	rng *rand.Rand
}

func (c benchCase) name() string {
	if c.alone {
		return fmt.Sprintf("overhead/%s/replicas=%d (DeploymentConfig alone)", c.Strategy, c.Replicas)
	}
	return fmt.Sprintf("%s/replicas=%d/minReadySeconds=%d", c.Strategy, c.Replicas, c.MinReadySeconds)
}

// template is the pod template both sides run: a simulated container (always Ready, no
// cost) with VERSION in its environment. Only the app label differs, so that the two
// selectors do not overlap.
func template(app string, version int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app, "bench": "stagehand"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: testutil.SimulatedImage,
				Env:   []corev1.EnvVar{{Name: versionEnv, Value: strconv.Itoa(version)}},
			}},
		},
	}
}

func setVersion(t *corev1.PodTemplateSpec, version int) {
	t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: versionEnv, Value: strconv.Itoa(version)}}
}

func versionOf(t *corev1.PodTemplateSpec) string {
	for _, e := range t.Spec.Containers[0].Env {
		if e.Name == versionEnv {
			return e.Value
		}
	}
	return ""
}

func newDC(c benchCase) *stagehandv1.DeploymentConfig {
	quarter := intstr.FromString("25%")
	dc := &stagehandv1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: dcName},
		Spec: stagehandv1.DeploymentConfigSpec{
			Replicas:        ptr.To(c.Replicas),
			Template:        template(dcName, 1),
			MinReadySeconds: c.MinReadySeconds,
			Strategy:        stagehandv1.DeploymentStrategy{Type: c.Strategy},
		},
	}
	if c.Strategy == stagehandv1.DeploymentStrategyTypeRolling {
		dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{MaxSurge: &quarter, MaxUnavailable: &quarter}
	}
	return dc
}

func newDeployment(c benchCase) *appsv1.Deployment {
	quarter := intstr.FromString("25%")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deployName},
		Spec: appsv1.DeploymentSpec{
			Replicas:        ptr.To(c.Replicas),
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": deployName}},
			Template:        template(deployName, 1),
			MinReadySeconds: c.MinReadySeconds,
		},
	}
	if c.Strategy == stagehandv1.DeploymentStrategyTypeRecreate {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	} else {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}}
	}
	return d
}

// runCase creates both workloads in a fresh namespace, waits for their first rollout,
// then runs the rounds: each changes both templates at the same moment and times both
// rollouts from watch events.
func runCase(ctx context.Context, env *framework.Env, c benchCase) (CaseResult, error) {
	cr := CaseResult{Name: c.name(), Strategy: string(c.Strategy), Replicas: c.Replicas, MinReadySeconds: c.MinReadySeconds}
	ns, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}, metav1.CreateOptions{})
	if err != nil {
		return cr, err
	}
	defer func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	}()
	cr.Namespace = ns.Name
	if _, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns.Name).Create(ctx, newDC(c), metav1.CreateOptions{}); err != nil {
		return cr, err
	}
	if !c.alone {
		if _, err := env.Kube.AppsV1().Deployments(ns.Name).Create(ctx, newDeployment(c), metav1.CreateOptions{}); err != nil {
			return cr, err
		}
	}
	setupStart := time.Now()
	if err := settle(ctx, env, ns.Name, c, 1, c.limit); err != nil {
		return cr, fmt.Errorf("first rollout: %w", err)
	}
	logf("  first rollout settled in %s", time.Since(setupStart).Round(100*time.Millisecond))
	for i := 1; i <= c.Rounds; i++ {
		// Rounds start at a random point of the second: a pod counts as available
		// minReadySeconds after its Ready condition's lastTransitionTime, which has
		// second precision, so a fixed phase would favour one side in every round.
		if err := sleepUntilFraction(ctx, c.rng.Float64()); err != nil {
			return cr, err
		}
		r, err := runRound(ctx, env, ns.Name, c, i)
		if err != nil {
			return cr, fmt.Errorf("round %d: %w", i, err)
		}
		if c.alone {
			logf("  round %d: ReplicaSet %s, deployer pod %s, first scale %s, Complete %s",
				i, ms(r.RSCreatedMS), ms(r.DeployerPodMS), ms(r.FirstScaleMS), ms(r.DCMS))
		} else {
			logf("  round %d: Deployment %s, DeploymentConfig %s (ratio %.2f); overhead: ReplicaSet %s, deployer pod %s, first scale %s",
				i, ms(r.DeploymentMS), ms(r.DCMS), r.Ratio, ms(r.RSCreatedMS), ms(r.DeployerPodMS), ms(r.FirstScaleMS))
		}
		cr.Rounds = append(cr.Rounds, r)
		if err := settle(ctx, env, ns.Name, c, int64(i+1), c.limit); err != nil {
			return cr, fmt.Errorf("after round %d: %w", i, err)
		}
	}
	summarize(&cr)
	return cr, nil
}

// changeDC sets the template's VERSION of DeploymentConfig name to version, retrying
// conflicts. sent, when not nil, gets the moment the update that succeeded was sent.
func changeDC(ctx context.Context, client stagehandtyped.DeploymentConfigInterface, name string, version int, sent *time.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dc, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setVersion(&dc.Spec.Template, version)
		if sent != nil {
			*sent = time.Now()
		}
		_, err = client.Update(ctx, dc, metav1.UpdateOptions{})
		return err
	})
}

// changeDeployment sets the template's VERSION of Deployment name to version, retrying
// conflicts.
func changeDeployment(ctx context.Context, client appsv1client.DeploymentInterface, name string, version int) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setVersion(&d.Spec.Template, version)
		_, err = client.Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// sleepUntilFraction sleeps until the wall clock is at fraction f of a second.
func sleepUntilFraction(ctx context.Context, f float64) error {
	now := time.Now()
	at := now.Truncate(time.Second).Add(time.Duration(f * float64(time.Second)))
	if at.Before(now) {
		at = at.Add(time.Second)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(at)):
		return nil
	}
}

// settle waits (polling: this is setup, not a measurement) until revision rev of the DC is
// Complete with its pods ready, the Deployment is complete, and no pod in the namespace
// is terminating, so that a round starts from rest.
func settle(ctx context.Context, env *framework.Env, ns string, c benchCase, rev int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var why string
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, dcName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d := &appsv1.Deployment{}
		if !c.alone {
			if d, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, deployName, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "bench=stagehand"})
		if err != nil {
			return err
		}
		readyDC, terminating := 0, 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				terminating++
			} else if p.Labels["app"] == dcName && framework.PodReady(p) {
				readyDC++
			}
		}
		switch {
		case dc.Status.LatestVersion != rev || dc.Status.Phase != stagehandv1.RevisionPhaseComplete:
			why = fmt.Sprintf("DeploymentConfig at revision %d phase %q", dc.Status.LatestVersion, dc.Status.Phase)
		case readyDC != int(c.Replicas) || dc.Status.ReadyReplicas != c.Replicas:
			why = fmt.Sprintf("%d ready pods of the DeploymentConfig (status %d)", readyDC, dc.Status.ReadyReplicas)
		case !c.alone && !deploymentDone(d):
			why = fmt.Sprintf("Deployment at %d/%d updated/available of %d", d.Status.UpdatedReplicas, d.Status.AvailableReplicas, c.Replicas)
		case terminating > 0:
			why = fmt.Sprintf("%d pods terminating", terminating)
		default:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not settled after %s: %s", limit, why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deploymentDone is the Deployment's "fully rolled out": the controller saw the current
// spec and every replica is updated and available, with no old one left.
func deploymentDone(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}

// runRound changes both templates to VERSION=round+1 at the same moment and returns the
// times, from watch events, to each rollout's completion and to the steps of the DC's
// revision.
func runRound(ctx context.Context, env *framework.Env, ns string, c benchCase, round int) (Round, error) {
	version := round + 1
	rev := int64(version)
	rsName := stagehandv1.RevisionName(dcName, rev)
	r := Round{Round: round, Revision: rev}

	ctx, cancel := context.WithTimeout(ctx, c.limit)
	defer cancel()

	// Resource versions to start the watches from: nothing before the change is missed,
	// nothing older is replayed.
	rsList, err := env.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel + "=" + dcName})
	if err != nil {
		return r, err
	}
	podList, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.DeployerPodForLabel + "=" + rsName})
	if err != nil {
		return r, err
	}
	dcList, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", dcName).String()})
	if err != nil {
		return r, err
	}
	dList := &appsv1.DeploymentList{}
	if !c.alone {
		if dList, err = env.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", deployName).String()}); err != nil {
			return r, err
		}
	}

	var (
		mu                                          sync.Mutex
		rsCreated, firstScale, rsComplete, podAdded time.Time
		dcComplete, deployComplete                  time.Time
		podBound, podRunning, podDone, oldAtZero    time.Time
	)
	oldName := stagehandv1.RevisionName(dcName, rev-1)
	done := make(chan error, 4)
	// The revision's ReplicaSet: created, first scaled up, phase Complete.
	go func() {
		done <- watchUntil(ctx, rsList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = stagehandv1.ConfigLabel + "=" + dcName
			return env.Kube.AppsV1().ReplicaSets(ns).Watch(ctx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			rs, ok := obj.(*appsv1.ReplicaSet)
			if !ok {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			if rs.Name == oldName && oldAtZero.IsZero() && ptr.Deref(rs.Spec.Replicas, 0) == 0 {
				oldAtZero = at
			}
			if rs.Name != rsName {
				return false
			}
			if rsCreated.IsZero() {
				rsCreated = at
			}
			if firstScale.IsZero() && ptr.Deref(rs.Spec.Replicas, 0) > 0 {
				firstScale = at
			}
			if rs.Annotations[stagehandv1.PhaseAnnotation] == string(stagehandv1.RevisionPhaseFailed) {
				return true
			}
			if rsComplete.IsZero() && rs.Annotations[stagehandv1.PhaseAnnotation] == string(stagehandv1.RevisionPhaseComplete) {
				rsComplete = at
				return true
			}
			return false
		})
	}()
	// The revision's deployer pod: created, bound to a node, running, ended.
	go func() {
		done <- watchUntil(ctx, podList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = stagehandv1.DeployerPodForLabel + "=" + rsName
			return env.Kube.CoreV1().Pods(ns).Watch(ctx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			first := func(t *time.Time, now bool) {
				if t.IsZero() && now {
					*t = at
				}
			}
			first(&podAdded, true)
			first(&podBound, pod.Spec.NodeName != "")
			first(&podRunning, pod.Status.Phase == corev1.PodRunning)
			first(&podDone, pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
			return !podDone.IsZero()
		})
	}()
	// The DeploymentConfig: status phase Complete with latestVersion rev.
	go func() {
		done <- watchUntil(ctx, dcList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", dcName).String()
			return env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Watch(ctx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			dc, ok := obj.(*stagehandv1.DeploymentConfig)
			if !ok || dc.Status.LatestVersion < rev {
				return false
			}
			if dc.Status.LatestVersion == rev && dc.Status.Phase == stagehandv1.RevisionPhaseComplete {
				mu.Lock()
				dcComplete = at
				mu.Unlock()
				return true
			}
			return dc.Status.Phase == stagehandv1.RevisionPhaseFailed
		})
	}()
	// The Deployment: complete for the new template.
	go func() {
		if c.alone {
			done <- nil
			return
		}
		done <- watchUntil(ctx, dList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", deployName).String()
			return env.Kube.AppsV1().Deployments(ns).Watch(ctx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			d, ok := obj.(*appsv1.Deployment)
			if !ok || versionOf(&d.Spec.Template) != strconv.Itoa(version) || !deploymentDone(d) {
				return false
			}
			mu.Lock()
			deployComplete = at
			mu.Unlock()
			return true
		})
	}()

	// The change, to both at the same moment.
	start := time.Now()
	var wg sync.WaitGroup
	var dcErr, dErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		dcErr = changeDC(ctx, env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns), dcName, version, nil)
	}()
	go func() {
		defer wg.Done()
		if c.alone {
			return
		}
		dErr = changeDeployment(ctx, env.Kube.AppsV1().Deployments(ns), deployName, version)
	}()
	wg.Wait()
	if err := errors.Join(dcErr, dErr); err != nil {
		return r, fmt.Errorf("changing the templates: %w", err)
	}
	var errs []error
	for range 4 {
		if err := <-done; err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	mu.Lock()
	defer mu.Unlock()
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.Sub(start).Microseconds()) / 1000
	}
	if rsComplete.IsZero() && dcComplete.IsZero() {
		return r, fmt.Errorf("revision %d did not complete (failed)", rev)
	}
	dcDone := rsComplete
	if dcDone.IsZero() || (!dcComplete.IsZero() && dcComplete.Before(dcDone)) {
		dcDone = dcComplete
	}
	r.DeploymentMS = since(deployComplete)
	r.DCMS = since(dcDone)
	r.DCPhaseAnnotationMS = since(rsComplete)
	r.DCStatusMS = since(dcComplete)
	r.RSCreatedMS = since(rsCreated)
	r.DeployerPodMS = since(podAdded)
	r.FirstScaleMS = since(firstScale)
	r.DeployerBoundMS = since(podBound)
	r.DeployerRunningMS = since(podRunning)
	r.OldAtZeroMS = since(oldAtZero)
	r.DeployerEndedMS = since(podDone)
	if r.DeploymentMS > 0 {
		r.Ratio = r.DCMS / r.DeploymentMS
	}
	return r, nil
}

// watchUntil watches from resourceVersion rv and hands every object to handle with the
// time its event arrived, until handle returns true; a watch the server closes is resumed
// from the last resource version seen.
func watchUntil(ctx context.Context, rv string, open func(metav1.ListOptions) (watch.Interface, error), handle func(runtime.Object, time.Time) bool) error {
	for {
		w, err := open(metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("timed out: %w", ctx.Err())
			}
			return err
		}
		for ev := range w.ResultChan() {
			at := time.Now()
			if ev.Type == watch.Error {
				w.Stop()
				return fmt.Errorf("watch error: %v", ev.Object)
			}
			if m, err := meta.Accessor(ev.Object); err == nil {
				rv = m.GetResourceVersion()
			}
			if ev.Type == watch.Bookmark || ev.Type == watch.Deleted {
				continue
			}
			if handle(ev.Object, at) {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("timed out: %w", ctx.Err())
		}
	}
}
