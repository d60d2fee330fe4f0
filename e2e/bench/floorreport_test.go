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
			name: "Deployment plus bare pod, time, apiserver CPU and requests",
			r: ManyResult{FirstCount: 100, FirstDeploymentMS: 10000, FirstBarePodMS: 5000,
				FirstDeploymentCPUByBinary: map[string]float64{"kube-apiserver": 4}, // 40 ms each
				FirstBarePodCPUByBinary:    map[string]float64{"kube-apiserver": 2}, // 20 ms each
				FirstDeploymentThrottle:    &Throttle{TotalPerRollout: 15},
				FirstBarePodThrottle:       &Throttle{TotalPerRollout: 9}},
			want: &ManyFloor{MS: 15000, Ratio: 1.5, APIServerCPUMS: 60, APIServerCPURatio: 1.5, RequestsPerRollout: 24},
		},
		{
			name: "no CPU by binary: time only",
			r:    ManyResult{FirstCount: 100, FirstDeploymentMS: 4000, FirstBarePodMS: 6000},
			want: &ManyFloor{MS: 10000, Ratio: 2.5},
		},
		{
			name: "bare pods skipped",
			r:    ManyResult{FirstCount: 100, FirstDeploymentMS: 4000},
		},
		{
			name: "Deployments not measured",
			r:    ManyResult{FirstCount: 100, FirstBarePodMS: 4000},
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
			assert.InDelta(t, tt.want.Ratio, got.Ratio, 1e-9)
			assert.InDelta(t, tt.want.APIServerCPUMS, got.APIServerCPUMS, 1e-9)
			assert.InDelta(t, tt.want.APIServerCPURatio, got.APIServerCPURatio, 1e-9)
			assert.InDelta(t, tt.want.RequestsPerRollout, got.RequestsPerRollout, 1e-9)
		})
	}
}

func TestFloorMarkdownWritesTheFloorLine(t *testing.T) {
	r := &ManyResult{FirstCount: 100, FirstDCMS: 30000, FirstDeploymentMS: 10000, FirstBarePodMS: 5000, FirstRatio: 3,
		FirstDeploymentCPUByBinary: map[string]float64{"kube-apiserver": 4},
		FirstBarePodCPUByBinary:    map[string]float64{"kube-apiserver": 2}}
	r.Floor = manyFloor(r)
	var b strings.Builder
	r.floorMarkdown(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	out := b.String()
	assert.Contains(t, out, "| 100 bare run-once pods (the deployer pod's floor) | 5.00 s | 20.0 ms |")
	assert.Contains(t, out, "Floor of a DC rollout = Deployment + bare pod: **15.0 s**, i.e. **1.50×** the Deployments' time; apiserver CPU 60.0 ms per rollout = 1.50× the Deployment's.")
	assert.Contains(t, out, "leaves 0.50× (5.00 s) for the rest of a DC's work; the DCs took 3.00×")

	var none strings.Builder
	(&ManyResult{FirstCount: 100, FirstDeploymentMS: 10000}).floorMarkdown(func(format string, args ...any) { fmt.Fprintf(&none, format, args...) })
	assert.Empty(t, none.String(), "nothing is written when the bare pods were skipped")
}
