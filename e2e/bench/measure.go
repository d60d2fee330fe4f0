package main

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
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
