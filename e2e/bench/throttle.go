package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// Throttle is what held requests back during one part of the many-rollouts bench, and
// what the apiserver was asked: the controller's client-side rate-limiter wait (client-go's
// rest_client_rate_limiter_duration_seconds, summed over every request of the part), the
// apiserver's Priority and Fairness queueing by flow schema and priority level (see
// FlowClass), and the apiserver's requests by resource and verb (apiserver_request_total),
// per rollout.
type Throttle struct {
	// RateLimiterWaitSeconds is the controller's total wait in its rate limiter; nil when
	// its metrics could not be read.
	RateLimiterWaitSeconds *float64 `json:"rateLimiterWaitSeconds,omitempty"`
	// RateLimiterRequests is how many requests went through the limiter.
	RateLimiterRequests float64 `json:"rateLimiterRequests,omitempty"`
	// RequestsPerRollout is the apiserver's requests per rollout, "resource[/subresource]
	// VERB" → count, for the most frequent ones.
	RequestsPerRollout map[string]float64 `json:"requestsPerRollout,omitempty"`
	// TotalPerRollout counts every request per rollout.
	TotalPerRollout float64 `json:"totalPerRollout,omitempty"`
	// PriorityAndFairness is whether the apiserver dispatched requests through API Priority
	// and Fairness (false: it ran without, or its metrics could not be read).
	PriorityAndFairness bool `json:"priorityAndFairness"`
	// FlowControl is what each flow schema and priority level went through during the part.
	FlowControl []FlowClass `json:"flowControl,omitempty"`
}

// metricsSnapshot is the counters a Throttle is the difference of.
type metricsSnapshot struct {
	limiterSum, limiterCount float64
	limiterOK                bool
	requests                 map[string]float64
	flow                     map[flowKey]*flowCounts
}

// snapshotMetrics reads the controller's and the apiserver's metrics now.
func snapshotMetrics(ctx context.Context, env *framework.Env) metricsSnapshot {
	var s metricsSnapshot
	if text, err := controllerMetrics(ctx, env); err == nil {
		s.limiterSum = sumSeries(text, "rest_client_rate_limiter_duration_seconds_sum")
		s.limiterCount = sumSeries(text, "rest_client_rate_limiter_duration_seconds_count")
		s.limiterOK = true
	} else {
		logf("many: the controller's metrics: %v", err)
	}
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("many: the apiserver's metrics: %v", err)
		return s
	}
	s.requests = apiserverRequests(string(raw))
	s.flow = flowCounters(string(raw))
	return s
}

// throttleSince is the Throttle of the part between before and now, for rollouts rollouts.
func throttleSince(ctx context.Context, env *framework.Env, before metricsSnapshot, rollouts int) *Throttle {
	after := snapshotMetrics(ctx, env)
	t := &Throttle{}
	if before.limiterOK && after.limiterOK {
		wait := after.limiterSum - before.limiterSum
		t.RateLimiterWaitSeconds, t.RateLimiterRequests = &wait, after.limiterCount-before.limiterCount
	}
	per := map[string]float64{}
	for k, v := range after.requests {
		if d := v - before.requests[k]; d > 0 && rollouts > 0 {
			per[k] = d / float64(rollouts)
			t.TotalPerRollout += d / float64(rollouts)
		}
	}
	t.RequestsPerRollout = topCPU(per, 10)
	t.PriorityAndFairness = len(after.flow) > 0
	t.FlowControl = flowSince(before.flow, after.flow, rollouts)
	return t
}

// controllerMetrics reads the leader controller's /metrics at its pod's IP (the local
// cluster gives the controller's pods IPs of their own, on the host; see
// docs/localcluster.md): the standby's counters never move.
func controllerMetrics(ctx context.Context, env *framework.Env) (string, error) {
	leader, err := env.Leader(ctx)
	if err != nil || leader == "" {
		return "", fmt.Errorf("no controller holds the leader Lease (%v)", err)
	}
	pod, err := env.Kube.CoreV1().Pods(framework.ControllerNamespace).Get(ctx, leader, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("the leader pod %s has no IP yet", leader)
	}
	code, body, err := controllerGet(ctx, pod.Status.PodIP, "/metrics", 10*time.Second)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET /metrics of %s: %d %s", leader, code, body)
	}
	return body, err
}

