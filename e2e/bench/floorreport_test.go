package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManyFloor(t *testing.T) {
	tests := []struct {
		name string
		r    ManyResult
		want *ManyFloor
	}{
		{
			name: "time, apiserver CPU and requests against the floor and the Deployments",
			r: ManyResult{FirstCount: 100, FirstDCMS: 18000, FirstDeploymentMS: 10000, FirstFloorMS: 15000,
				FirstCPUByBinary:           map[string]float64{"kube-apiserver": 9}, // 90 ms each
				FirstDeploymentCPUByBinary: map[string]float64{"kube-apiserver": 4}, // 40 ms each
				FirstFloorCPUByBinary:      map[string]float64{"kube-apiserver": 6}, // 60 ms each
				FirstDCThrottle:            &Throttle{TotalPerRollout: 36},
				FirstFloorThrottle:         &Throttle{TotalPerRollout: 24}},
			want: &ManyFloor{MS: 15000, DCRatio: 1.2, DeploymentRatio: 1.5, APIServerCPUMS: 60, DCAPIServerCPURatio: 1.5,
				DeploymentAPIServerCPURatio: 1.5, RequestsPerRollout: 24, DCRequestsRatio: 1.5},
		},
		{
			name: "no CPU by binary: time only",
			r:    ManyResult{FirstCount: 100, FirstDCMS: 12000, FirstDeploymentMS: 4000, FirstFloorMS: 10000},
			want: &ManyFloor{MS: 10000, DCRatio: 1.2, DeploymentRatio: 2.5},
		},
		{
			name: "floor skipped",
			r:    ManyResult{FirstCount: 100, FirstDCMS: 12000, FirstDeploymentMS: 4000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := manyFloor(&tt.r)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.InDelta(t, tt.want.MS, got.MS, 1e-9)
			assert.InDelta(t, tt.want.DCRatio, got.DCRatio, 1e-9)
			assert.InDelta(t, tt.want.DeploymentRatio, got.DeploymentRatio, 1e-9)
			assert.InDelta(t, tt.want.APIServerCPUMS, got.APIServerCPUMS, 1e-9)
			assert.InDelta(t, tt.want.DCAPIServerCPURatio, got.DCAPIServerCPURatio, 1e-9)
			assert.InDelta(t, tt.want.DeploymentAPIServerCPURatio, got.DeploymentAPIServerCPURatio, 1e-9)
			assert.InDelta(t, tt.want.RequestsPerRollout, got.RequestsPerRollout, 1e-9)
			assert.InDelta(t, tt.want.DCRequestsRatio, got.DCRequestsRatio, 1e-9)
		})
	}
}

func TestFloorTargets(t *testing.T) {
	r := &ManyResult{FirstCount: 300, FirstDCMS: 36000, FirstDeploymentMS: 10000, FirstFloorMS: 30000,
		FirstCPUByBinary:      map[string]float64{"kube-apiserver": 39}, // 130 ms each
		FirstFloorCPUByBinary: map[string]float64{"kube-apiserver": 30}} // 100 ms each
	ts := r.floorTargets()
	require.Len(t, ts, 2)
	assert.Equal(t, "300 first rollouts at once: DC time ≤ 1.15× the floor's", ts[0].Goal)
	assert.InDelta(t, 1.2, ts[0].Measured, 1e-9)
	assert.Equal(t, "missed", ts[0].Status)
	assert.Equal(t, "DCs 36.0 s, floor 30.0 s, Deployments 10.0 s", ts[0].Note)
	assert.InDelta(t, 1.3, ts[1].Measured, 1e-9)
	assert.Equal(t, "met", ts[1].Status, "1.3× is within the bound")
	assert.Equal(t, "130.0 ms against the floor's 100.0 ms", ts[1].Note)

	for _, tt := range (&ManyResult{FirstCount: 300, FirstDCMS: 36000}).floorTargets() {
		assert.Equal(t, "not measured", tt.Status, "%s: no floor in the run", tt.Goal)
	}
}

func TestFloorMarkdownGivesRatiosToTheFloorAndTheDeployments(t *testing.T) {
	r := &ManyResult{FirstCount: 100, FirstCPUs: 2, FirstDCMS: 18000, FirstDeploymentMS: 10000, FirstFloorMS: 15000,
		FirstFloorDeploymentsMS: 14000, FirstFloorPodsMS: 15000,
		FirstCPUByBinary:           map[string]float64{"kube-apiserver": 9},
		FirstDeploymentCPUByBinary: map[string]float64{"kube-apiserver": 4},
		FirstFloorCPUByBinary:      map[string]float64{"kube-apiserver": 6}}
	var b strings.Builder
	r.floorMarkdown(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	out := b.String()
	assert.Contains(t, out, "| DeploymentConfigs | 18.0 s | 1.20× | 1.80× | 90.0 ms | 1.50× | 2.25× |")
	assert.Contains(t, out, "| **floor**: Deployments + bare pods, together | 15.0 s | 1.00× | 1.50× | 60.0 ms | 1.00× | 1.50× |")
	assert.Contains(t, out, "the last Deployment was available at 14.0 s and the last bare pod Succeeded at 15.0 s")

	var none strings.Builder
	(&ManyResult{FirstCount: 100, FirstDeploymentMS: 10000}).floorMarkdown(func(format string, args ...any) { fmt.Fprintf(&none, format, args...) })
	assert.Equal(t, "The floor was not measured in this run (`-many-floor=false`).\n\n", none.String())
}
