package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// hookTargetMS is the limit: the time a hook pod adds above its own runtime.
const hookTargetMS = 1000

// HooksResult compares a Recreate rollout with three no-op hook pods (pre, mid, post)
// against the same rollout without hooks.
type HooksResult struct {
	Replicas int32       `json:"replicas"`
	Hooks    int         `json:"hooks"`
	Command  []string    `json:"command"`
	Rounds   []HookRound `json:"rounds"`
	// WithMedianMS and WithoutMedianMS: template change → revision Complete, median.
	WithMedianMS    float64 `json:"withMedianMs"`
	WithoutMedianMS float64 `json:"withoutMedianMs"`
	// HookRuntimeMS is the hooks' own runtime taken off the difference: 0, see markdown.
	HookRuntimeMS float64 `json:"hookRuntimeMs"`
	// HookRuntimeSeconds is the largest finishedAt − startedAt of a hook container seen
	// (whole seconds, as the API gives them).
	HookRuntimeSeconds float64 `json:"hookRuntimeSeconds"`
	// HookPodMedianMS: a hook pod's ADDED watch event → its phase Succeeded event, median
	// over every hook pod of every round.
	HookPodMedianMS float64 `json:"hookPodMedianMs"`
	// OverheadPerHookMS is (WithMedianMS − WithoutMedianMS − HookRuntimeMS) / Hooks.
	OverheadPerHookMS float64 `json:"overheadPerHookMs"`
}

// HookRound is one round: both DeploymentConfigs rolled out one after the other.
type HookRound struct {
	Round     int     `json:"round"`
	WithMS    float64 `json:"withMs"`
	WithoutMS float64 `json:"withoutMs"`
	// HookPodsMS: each hook pod, ADDED → Succeeded, in the order they ran.
	HookPodsMS []float64 `json:"hookPodsMs"`
}

const (
	hooksWithName    = "bench-hooks"
	hooksWithoutName = "bench-nohooks"
	hooksReplicas    = 3
)

// hooksDC is a Recreate DeploymentConfig on the bench template, with the shell image in
// place of the simulated one (on the local cluster a container without a command is
// simulated all the same) so that the hook pods, which take the container's image, run
// the no-op in a real shell image wherever the bench runs.
func hooksDC(name string, command []string) *stagehandv1.DeploymentConfig {
	t := template(name, 1)
	t.Spec.Containers[0].Image = framework.TestImages().Shell
	dc := &stagehandv1.DeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: stagehandv1.DeploymentConfigSpec{
			Replicas: ptr.To[int32](hooksReplicas),
			Template: t,
			Strategy: stagehandv1.DeploymentStrategy{Type: stagehandv1.DeploymentStrategyTypeRecreate},
		},
	}
	if command != nil {
		hook := func() *stagehandv1.LifecycleHook {
			return &stagehandv1.LifecycleHook{
				FailurePolicy: stagehandv1.LifecycleHookFailurePolicyAbort,
				ExecNewPod:    &stagehandv1.ExecNewPodHook{ContainerName: "app", Command: command},
			}
		}
		dc.Spec.Strategy.RecreateParams = &stagehandv1.RecreateDeploymentStrategyParams{Pre: hook(), Mid: hook(), Post: hook()}
	}
	return dc
}

func measureHooks(ctx context.Context, env *framework.Env, o options) (*HooksResult, error) {
	res := &HooksResult{Replicas: hooksReplicas, Hooks: 3, Command: []string{"/bin/sh", "-c", "true"}}
	ns, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-hooks-"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	}()
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns.Name)
	for _, dc := range []*stagehandv1.DeploymentConfig{hooksDC(hooksWithName, res.Command), hooksDC(hooksWithoutName, nil)} {
		if _, err := dcs.Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	const limit = 3 * time.Minute
	for _, name := range []string{hooksWithName, hooksWithoutName} {
		if err := settleDC(ctx, env, ns.Name, name, hooksReplicas, 1, limit); err != nil {
			return nil, fmt.Errorf("first rollout of %s: %w", name, err)
		}
	}
	// The two roll out one after the other, never together, in alternating order so that
	// a drift of the machine's load does not favour one side.
	for i := 1; i <= o.rounds; i++ {
		r := HookRound{Round: i}
		order := []string{hooksWithName, hooksWithoutName}
		if i%2 == 0 {
			order[0], order[1] = order[1], order[0]
		}
		for _, name := range order {
			t, err := timeRollout(ctx, env, ns.Name, name, i+1, limit)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", i, name, err)
			}
			if err := settleDC(ctx, env, ns.Name, name, hooksReplicas, int64(i+1), limit); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", i, name, err)
			}
			if name == hooksWithName {
				r.WithMS, r.HookPodsMS = t.ms, t.hookPodsMS
				res.HookRuntimeSeconds = max(res.HookRuntimeSeconds, t.hookRuntime.Seconds())
			} else {
				r.WithoutMS = t.ms
			}
		}
		var pods []string
		for _, v := range r.HookPodsMS {
			pods = append(pods, ms(v))
		}
		logf("  round %d: with hooks %s, without %s, hook pods ADDED → Succeeded %s", i, ms(r.WithMS), ms(r.WithoutMS), strings.Join(pods, ", "))
		res.Rounds = append(res.Rounds, r)
	}
	var pods []float64
	for _, r := range res.Rounds {
		pods = append(pods, r.HookPodsMS...)
	}
	res.WithMedianMS = median(pick2(res.Rounds, func(r HookRound) float64 { return r.WithMS }))
	res.WithoutMedianMS = median(pick2(res.Rounds, func(r HookRound) float64 { return r.WithoutMS }))
	res.HookPodMedianMS = median(pods)
	res.OverheadPerHookMS = (res.WithMedianMS - res.WithoutMedianMS - res.HookRuntimeMS) / float64(res.Hooks)
	logf("hooks: with %s, without %s: %s per hook pod", ms(res.WithMedianMS), ms(res.WithoutMedianMS), ms(res.OverheadPerHookMS))
	return res, nil
}

