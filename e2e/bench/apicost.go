package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

const (
	// apiCostSlack is the allowance: DC writes ≤ Deployment writes + apiCostSlack.
	apiCostSlack    = 10
	apiCostReplicas = 10
	// quietFor: a window ends once the namespace has had no request for this long.
	quietFor   = time.Second
	quietLimit = 30 * time.Second
)

// APICostResult is the apiserver requests of DeploymentConfig rollouts and of Deployment
// rollouts, from the apiserver's audit log.
type APICostResult struct {
	Replicas int32  `json:"replicas"`
	Strategy string `json:"strategy"`
	// AuditMode is the audit log backend's mode (see docs/localcluster.md).
	AuditMode string `json:"auditMode"`
	// Skipped says why nothing was measured.
	Skipped    string      `json:"skipped,omitempty"`
	DC         APICostSide `json:"dc"`
	Deployment APICostSide `json:"deployment"`
}

// APICostSide is the window of one rollout, the one with the median writes of its side:
// every request about its namespace, except the bench's own.
type APICostSide struct {
	Namespace string  `json:"namespace"`
	RolloutMS float64 `json:"rolloutMs"`
	WindowMS  float64 `json:"windowMs"`
	// Writes (create, update, patch, delete, deletecollection) and Reads (every other
	// verb: get, list, watch) leave out Events, which count every verb on events.
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	Events int `json:"events"`
	// The totals of every rollout of the side, in order.
	WritesPerRollout []int `json:"writesPerRollout"`
	ReadsPerRollout  []int `json:"readsPerRollout"`
	EventsPerRollout []int `json:"eventsPerRollout"`
	// Calls are by identity, resource[/subresource] and verb.
	Calls      []APICall      `json:"calls"`
	ByIdentity []IdentityCost `json:"byIdentity"`
	// ClusterScoped are the same identities' requests in the window outside any namespace
	// (nodes, leases of other namespaces are not counted): background, not in the totals.
	ClusterScoped []APICall `json:"clusterScoped,omitempty"`
}

// APICall is a count of requests of one kind.
type APICall struct {
	User     string `json:"user"`
	Resource string `json:"resource"`
	Verb     string `json:"verb"`
	Count    int    `json:"count"`
	// Failed counts the responses with a code of 400 or more (conflicts, say).
	Failed int `json:"failed,omitempty"`
}

// IdentityCost is one identity's totals.
type IdentityCost struct {
	User   string `json:"user"`
	Writes int    `json:"writes"`
	Reads  int    `json:"reads"`
	Events int    `json:"events"`
}

func measureAPICost(ctx context.Context, env *framework.Env, o options) (*APICostResult, error) {
	res := &APICostResult{Replicas: apiCostReplicas, Strategy: "Rolling", AuditMode: "batch"}
	path := env.AuditLogPath()
	if path == "" {
		res.Skipped = "the cluster has no audit log (a local cluster started with framework.StartOptions{AuditLog: true})"
		logf("  not measured: %s", res.Skipped)
		return res, nil
	}
	c := benchCase{Strategy: stagehandv1.DeploymentStrategyTypeRolling, Replicas: apiCostReplicas, limit: 3 * time.Minute}
	// Each rolls its workload to VERSION=version (1: creates it) and waits until it is at
	// rest, returning the milliseconds to complete.
	dc := func(ctx context.Context, ns string, version int) (float64, error) {
		if version == 1 {
			if _, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns).Create(ctx, newDC(c), metav1.CreateOptions{}); err != nil {
				return 0, err
			}
			return 0, settleDC(ctx, env, ns, dcName, c.Replicas, 1, c.limit)
		}
		t, err := timeRollout(ctx, env, ns, dcName, version, c.limit)
		if err != nil {
			return 0, err
		}
		return t.ms, settleDC(ctx, env, ns, dcName, c.Replicas, int64(version), c.limit)
	}
	deployment := func(ctx context.Context, ns string, version int) (float64, error) {
		client := env.Kube.AppsV1().Deployments(ns)
		start := time.Now()
		var err error
		if version == 1 {
			_, err = client.Create(ctx, newDeployment(c), metav1.CreateOptions{})
		} else {
			err = changeDeployment(ctx, client, deployName, version)
		}
		if err != nil {
			return 0, err
		}
		done, err := waitDeployment(ctx, env, ns, version, c.limit)
		return float64(done.Sub(start).Microseconds()) / 1000, err
	}
	var err error
	if res.DC, err = apiCostSide(ctx, env, path, "bench-api-dc-", o.rounds, dc); err != nil {
		return nil, fmt.Errorf("the DeploymentConfig side: %w", err)
	}
	if res.Deployment, err = apiCostSide(ctx, env, path, "bench-api-deploy-", o.rounds, deployment); err != nil {
		return nil, fmt.Errorf("the Deployment side: %w", err)
	}
	logf("  writes per rollout: DeploymentConfig %v, Deployment %v (median: %d vs %d; events %d vs %d)", res.DC.WritesPerRollout,
		res.Deployment.WritesPerRollout, res.DC.Writes, res.Deployment.Writes, res.DC.Events, res.Deployment.Events)
	return res, nil
}

