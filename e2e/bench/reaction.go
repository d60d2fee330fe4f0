package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/stagehand-dev/stagehand/api/revision"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	// reactionDCs is how many DeploymentConfigs sit in the namespace while one changes.
	reactionDCs = 500
	// reactionChanges is how many of them change, one at a time.
	reactionChanges = 100
	// reactionTarget is the goal for the p99 of spec change → deployer pod created.
	reactionTarget = 200.0
)

// ReactionResult is the controller's reaction time with many DeploymentConfigs in its
// caches: from a template change (the update's send) to the new revision's ReplicaSet and
// deployer pod (their first watch event), one change at a time.
type ReactionResult struct {
	DeploymentConfigs int   `json:"deploymentConfigs"`
	Changes           int   `json:"changes"`
	Seed              int64 `json:"seed"`
	// SetupMS is the time from the first create to all first revisions Complete.
	SetupMS float64 `json:"setupMs"`
	ReactionTimes
}

// ReactionTimes are spec change → the new revision's ReplicaSet and its deployer pod
// (their first watch events), per change, and their percentiles (summarize).
type ReactionTimes struct {
	// RSCreatedMS and DeployerPodMS are per change, in the order of the changes.
	RSCreatedMS      []float64 `json:"rsCreatedMs"`
	DeployerPodMS    []float64 `json:"deployerPodMs"`
	RSCreatedP50MS   float64   `json:"rsCreatedP50Ms"`
	RSCreatedP99MS   float64   `json:"rsCreatedP99Ms"`
	DeployerPodP50MS float64   `json:"deployerPodP50Ms"`
	DeployerPodP99MS float64   `json:"deployerPodP99Ms"`
	DeployerPodMaxMS float64   `json:"deployerPodMaxMs"`
}

func measureReaction(ctx context.Context, env *framework.Env, o options) (*ReactionResult, error) {
	r := &ReactionResult{DeploymentConfigs: reactionDCs, Changes: reactionChanges, Seed: time.Now().UnixNano()}
	cl, err := newBulkClients(env)
	if err != nil {
		return nil, err
	}
	ns, err := newNamespace(ctx, env, "bench-reaction-")
	if err != nil {
		return nil, err
	}
	defer deleteNamespace(ctx, env, ns)

	logf("reaction: creating %d one-replica Rolling DeploymentConfigs in %s", reactionDCs, ns)
	setup, err := rolloutAll(ctx, cl, ns, reactionDCs, 1, 10*time.Minute, func(i int) error {
		_, err := cl.stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, benchDC(manyName("r", i), 1), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("first rollouts: %w", err)
	}
	r.SetupMS = setup
	logf("reaction: all %d first revisions Complete in %s", reactionDCs, ms(setup))

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	first, err := watchRevisionStarts(wctx, env, ns)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 0))
	var picks []types.NamespacedName
	for _, i := range rng.Perm(reactionDCs)[:reactionChanges] {
		picks = append(picks, types.NamespacedName{Namespace: ns, Name: manyName("r", i)})
	}
	logf("reaction: changing %d of them one at a time (seed %d)", reactionChanges, r.Seed)
	if r.RSCreatedMS, r.DeployerPodMS, err = timeChanges(ctx, env, first, picks, 2); err != nil {
		return nil, err
	}
	r.summarize()
	logf("reaction: spec change → ReplicaSet p50 %s p99 %s; → deployer pod p50 %s p99 %s max %s",
		ms(r.RSCreatedP50MS), ms(r.RSCreatedP99MS), ms(r.DeployerPodP50MS), ms(r.DeployerPodP99MS), ms(r.DeployerPodMaxMS))
	return r, nil
}

func (r *ReactionTimes) summarize() {
	r.RSCreatedP50MS, r.RSCreatedP99MS = percentile(r.RSCreatedMS, 50), percentile(r.RSCreatedMS, 99)
	r.DeployerPodP50MS, r.DeployerPodP99MS = percentile(r.DeployerPodMS, 50), percentile(r.DeployerPodMS, 99)
	r.DeployerPodMaxMS = percentile(r.DeployerPodMS, 100)
}

func (r *ReactionResult) targets() []Target {
	t := Target{Goal: fmt.Sprintf("controller reaction at %d DCs: spec change → deployer pod created, p99 ≤ 200 ms", r.DeploymentConfigs),
		Limit: reactionTarget, Unit: "ms", Status: "not measured"}
	if len(r.DeployerPodMS) > 0 {
		t.Measured = r.DeployerPodP99MS
		t.Status = status(r.DeployerPodP99MS <= reactionTarget)
		t.Note = fmt.Sprintf("p50 %s, %d changes", ms(r.DeployerPodP50MS), len(r.DeployerPodMS))
	}
	return []Target{t}
}

func (r *ReactionResult) markdown(p func(format string, args ...any)) {
	p("## Controller reaction among %d DeploymentConfigs\n\n", r.DeploymentConfigs)
	p("%d one-replica Rolling DeploymentConfigs sit in one namespace, all Complete (their first rollouts took %s).\n", r.DeploymentConfigs, ms(r.SetupMS))
	p("Then %d of them, picked by a random generator with seed %d, get a template change one at a time, each once\n", r.Changes, r.Seed)
	p("the previous one's rollout is Complete. Each time runs from the update's send to the first watch event of the\n")
	p("new revision's ReplicaSet and of its deployer pod.\n\n")
	p("| spec change → | p50 | p99 | max |\n|---|---|---|---|\n")
	p("| ReplicaSet `<name>-2` created | %s | %s | %s |\n", ms(r.RSCreatedP50MS), ms(r.RSCreatedP99MS), ms(percentile(r.RSCreatedMS, 100)))
	p("| deployer pod created | %s | **%s** | %s |\n", ms(r.DeployerPodP50MS), ms(r.DeployerPodP99MS), ms(r.DeployerPodMaxMS))
}