func pick2[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

type rolloutTiming struct {
	ms          float64
	hookPodsMS  []float64
	hookRuntime time.Duration
}

// timeRollout sets VERSION=version in the template of DeploymentConfig name and times,
// from watch events, the change to revision version Complete (the earlier of the
// ReplicaSet's phase annotation and the DC's status), and each hook pod's ADDED →
// Succeeded.
func timeRollout(ctx context.Context, env *framework.Env, ns, name string, version int, limit time.Duration) (rolloutTiming, error) {
	var res rolloutTiming
	rev := int64(version)
	rsName := stagehandv1.RevisionName(name, rev)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	rsSel := stagehandv1.ConfigLabel + "=" + name
	hookSel := rsSel + "," + stagehandv1.HookStageLabel
	rsList, err := env.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: rsSel})
	if err != nil {
		return res, err
	}
	podList, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: hookSel})
	if err != nil {
		return res, err
	}
	nameSel := fields.OneTermEqualSelector("metadata.name", name).String()
	dcList, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).List(ctx, metav1.ListOptions{FieldSelector: nameSel})
	if err != nil {
		return res, err
	}

	var (
		mu       sync.Mutex
		complete time.Time
		failed   bool
		added    = map[string]time.Time{}
		order    []string
		finished = map[string]time.Time{}
	)
	completed := func(at time.Time, ok bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			failed = true
		} else if complete.IsZero() || at.Before(complete) {
			complete = at
		}
		return true
	}
	done := make(chan error, 2)
	go func() {
		done <- watchUntil(ctx, rsList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = rsSel
			return env.Kube.AppsV1().ReplicaSets(ns).Watch(ctx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			rs, ok := obj.(*appsv1.ReplicaSet)
			if !ok || rs.Name != rsName {
				return false
			}
			switch stagehandv1.RevisionPhase(rs.Annotations[stagehandv1.PhaseAnnotation]) {
			case stagehandv1.RevisionPhaseComplete:
				return completed(at, true)
			case stagehandv1.RevisionPhaseFailed:
				return completed(at, false)
			}
			return false
		})
	}()
	go func() {
		done <- watchUntil(ctx, dcList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = nameSel
			return env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Watch(ctx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			dc, ok := obj.(*stagehandv1.DeploymentConfig)
			if !ok || dc.Status.LatestVersion != rev {
				return false
			}
			switch dc.Status.Phase {
			case stagehandv1.RevisionPhaseComplete:
				return completed(at, true)
			case stagehandv1.RevisionPhaseFailed:
				return completed(at, false)
			}
			return false
		})
	}()
	// The hook pods, until the rollout is timed; the watch ends with podCtx.
	podCtx, stopPods := context.WithCancel(ctx)
	podsDone := make(chan struct{})
	go func() {
		defer close(podsDone)
		_ = watchUntil(podCtx, podList.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = hookSel
			return env.Kube.CoreV1().Pods(ns).Watch(podCtx, o)
		}, func(obj runtime.Object, at time.Time) bool {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			if _, seen := added[p.Name]; !seen {
				added[p.Name] = at
				order = append(order, p.Name)
			}
			if _, seen := finished[p.Name]; !seen && p.Status.Phase == corev1.PodSucceeded {
				finished[p.Name] = at
				for _, c := range p.Status.ContainerStatuses {
					if t := c.State.Terminated; t != nil {
						res.hookRuntime = max(res.hookRuntime, t.FinishedAt.Sub(t.StartedAt.Time))
					}
				}
			}
			return false
		})
	}()

	start := time.Now()
	err = changeDC(ctx, env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns), name, version, nil)
	if err != nil {
		stopPods()
		return res, fmt.Errorf("changing the template: %w", err)
	}
	// Either watch that sees the end is enough; the other stops with ctx.
	werr := <-done
	stopPods()
	<-podsDone
	mu.Lock()
	defer mu.Unlock()
	switch {
	case werr != nil:
		return res, werr
	case failed:
		return res, fmt.Errorf("revision %d failed", rev)
	}
	res.ms = float64(complete.Sub(start).Microseconds()) / 1000
	for _, n := range order {
		if f, ok := finished[n]; ok {
			res.hookPodsMS = append(res.hookPodsMS, float64(f.Sub(added[n]).Microseconds())/1000)
		}
	}
	return res, nil
}

