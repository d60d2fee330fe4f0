package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func taxPhases(cpu ...float64) []TaxPhase {
	names := []string{taxBefore, taxInstalled, taxAfter}
	var ps []TaxPhase
	for i, c := range cpu {
		ps = append(ps, TaxPhase{Name: names[i%3], APIServerCPUSeconds: c, Requests: 10 * c, MS: 1000 * c})
	}
	return ps
}

func TestTaxRatios(t *testing.T) {
	tests := []struct {
		name                  string
		phases                []TaxPhase
		first, second, mean   float64
		ok                    bool
		wantStatus, wantRatio string
	}{
		{name: "the issue's manual run: 10.4, 13.0, 10.0", phases: taxPhases(10.4, 13.0, 10.0),
			first: 13.0 / 10.4, second: 1.3, mean: 13.0 / 10.2, ok: true, wantStatus: "missed", wantRatio: "1.27"},
		{name: "no tax", phases: taxPhases(10, 10, 10), first: 1, second: 1, mean: 1, ok: true, wantStatus: "met", wantRatio: "1.00"},
		{name: "drift: the mean cancels it", phases: taxPhases(9, 10.4, 11), first: 10.4 / 9, second: 10.4 / 11, mean: 1.04, ok: true,
			wantStatus: "met", wantRatio: "1.04"},
		{name: "the last phase missing", phases: taxPhases(10, 11), wantStatus: "not measured"},
		{name: "a phase without CPU", phases: taxPhases(10, 0, 10), wantStatus: "not measured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := TaxResult{Deployments: 300, Phases: tt.phases}
			first, second, mean, ok := r.taxRatios(taxCPU)
			require.Equal(t, tt.ok, ok)
			assert.InDelta(t, tt.first, first, 1e-9)
			assert.InDelta(t, tt.second, second, 1e-9)
			assert.InDelta(t, tt.mean, mean, 1e-9)
			// Requests and time scale with CPU here: the same ratios.
			_, _, reqMean, _ := r.taxRatios(taxRequests)
			assert.InDelta(t, tt.mean, reqMean, 1e-9)

			ts := r.targets()
			require.Len(t, ts, 1)
			assert.Equal(t, tt.wantStatus, ts[0].Status)
			assert.Contains(t, ts[0].Goal, "300 Deployments")
			if tt.ok {
				assert.Equal(t, tt.wantRatio, ts[0].format())
				assert.Equal(t, ts[0].Measured <= taxTarget, ts[0].Status == "met")
			}
		})
	}
}