// apiCostSide creates a namespace and a workload in it (roll, version 1), then rolls it
// out rounds times, each in its own window: the window opens once the namespace is
// quiet, and closes once it is quiet again after the rollout. It returns the window with
// the median writes, and every window's totals.
func apiCostSide(ctx context.Context, env *framework.Env, path, prefix string, rounds int,
	roll func(ctx context.Context, ns string, version int) (float64, error)) (APICostSide, error) {
	var sides []APICostSide
	ns, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		return APICostSide{}, err
	}
	defer func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	}()
	w := auditWindow{namespace: ns.Name, skipUserAgent: rest.DefaultKubernetesUserAgent()}
	for version := 1; version <= rounds+1; version++ {
		fi, err := os.Stat(path)
		if err != nil {
			return APICostSide{}, err
		}
		w.from = time.Now()
		rolloutMS, err := roll(ctx, ns.Name, version)
		if err != nil {
			return APICostSide{}, fmt.Errorf("rollout to version %d: %w", version, err)
		}
		if w.to, err = waitQuiet(ctx, path, fi.Size(), w, w.from); err != nil {
			return APICostSide{}, err
		}
		if version == 1 {
			continue // the first rollout only brings the workload to rest
		}
		f, err := openAt(path, fi.Size())
		if err != nil {
			return APICostSide{}, err
		}
		side, err := countAudit(f, w)
		f.Close()
		if err != nil {
			return APICostSide{}, err
		}
		side.Namespace, side.RolloutMS, side.WindowMS = ns.Name, rolloutMS, float64(w.to.Sub(w.from).Microseconds())/1000
		sides = append(sides, side)
	}
	if len(sides) == 0 {
		return APICostSide{}, errors.New("no rounds")
	}
	var writes, reads, events []int
	for _, s := range sides {
		writes, reads, events = append(writes, s.Writes), append(reads, s.Reads), append(events, s.Events)
	}
	slices.SortStableFunc(sides, func(a, b APICostSide) int { return a.Writes - b.Writes })
	mid := sides[len(sides)/2]
	mid.WritesPerRollout, mid.ReadsPerRollout, mid.EventsPerRollout = writes, reads, events
	return mid, nil
}

// waitQuiet polls the audit log from offset until no request of window w's namespace has
// arrived for quietFor, and returns when the last one (or since, if none) arrived.
func waitQuiet(ctx context.Context, path string, offset int64, w auditWindow, since time.Time) (time.Time, error) {
	last := since
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, quietLimit, false, func(context.Context) (bool, error) {
		f, err := openAt(path, offset)
		if err != nil {
			return false, err
		}
		defer f.Close()
		err = scanAudit(f, func(e *auditEvent) {
			if e.ObjectRef != nil && e.ObjectRef.Namespace == w.namespace && e.UserAgent != w.skipUserAgent && e.RequestReceivedTimestamp.After(last) {
				last = e.RequestReceivedTimestamp
			}
		})
		return time.Since(last) >= quietFor, err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("waiting for namespace %s to be quiet for %s: %w", w.namespace, quietFor, err)
	}
	return last.Add(time.Millisecond), nil
}

func openAt(path string, offset int64) (*os.File, error) {
	f, err := os.Open(path)
	if err == nil {
		if _, err = f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
		}
	}
	return f, err
}

// waitDeployment waits (polling) until Deployment deployName is complete at VERSION
// version, and returns when it saw that. The pods still terminating then are waited for
// by waitQuiet.
func waitDeployment(ctx context.Context, env *framework.Env, ns string, version int, limit time.Duration) (time.Time, error) {
	var seen time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, deployName, metav1.GetOptions{})
		seen = time.Now()
		return err == nil && versionOf(&d.Spec.Template) == strconv.Itoa(version) && deploymentDone(d), err
	})
	if err != nil {
		return seen, fmt.Errorf("waiting for the Deployment to complete version %d: %w", version, err)
	}
	return seen, nil
}