// settleDC waits (polling: setup, not a measurement) until revision rev of DeploymentConfig
// name is Complete with replicas ready pods and no pod of it terminating. The hooks, binaries
// and API-cost parts share it.
func settleDC(ctx context.Context, env *framework.Env, ns, name string, replicas int32, rev int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		ready, terminating := 0, 0
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp != nil {
				terminating++
			} else if framework.PodReady(p) {
				ready++
			}
		}
		var why string
		switch {
		case dc.Status.LatestVersion == rev && dc.Status.Phase == stagehandv1.RevisionPhaseFailed:
			return fmt.Errorf("revision %d of %s failed", rev, name)
		case dc.Status.LatestVersion != rev || dc.Status.Phase != stagehandv1.RevisionPhaseComplete:
			why = fmt.Sprintf("at revision %d phase %q", dc.Status.LatestVersion, dc.Status.Phase)
		case ready != int(replicas) || terminating > 0:
			why = fmt.Sprintf("%d ready pods, %d terminating", ready, terminating)
		default:
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("not settled after " + limit.String() + ": " + why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (r *HooksResult) targets() []Target {
	return []Target{{
		Goal:     "hook overhead ≤ 1 s per hook pod above its own runtime (Recreate, 3 no-op hook pods vs none, median)",
		Limit:    hookTargetMS,
		Measured: r.OverheadPerHookMS,
		Unit:     "ms",
		Case:     fmt.Sprintf("Recreate/replicas=%d/hooks=pre,mid,post", r.Replicas),
		Status:   status(r.OverheadPerHookMS <= hookTargetMS),
		Note:     "an upper bound: the no-op's own runtime is taken as 0",
	}}
}

func (r *HooksResult) markdown(p func(format string, args ...any)) {
	p("## Hook overhead\n\n")
	p("Two Recreate DeploymentConfigs of %d replicas in one namespace, one with pre, mid and post `execNewPod` hooks\n", r.Replicas)
	p("whose command is the no-op `%s`, the other without hooks. Each round changes the template of one, times the\n", strings.Join(r.Command, " "))
	p("change → revision Complete from watch events, waits for rest, then does the same for the other (alternating\n")
	p("which goes first). The overhead per hook is (median with − median without − the hooks' own runtime) / %d.\n", r.Hooks)
	p("The hooks' own runtime is taken as **0**, so the figure is an upper bound of the overhead: a no-op runs in\n")
	p("milliseconds, and pod status timestamps count whole seconds (the largest finishedAt − startedAt seen was %.0f s;\n", r.HookRuntimeSeconds)
	p("a no-op that crosses a second boundary shows 1 s). The difference on the median row is the difference of the\n")
	p("medians. The last column is each hook pod's life as the watch saw it: ADDED → phase Succeeded.\n\n")
	p("| Round | with hooks | without | difference | hook pods, ADDED → Succeeded |\n|---|---|---|---|---|\n")
	for _, h := range r.Rounds {
		var pods []string
		for _, v := range h.HookPodsMS {
			pods = append(pods, ms(v))
		}
		p("| %d | %s | %s | %s | %s |\n", h.Round, ms(h.WithMS), ms(h.WithoutMS), ms(h.WithMS-h.WithoutMS), strings.Join(pods, ", "))
	}
	p("| **median** | **%s** | **%s** | **%s** | **%s** |\n\n", ms(r.WithMedianMS), ms(r.WithoutMedianMS),
		ms(r.WithMedianMS-r.WithoutMedianMS), ms(r.HookPodMedianMS))
	p("Overhead per hook pod: **%s** (target ≤ %s).\n", ms(r.OverheadPerHookMS), ms(hookTargetMS))
}
