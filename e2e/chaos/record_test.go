//go:build e2e

package chaos

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// recorder watches one namespace for the whole run: every deployer and hook pod ever
// created (by name, each UID once), and when each revision was created and first seen
// terminal. Its informers relist after an apiserver or etcd restart, so a pod created
// and deleted entirely within an outage could be missed; deployer pods are never
// deleted during a run, and hook pods live at least as long as their hook.
type recorder struct {
	mu       sync.Mutex
	podUIDs  map[string]map[types.UID]bool // deployer and hook pods: name → UIDs
	created  map[string]time.Time          // revision → creation
	terminal map[string]time.Time          // revision → first seen terminal
	phases   map[string]string             // revision → last phase and reason
	failures map[string]string             // revision → its Failed status reason, in full
	stop     chan struct{}
}

func newRecorder(ctx context.Context, ns string) (*recorder, error) {
	r := &recorder{podUIDs: map[string]map[types.UID]bool{}, created: map[string]time.Time{},
		terminal: map[string]time.Time{}, phases: map[string]string{}, failures: map[string]string{},
		stop: make(chan struct{})}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(ns))
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.pod,
		UpdateFunc: func(_, cur any) { r.pod(cur) },
	}); err != nil {
		return nil, err
	}
	rss := factory.Apps().V1().ReplicaSets().Informer()
	if _, err := rss.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.revision,
		UpdateFunc: func(_, cur any) { r.revision(cur) },
	}); err != nil {
		return nil, err
	}
	factory.Start(r.stop)
	factory.WaitForCacheSync(ctx.Done())
	return r, nil
}

func (r *recorder) pod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || (pod.Labels[stagehandv1.DeployerPodForLabel] == "" && pod.Labels[stagehandv1.HookStageLabel] == "") {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.podUIDs[pod.Name] == nil {
		r.podUIDs[pod.Name] = map[types.UID]bool{}
	}
	r.podUIDs[pod.Name][pod.UID] = true
}

func (r *recorder) revision(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok || rs.Labels[stagehandv1.ConfigLabel] == "" {
		return
	}
	phase := stagehandv1.RevisionPhase(rs.Annotations[stagehandv1.PhaseAnnotation])
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.created[rs.Name]; !ok {
		r.created[rs.Name] = rs.CreationTimestamp.Time
	}
	reason, _, _ := strings.Cut(rs.Annotations[stagehandv1.StatusReasonAnnotation], ":")
	r.phases[rs.Name] = strings.TrimSpace(string(phase) + " " + reason)
	if phase == stagehandv1.RevisionPhaseFailed {
		r.failures[rs.Name] = rs.Annotations[stagehandv1.StatusReasonAnnotation]
	}
	if _, seen := r.terminal[rs.Name]; !seen && phase.IsTerminal() {
		r.terminal[rs.Name] = time.Now()
	}
}

// duplicates lists the deployer and hook pod names that more than one pod carried.
func (r *recorder) duplicates() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, uids := range r.podUIDs {
		if len(uids) > 1 {
			out = append(out, name)
		}
	}
	return out
}

// counts is how many deployer and hook pods were recorded.
func (r *recorder) counts() (deployers, hooks int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.podUIDs {
		if len(name) > 7 && name[len(name)-7:] == "-deploy" {
			deployers++
		} else {
			hooks++
		}
	}
	return deployers, hooks
}

// overdue lists the revisions not terminal, or terminal later than timeout+grace after
// their creation, with what was seen of them.
func (r *recorder) overdue(timeout func(string) time.Duration, grace time.Duration) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, created := range r.created {
		end, ok := r.terminal[name]
		limit := timeout(name) + grace
		switch {
		case !ok:
			out = append(out, name+" never terminal (last "+r.phases[name]+")")
		case end.Sub(created) > limit:
			out = append(out, name+" terminal after "+end.Sub(created).Round(time.Second).String()+", over "+limit.String())
		}
	}
	return out
}

// outcomes counts the revisions by phase and reason.
func (r *recorder) outcomes() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, p := range r.phases {
		out[p]++
	}
	return out
}

// failed lists each failed revision with its status reason, for the report.
func (r *recorder) failed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.failures))
	for name, why := range r.failures {
		if len(why) > 300 {
			why = why[:297] + "..."
		}
		out = append(out, name+": "+why)
	}
	slices.Sort(out)
	return out
}

func (r *recorder) close() { close(r.stop) }