func (r *APICostResult) targets() []Target {
	goal := fmt.Sprintf("API writes per rollout ≤ the Deployment's + %d (%d replicas, Rolling; events not counted)", apiCostSlack, r.Replicas)
	if r.Skipped != "" {
		return []Target{{Goal: goal, Status: "not measured", Note: r.Skipped}}
	}
	limit := float64(r.Deployment.Writes + apiCostSlack)
	return []Target{{
		Goal:     goal,
		Limit:    limit,
		Measured: float64(r.DC.Writes),
		Case:     fmt.Sprintf("%s/replicas=%d", r.Strategy, r.Replicas),
		Status:   status(float64(r.DC.Writes) <= limit),
		Note: fmt.Sprintf("median rollouts: Deployment %d writes; with events DC %d, Deployment %d",
			r.Deployment.Writes, r.DC.Writes+r.DC.Events, r.Deployment.Writes+r.Deployment.Events),
	}}
}

func (r *APICostResult) markdown(p func(format string, args ...any)) {
	p("## API cost per rollout\n\n")
	if r.Skipped != "" {
		p("Not measured: %s.\n", r.Skipped)
		return
	}
	q := ms(float64(quietFor.Milliseconds()))
	p("A DeploymentConfig and a Deployment (%d replicas, %s, maxSurge/maxUnavailable 25%%), each alone in its own\n", r.Replicas, r.Strategy)
	p("namespace and never at the same time, roll out %d template changes each, counted from the apiserver's audit log\n", len(r.DC.WritesPerRollout))
	p("(level Metadata, `--audit-log-mode=%s` with batches of one event, written right away off the request's path). Each rollout has\n", r.AuditMode)
	p("its own window: it opens once the namespace has been quiet for %s and closes once the revision is complete, its\n", q)
	p("pods are at rest and the namespace has been quiet for %s again. A window counts every request about the namespace\n", q)
	p("by anyone but the bench (its own client-go user agent), once each (a watch when it starts). Writes are create,\n")
	p("update, patch, delete and deletecollection; reads are every other verb (get, list, watch); requests on `events`\n")
	p("are counted apart from both. The target compares writes without events. The tables show, for each side, the\n")
	p("rollout with the median writes.\n\n")
	p("| | DeploymentConfig | Deployment |\n|---|---|---|\n")
	p("| writes (median rollout) | **%d** | **%d** |\n", r.DC.Writes, r.Deployment.Writes)
	p("| writes of each rollout | %s | %s |\n", ints(r.DC.WritesPerRollout), ints(r.Deployment.WritesPerRollout))
	p("| reads of each rollout | %s | %s |\n", ints(r.DC.ReadsPerRollout), ints(r.Deployment.ReadsPerRollout))
	p("| events of each rollout | %s | %s |\n", ints(r.DC.EventsPerRollout), ints(r.Deployment.EventsPerRollout))
	p("| rollout: template change → complete (the Deployment's polled every 100 ms) | %s | %s |\n", ms(r.DC.RolloutMS), ms(r.Deployment.RolloutMS))
	p("| template change → the namespace's last request | %s | %s |\n\n", ms(r.DC.WindowMS), ms(r.Deployment.WindowMS))
	// One row per identity, resource and verb, with both sides' counts.
	rows := map[callKey][2]string{}
	var keys []callKey
	for i, cs := range [][]APICall{r.DC.Calls, r.Deployment.Calls} {
		for _, c := range cs {
			k := callKey{c.User, c.Resource, c.Verb}
			row, ok := rows[k]
			if !ok {
				keys, row = append(keys, k), [2]string{"0", "0"}
			}
			if row[i] = strconv.Itoa(c.Count); c.Failed > 0 {
				row[i] += fmt.Sprintf(" (%d failed)", c.Failed)
			}
			rows[k] = row
		}
	}
	slices.SortFunc(keys, func(a, b callKey) int { return strings.Compare(a.String(), b.String()) })
	p("Requests by identity, resource and verb (`<ns>` is the rollout's namespace; failed: a response code ≥ 400):\n\n")
	p("| identity | resource | verb | DeploymentConfig | Deployment |\n|---|---|---|---|---|\n")
	for _, k := range keys {
		p("| %s | %s | %s | %s | %s |\n", k.user, k.resource, k.verb, rows[k][0], rows[k][1])
	}
	p("\nThe same identities' cluster-scoped requests in the windows (background such as Node status, not in the totals):\n")
	p("%d for the DeploymentConfig, %d for the Deployment; performance.json lists them.\n", sum(r.DC.ClusterScoped), sum(r.Deployment.ClusterScoped))
}

func ints(xs []int) string {
	var out []string
	for _, x := range xs {
		out = append(out, strconv.Itoa(x))
	}
	return strings.Join(out, ", ")
}

func sum(cs []APICall) int {
	n := 0
	for _, c := range cs {
		n += c.Count
	}
	return n
}