// watchRevisionStarts records when revisions' ReplicaSets and deployer pods are first
// seen in ns (every namespace when ns is ""), keyed by rsKey and podKey: one watch of each,
// opened from a list before any change, so that an object's first event is its creation.
// The watches run until ctx is done.
func watchRevisionStarts(ctx context.Context, env *framework.Env, ns string) (*firstSeen, error) {
	first := newFirstSeen()
	// One item is enough: the list is read for its resource version, to watch from.
	rsList, err := env.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: stagehandv1.ConfigLabel, Limit: 1})
	if err != nil {
		return nil, err
	}
	podList, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: revision.DeployerPods().String(), Limit: 1})
	if err != nil {
		return nil, err
	}
	go func() {
		_ = watchUntil(ctx, rsList.ResourceVersion, func(lo metav1.ListOptions) (watch.Interface, error) {
			lo.LabelSelector = stagehandv1.ConfigLabel
			return env.Kube.AppsV1().ReplicaSets(ns).Watch(ctx, lo)
		}, func(obj runtime.Object, at time.Time) bool {
			if m, ok := obj.(metav1.Object); ok {
				first.see(rsKey(m.GetNamespace(), m.GetName()), at)
			}
			return false
		})
	}()
	go func() {
		_ = watchUntil(ctx, podList.ResourceVersion, func(lo metav1.ListOptions) (watch.Interface, error) {
			lo.LabelSelector = revision.DeployerPods().String()
			return env.Kube.CoreV1().Pods(ns).Watch(ctx, lo)
		}, func(obj runtime.Object, at time.Time) bool {
			if p, ok := obj.(*corev1.Pod); ok {
				first.see(podKey(p.Namespace, p.Labels[stagehandv1.DeployerPodForLabel]), at)
			}
			return false
		})
	}()
	return first, nil
}

func rsKey(ns, rs string) string  { return "rs/" + ns + "/" + rs }
func podKey(ns, rs string) string { return "pod/" + ns + "/" + rs }

// timeChanges changes the template of each DC in dcs to version rev, one at a time, which
// makes its revision rev, and times each update's send → the first event of that
// revision's ReplicaSet and of its deployer pod (first must watch their namespaces). Each
// change waits until the revision before it is Complete, so that no change queues behind
// another one's work.
func timeChanges(ctx context.Context, env *framework.Env, first *firstSeen, dcs []types.NamespacedName, rev int64) (rsMS, podMS []float64, err error) {
	for n, dc := range dcs {
		rsName := stagehandv1.RevisionName(dc.Name, rev)
		var start time.Time
		if err := changeDC(ctx, env.Stagehand.StagehandV1alpha1().DeploymentConfigs(dc.Namespace), dc.Name, int(rev), &start); err != nil {
			return nil, nil, fmt.Errorf("changing %s: %w", dc, err)
		}
		podAt, err := first.wait(ctx, podKey(dc.Namespace, rsName), 30*time.Second)
		if err != nil {
			return nil, nil, fmt.Errorf("change %d (%s): no deployer pod: %w", n+1, dc, err)
		}
		rsAt, _ := first.wait(ctx, rsKey(dc.Namespace, rsName), time.Second)
		podMS = append(podMS, sinceMS(start, podAt))
		rsMS = append(rsMS, sinceMS(start, rsAt))
		if err := waitRevisionComplete(ctx, env, dc.Namespace, dc.Name, rev, time.Minute); err != nil {
			return nil, nil, fmt.Errorf("change %d (%s): %w", n+1, dc, err)
		}
	}
	return rsMS, podMS, nil
}

// percentile is the nearest-rank percentile q (0–100) of xs; 0 for none.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(q / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func sinceMS(start, at time.Time) float64 {
	if at.IsZero() {
		return 0
	}
	return float64(at.Sub(start).Microseconds()) / 1000
}

// firstSeen records when a key was first seen and lets a caller wait for it.
type firstSeen struct {
	mu      sync.Mutex
	at      map[string]time.Time
	waiters map[string]chan struct{}
}

func newFirstSeen() *firstSeen {
	return &firstSeen{at: map[string]time.Time{}, waiters: map[string]chan struct{}{}}
}

func (f *firstSeen) see(key string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.at[key]; ok {
		return
	}
	f.at[key] = at
	if ch, ok := f.waiters[key]; ok {
		close(ch)
		delete(f.waiters, key)
	}
}

// wait returns when key was first seen, waiting up to limit for it.
func (f *firstSeen) wait(ctx context.Context, key string, limit time.Duration) (time.Time, error) {
	f.mu.Lock()
	if at, ok := f.at[key]; ok {
		f.mu.Unlock()
		return at, nil
	}
	ch, ok := f.waiters[key]
	if !ok {
		ch = make(chan struct{})
		f.waiters[key] = ch
	}
	f.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	case <-time.After(limit):
		return time.Time{}, fmt.Errorf("%s not seen within %s", key, limit)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[key], nil
}

// waitRevisionComplete waits (polling: this spaces the changes, it is no measurement)
// until revision rev of DC name is Complete.
func waitRevisionComplete(ctx context.Context, env *framework.Env, ns, name string, rev int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		dc, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dc.Status.LatestVersion == rev && dc.Status.Phase == stagehandv1.RevisionPhaseComplete {
			return nil
		}
		if dc.Status.LatestVersion >= rev && dc.Status.Phase == stagehandv1.RevisionPhaseFailed {
			return fmt.Errorf("revision %d failed: %v", rev, dc.Status.Conditions)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("revision %d not Complete after %s (latest %d, phase %q)", rev, limit, dc.Status.LatestVersion, dc.Status.Phase)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