// controllerGet sends GET path to the controller's metrics and health port at a pod IP,
// within limit, and returns the status code and the body.
func controllerGet(ctx context.Context, ip, path string, limit time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, "8080")+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// sumSeries adds up every series of one metric in Prometheus text.
func sumSeries(text, name string) float64 {
	var sum float64
	eachSeries(text, func(n string, _ map[string]string, v float64) {
		if n == name {
			sum += v
		}
	})
	return sum
}

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// eachSeries calls fn with every sample of Prometheus text: its metric name, its labels
// and its value. Comments and lines it cannot read are skipped.
func eachSeries(text string, fn func(name string, labels map[string]string, v float64)) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if open := strings.IndexByte(line, '{'); open >= 0 {
			end := strings.LastIndexByte(line, '}')
			if end < open {
				continue
			}
			name, rest = line[:open], line[end+1:]
			for _, m := range labelRE.FindAllStringSubmatch(line[open:end], -1) {
				labels[m[1]] = m[2]
			}
		} else if sp := strings.IndexByte(line, ' '); sp >= 0 {
			name, rest = line[:sp], line[sp:]
		}
		fields := strings.Fields(rest) // the value, then an optional timestamp
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			fn(name, labels, v)
		}
	}
}

// apiserverRequests sums apiserver_request_total by "resource[/subresource] VERB".
func apiserverRequests(text string) map[string]float64 {
	out := map[string]float64{}
	eachSeries(text, func(name string, labels map[string]string, v float64) {
		if name != "apiserver_request_total" {
			return
		}
		key := labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key+" "+labels["verb"]] += v
	})
	return out
}

// requestsList renders the requests per rollout, most first.
func requestsList(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// throttleMarkdown writes what held the first rollouts back and what they cost the
// apiserver, per rollout, for each side.
func (r *ManyResult) throttleMarkdown(p func(format string, args ...any)) {
	perRollout := func(cpu map[string]float64, name string) string {
		if v, ok := cpu[name]; ok && r.FirstCount > 0 {
			return fmt.Sprintf("%.1f ms", v/float64(r.FirstCount)*1000)
		}
		return "not measured"
	}
	p("| per first rollout | DeploymentConfig | Deployment |\n|---|---|---|\n")
	p("| kube-apiserver CPU | %s | %s |\n", perRollout(r.FirstCPUByBinary, "kube-apiserver"), perRollout(r.FirstDeploymentCPUByBinary, "kube-apiserver"))
	p("| etcd CPU | %s | %s |\n", perRollout(r.FirstCPUByBinary, "etcd"), perRollout(r.FirstDeploymentCPUByBinary, "etcd"))
	if r.FirstDCThrottle != nil && r.FirstDeploymentThrottle != nil {
		p("| apiserver requests | %.1f | %.1f |\n\n", r.FirstDCThrottle.TotalPerRollout, r.FirstDeploymentThrottle.TotalPerRollout)
		switch w := r.FirstDCThrottle.RateLimiterWaitSeconds; {
		case w != nil && r.FirstDCThrottle.RateLimiterRequests == 0:
			p("The controller ran without a client-side rate limiter (its default where the apiserver runs Priority and\n")
			p("Fairness): none of its requests waited in one (client-go's `rest_client_rate_limiter_duration_seconds` counted none).\n\n")
		case w != nil:
			p("The controller's client-side rate limiter (`--kube-api-qps`, `--kube-api-burst`) held its %.0f requests back for\n", r.FirstDCThrottle.RateLimiterRequests)
			p("%.1f s in all while the DeploymentConfigs rolled out (client-go's `rest_client_rate_limiter_duration_seconds`).\n\n", *w)
		}
		flowControlMarkdown(p, []string{"DeploymentConfigs", "Deployments"}, []*Throttle{r.FirstDCThrottle, r.FirstDeploymentThrottle})
		p("The apiserver's most frequent requests per rollout (`apiserver_request_total`, the bench's own requests included, for both sides alike):\n")
		p("DeploymentConfigs: %s. Deployments: %s.\n\n", requestsList(r.FirstDCThrottle.RequestsPerRollout), requestsList(r.FirstDeploymentThrottle.RequestsPerRollout))
	}
}
