package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// The apiserver's API Priority and Fairness (APF) metrics that a Throttle reads. Each series
// carries the flow schema that classified the request and the priority level it queued at.
const (
	// flowDispatched counts the requests APF let through to their handler.
	flowDispatched = "apiserver_flowcontrol_dispatched_requests_total"
	// flowRejected counts the requests APF refused (a 429), by reason: queue-full,
	// concurrency-limit or time-out.
	flowRejected = "apiserver_flowcontrol_rejected_requests_total"
	// flowWait is a histogram of the time a request spent in its priority level's queue;
	// its label execute says whether the request then ran. The exempt priority level has
	// no queue, so its requests have no wait series.
	flowWait = "apiserver_flowcontrol_request_wait_duration_seconds"
)

// FlowClass is what one flow schema and priority level went through during a part of the
// bench: the flow schema is the view by identity (a controller's ServiceAccount, the
// kube-system controllers, the nodes, the admin), the priority level the queue it shares.
type FlowClass struct {
	FlowSchema    string `json:"flowSchema"`
	PriorityLevel string `json:"priorityLevel"`
	// DispatchedPerRollout is the requests APF let through, per rollout.
	DispatchedPerRollout float64 `json:"dispatchedPerRollout"`
	// WaitSeconds is the time the class's requests spent in APF's queue in all, over
	// WaitRequests requests (those that ran and those rejected after waiting);
	// MeanWaitMS is their mean.
	WaitSeconds  float64 `json:"waitSeconds"`
	WaitRequests float64 `json:"waitRequests"`
	MeanWaitMS   float64 `json:"meanWaitMs"`
	// Rejected counts the requests APF refused, by reason.
	Rejected map[string]float64 `json:"rejected,omitempty"`
}

// rejectedTotal is the class's rejected requests over every reason.
func (c FlowClass) rejectedTotal() float64 {
	var n float64
	for _, v := range c.Rejected {
		n += v
	}
	return n
}

// flowKey names a flow schema and the priority level its requests went to.
type flowKey struct{ schema, level string }

// flowCounts are one flowKey's APF counters at one moment.
type flowCounts struct {
	dispatched, waitSum, waitCount float64
	rejected                       map[string]float64
}

// flowCounters reads the APF counters out of the apiserver's metrics text, by flow schema and
// priority level, summed over every other label. An apiserver without APF dispatches nothing
// through it, so the map is then empty.
func flowCounters(text string) map[flowKey]*flowCounts {
	out := map[flowKey]*flowCounts{}
	eachSeries(text, func(name string, labels map[string]string, v float64) {
		if !strings.HasPrefix(name, "apiserver_flowcontrol_") {
			return
		}
		at := func() *flowCounts {
			k := flowKey{labels["flow_schema"], labels["priority_level"]}
			if out[k] == nil {
				out[k] = &flowCounts{rejected: map[string]float64{}}
			}
			return out[k]
		}
		switch name {
		case flowDispatched:
			at().dispatched += v
		case flowRejected:
			at().rejected[labels["reason"]] += v
		case flowWait + "_sum":
			at().waitSum += v
		case flowWait + "_count":
			at().waitCount += v
		}
	})
	return out
}

// flowSince is what each flow schema and priority level went through between two reads of
// the counters, for rollouts rollouts: the classes that saw a request, most dispatched first.
func flowSince(before, after map[flowKey]*flowCounts, rollouts int) []FlowClass {
	var out []FlowClass
	for k, a := range after {
		b := before[k]
		if b == nil {
			b = &flowCounts{}
		}
		c := FlowClass{FlowSchema: k.schema, PriorityLevel: k.level,
			WaitSeconds: a.waitSum - b.waitSum, WaitRequests: a.waitCount - b.waitCount}
		if rollouts > 0 {
			c.DispatchedPerRollout = (a.dispatched - b.dispatched) / float64(rollouts)
		}
		if c.WaitRequests > 0 {
			c.MeanWaitMS = c.WaitSeconds / c.WaitRequests * 1000
		}
		for reason, v := range a.rejected {
			if d := v - b.rejected[reason]; d > 0 {
				if c.Rejected == nil {
					c.Rejected = map[string]float64{}
				}
				c.Rejected[reason] = d
			}
		}
		if c.DispatchedPerRollout > 0 || c.WaitRequests > 0 || c.Rejected != nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DispatchedPerRollout != out[j].DispatchedPerRollout {
			return out[i].DispatchedPerRollout > out[j].DispatchedPerRollout
		}
		return out[i].FlowSchema < out[j].FlowSchema
	})
	return out
}