func TestTaxSkipped(t *testing.T) {
	r := TaxResult{Deployments: 300, Skipped: "needs the local cluster"}
	ts := r.targets()
	require.Len(t, ts, 1)
	assert.Equal(t, "not measured", ts[0].Status)
	assert.Contains(t, ts[0].Note, "needs the local cluster")
	var b strings.Builder
	r.markdown(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	assert.Contains(t, b.String(), "Not run: needs the local cluster.")
}

func TestTaxMarkdown(t *testing.T) {
	r := TaxResult{Deployments: 300, Phases: taxPhases(10.4, 13.0, 10.0), InstallMS: 4000, UninstallMS: 2000}
	r.Phases[1].PolicySeconds = map[string]float64{"match stagehand-controller-pods": 0.5, "check stagehand-revision-snapshot": 1.25}
	r.Phases[1].WatchEvents = map[string]float64{"pods": 900, "replicasets": 1200}
	var b strings.Builder
	r.markdown(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	md := b.String()
	assert.Contains(t, md, "| before install | 10.4 s | 10.4 s | 0.0 s | 104 |")
	assert.Contains(t, md, "| installed | 13.0 s | 13.0 s | 0.0 s | 130 |")
	assert.NotContains(t, md, "\n| apiserver CPU, settled |", "no settled CPU measured: no ratio row")
	assert.Contains(t, md, "| apiserver CPU | 1.25 | 1.30 | **1.27** |")
	assert.Contains(t, md, "| requests | 1.25 | 1.30 | **1.27** |")
	assert.Contains(t, md, "policies check stagehand-revision-snapshot 1.25 s, match stagehand-controller-pods 0.50 s; watch events replicasets 1200, pods 900.")
	assert.Contains(t, md, "- before install: plugins none; policies none; watch events none.")
}

func TestParseTaxMetrics(t *testing.T) {
	text := `# HELP apiserver_request_total x
apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 7
apiserver_request_total{code="200",resource="pods",subresource="status",verb="PATCH"} 3
apiserver_admission_controller_admission_duration_seconds_sum{name="ValidatingAdmissionPolicy",operation="CREATE",rejected="false",type="validate"} 0.5
apiserver_admission_controller_admission_duration_seconds_sum{name="ValidatingAdmissionPolicy",operation="UPDATE",rejected="false",type="validate"} 0.25
apiserver_admission_controller_admission_duration_seconds_count{name="ValidatingAdmissionPolicy",operation="CREATE",rejected="false",type="validate"} 9
apiserver_validating_admission_policy_check_duration_seconds_sum{enforcement_action="allow",error_type="no_error",policy="stagehand-controller-pods",policy_binding="stagehand-controller-pods"} 0.125
apiserver_admission_match_condition_evaluation_seconds_sum{name="stagehand-controller-pods",type="validating"} 0.5
apiserver_watch_events_total{group="apps",resource="replicasets",version="v1"} 40
apiserver_watch_events_total{group="",kind="Pod",version="v1"} 30
`
	m := parseTaxMetrics(text)
	assert.Equal(t, map[string]float64{"pods POST": 7, "pods/status PATCH": 3}, m.requests)
	assert.Equal(t, map[string]float64{"ValidatingAdmissionPolicy": 0.75}, m.admission)
	assert.Equal(t, map[string]float64{"check stagehand-controller-pods": 0.125, "match stagehand-controller-pods": 0.5}, m.policies)
	assert.Equal(t, map[string]float64{"replicasets": 40, "Pod": 30}, m.watchEvents)
	assert.Equal(t, map[string]float64{"pods POST": 2}, diffSeries(map[string]float64{"pods POST": 5, "pods/status PATCH": 3}, m.requests))
}

func TestIdle(t *testing.T) {
	tests := []struct {
		name string
		used float64
		want bool
	}{
		{name: "busy", used: 1.5, want: false},
		{name: "just above the threshold", used: 0.31, want: false},
		{name: "quiet", used: 0.05, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, idle(tt.used, 3*time.Second))
		})
	}
}

func TestTaxExplain(t *testing.T) {
	r := TaxResult{Deployments: 300, Phases: taxPhases(8, 9, 8)}
	for i := range r.Phases {
		r.Phases[i].AdmissionSeconds = map[string]float64{"ValidatingAdmissionPolicy": 0.02, "MutatingAdmissionPolicy": 0.03}
		r.Phases[i].WatchEvents = map[string]float64{"pods": 4500}
	}
	r.Phases[1].AdmissionSeconds = map[string]float64{"ValidatingAdmissionPolicy": 0.42, "MutatingAdmissionPolicy": 0.07}
	r.Phases[1].WatchEvents = map[string]float64{"pods": 5700}
	why, closeIt := r.explain()
	assert.Contains(t, why, "9.0 s of CPU against 8.0 s without")
	assert.Contains(t, why, "0.42 s in ValidatingAdmissionPolicy against 0.02 s")
	assert.Contains(t, why, "0.07 s in MutatingAdmissionPolicy against 0.03 s")
	assert.Contains(t, why, "5700 pod watch events against 4500")
	assert.NotEmpty(t, closeIt)

	why, _ = (&TaxResult{Phases: taxPhases(8, 9)}).explain()
	assert.Equal(t, "the three phases are not in this run.", why)
}
