package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

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
