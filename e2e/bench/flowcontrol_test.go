package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flowBefore and flowAfter are two reads of an apiserver's APF metrics, in its own format.
const flowBefore = `# HELP apiserver_flowcontrol_dispatched_requests_total [STABLE] Number of requests executed by API Priority and Fairness subsystem
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 50
apiserver_flowcontrol_dispatched_requests_total{flow_schema="service-accounts",priority_level="workload-low"} 100
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="service-accounts",priority_level="workload-low",le="0.1"} 100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 1
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 100
apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="queue-full"} 1
apiserver_flowcontrol_current_inqueue_requests{flow_schema="service-accounts",priority_level="workload-low"} 7
`

const flowAfter = `apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 50
apiserver_flowcontrol_dispatched_requests_total{flow_schema="service-accounts",priority_level="workload-low"} 700
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-nodes",priority_level="system"} 30
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="service-accounts",priority_level="workload-low",le="0.1"} 650
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 7
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="service-accounts",priority_level="workload-low"} 700
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="service-accounts",priority_level="workload-low"} 3
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="service-accounts",priority_level="workload-low"} 100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="system-nodes",priority_level="system"} 0.003
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="system-nodes",priority_level="system"} 30
apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="queue-full"} 61
apiserver_flowcontrol_rejected_requests_total{flow_schema="service-accounts",priority_level="workload-low",reason="time-out"} 40
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 9
`

func TestFlowCounters(t *testing.T) {
	got := flowCounters(flowAfter)
	require.Len(t, got, 3, "one entry per flow schema and priority level, nothing from other metrics")
	sa := got[flowKey{"service-accounts", "workload-low"}]
	require.NotNil(t, sa)
	assert.Equal(t, 700.0, sa.dispatched)
	assert.Equal(t, 10.0, sa.waitSum, "the wait sums over execute=true and execute=false")
	assert.Equal(t, 800.0, sa.waitCount)
	assert.Equal(t, map[string]float64{"queue-full": 61, "time-out": 40}, sa.rejected)
	assert.Empty(t, flowCounters(`apiserver_request_total{verb="GET"} 3`), "an apiserver without APF has no classes")
}

func TestFlowSince(t *testing.T) {
	got := flowSince(flowCounters(flowBefore), flowCounters(flowAfter), 100)
	require.Len(t, got, 2, "exempt dispatched nothing during the part, so it is left out")

	sa := got[0]
	assert.Equal(t, "service-accounts", sa.FlowSchema, "the most dispatched class comes first")
	assert.Equal(t, "workload-low", sa.PriorityLevel)
	assert.Equal(t, 6.0, sa.DispatchedPerRollout)
	assert.Equal(t, 9.0, sa.WaitSeconds)
	assert.Equal(t, 700.0, sa.WaitRequests)
	assert.InDelta(t, 9.0/700*1000, sa.MeanWaitMS, 1e-9)
	assert.Equal(t, map[string]float64{"queue-full": 60, "time-out": 40}, sa.Rejected)

	nodes := got[1]
	assert.Equal(t, "system-nodes", nodes.FlowSchema, "a class new since the first read counts from zero")
	assert.Equal(t, 0.3, nodes.DispatchedPerRollout)
	assert.InDelta(t, 0.1, nodes.MeanWaitMS, 1e-9)
	assert.Nil(t, nodes.Rejected)

	wait, rejected := flowTotals(got)
	assert.InDelta(t, 9.003, wait, 1e-9)
	assert.Equal(t, 100.0, rejected)
}

func TestFlowControlMarkdown(t *testing.T) {
	render := func(ts ...*Throttle) string {
		var b strings.Builder
		flowControlMarkdown(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) },
			[]string{"DeploymentConfigs", "Deployments"}, ts)
		return b.String()
	}
	on := &Throttle{PriorityAndFairness: true, FlowControl: flowSince(flowCounters(flowBefore), flowCounters(flowAfter), 100)}
	exempt := &Throttle{PriorityAndFairness: true, FlowControl: []FlowClass{{FlowSchema: "exempt", PriorityLevel: "exempt", DispatchedPerRollout: 2}}}
	out := render(on, exempt)
	assert.Contains(t, out, "DeploymentConfigs 9.00 s, 100 rejected; Deployments 0.00 s, 0 rejected.")
	assert.Contains(t, out, "| DeploymentConfigs | service-accounts / workload-low | 6.0 | 12.86 ms | 9.00 s | 100 (queue-full 60, time-out 40) |")
	assert.Contains(t, out, "| DeploymentConfigs | system-nodes / system | 0.3 | 0.10 ms | 0.00 s | 0 |")
	assert.Contains(t, out, "| Deployments | exempt / exempt | 2.0 | — | — | 0 |", "exempt has no queue, so no wait")

	off := render(&Throttle{}, &Throttle{})
	assert.Contains(t, off, "without Priority and Fairness")
	assert.NotContains(t, off, "| side |")
}

func TestAPFSetup(t *testing.T) {
	assert.Contains(t, apfSetup(Machine{LocalCluster: true, PriorityAndFairness: true}), "on in its apiserver")
	assert.Contains(t, apfSetup(Machine{LocalCluster: true}), "off in its apiserver")
	assert.Contains(t, apfSetup(Machine{PriorityAndFairness: true}), "E2E_KUBECONFIG")
}