// flowTotals sums a part's queue wait and rejections over every class.
func flowTotals(classes []FlowClass) (waitSeconds, rejected float64) {
	for _, c := range classes {
		waitSeconds += c.WaitSeconds
		rejected += c.rejectedTotal()
	}
	return waitSeconds, rejected
}

// flowControlOn reports whether the apiserver dispatches requests through API Priority and
// Fairness, from its metrics (false too when they cannot be read).
func flowControlOn(ctx context.Context, env *framework.Env) bool {
	raw, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("the apiserver's metrics: %v", err)
		return false
	}
	return len(flowCounters(string(raw))) > 0
}

// apfSetup says how the run's apiserver handled Priority and Fairness, for the report's
// description of the cluster.
func apfSetup(m Machine) string {
	switch {
	case !m.LocalCluster:
		return fmt.Sprintf("(here E2E_KUBECONFIG's cluster, whose apiserver's metrics showed API Priority and Fairness %s)",
			map[bool]string{true: "on", false: "off"}[m.PriorityAndFairness])
	case m.PriorityAndFairness:
		return "with API Priority and Fairness on in its apiserver, as real clusters run it (the default FlowSchemas and\n" +
			"priority levels, which the apiserver creates itself; `-apf=false` turns it off),"
	default:
		return "with API Priority and Fairness off in its apiserver (`-apf=false`, or a run before the bench turned it on),"
	}
}

// flowControlMarkdown writes the apiserver's queueing while each side's first rollouts ran:
// by flow schema and priority level, or, without APF, that nothing queued.
func flowControlMarkdown(p func(format string, args ...any), sides []string, ts []*Throttle) {
	on := false
	for _, t := range ts {
		on = on || t.PriorityAndFairness
	}
	if !on {
		p("The apiserver ran without Priority and Fairness (`-apf=false`, or a run before the bench turned it on), so no\n")
		p("request waited in a server-side queue.\n\n")
		return
	}
	waits := make([]string, len(ts))
	for i, t := range ts {
		wait, rejected := flowTotals(t.FlowControl)
		waits[i] = fmt.Sprintf("%s %.2f s, %.0f rejected", sides[i], wait, rejected)
	}
	p("The apiserver ran with Priority and Fairness on. Its queues held requests back, summed over every request (waits\n")
	p("overlap, so the sum may exceed the part's length): %s.\n", strings.Join(waits, "; "))
	p("By flow schema (who asked) and priority level (the queue it shared), from\n")
	p("`%s`, `%s` (`_sum`, `_count`)\n", flowDispatched, flowWait)
	p("and `%s`, over each side's part (the bench's own requests included). ServiceAccounts,\n", flowRejected)
	p("the controller's and the deployers', land in `service-accounts`; `exempt` (no queue) takes `system:masters`, which\n")
	p("here holds the bench, the node agent and kube-controller-manager (the local cluster gives it that group):\n\n")
	p("| side | flow schema / priority level | dispatched per rollout | mean queue wait | total wait | rejected |\n")
	p("|---|---|---|---|---|---|\n")
	for i, t := range ts {
		for _, c := range t.FlowControl {
			mean, total := "—", "—"
			if c.WaitRequests > 0 {
				mean, total = fmt.Sprintf("%.2f ms", c.MeanWaitMS), fmt.Sprintf("%.2f s", c.WaitSeconds)
			}
			p("| %s | %s / %s | %.1f | %s | %s | %s |\n", sides[i], c.FlowSchema, c.PriorityLevel,
				c.DispatchedPerRollout, mean, total, rejectedList(c.Rejected))
		}
	}
	p("\n")
}

// rejectedList writes rejections by reason as "3 (queue-full 2, time-out 1)", or "0".
func rejectedList(m map[string]float64) string {
	if len(m) == 0 {
		return "0"
	}
	reasons := make([]string, 0, len(m))
	var total float64
	for r, v := range m {
		reasons = append(reasons, r)
		total += v
	}
	sort.Strings(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %.0f", r, m[r])
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}
