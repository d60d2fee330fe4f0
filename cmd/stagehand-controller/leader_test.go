package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

func TestLeaderIdentity(t *testing.T) {
	host := func() (string, error) { return "node-host", nil }
	uuid := `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

	id, err := leaderIdentity("stagehand-controller-7d9f-abcde", host)
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^stagehand-controller-7d9f-abcde_`+uuid+`$`), id, "the pod name when known")

	id, err = leaderIdentity("", host)
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^node-host_`+uuid+`$`), id, "else the hostname")

	other, err := leaderIdentity("", host)
	require.NoError(t, err)
	assert.NotEqual(t, id, other, "two processes on one host differ")

	_, err = leaderIdentity("", func() (string, error) { return "", errors.New("no hostname") })
	assert.ErrorContains(t, err, "no hostname")
}

func TestLoadConfigPodName(t *testing.T) {
	t.Setenv("POD_NAME", "stagehand-controller-0")
	cfg, _, err := loadConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, "stagehand-controller-0", cfg.PodName, "POD_NAME, as the downward API sets it")

	t.Setenv("STAGEHAND_POD_NAME", "from-prefix")
	cfg, _, err = loadConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, "from-prefix", cfg.PodName, "STAGEHAND_POD_NAME wins, like every setting")
}

// readyz fetches /readyz from a mux answering with ready.
func readyz(t *testing.T, ready func() (bool, string)) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	healthMux(prometheus.NewRegistry(), ready, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

// With leader election, /readyz is 200 on every replica and says which one leads; the
// gauge follows the callbacks.
func TestReadyzWithLeaderElection(t *testing.T) {
	reg := prometheus.NewRegistry()
	leader := plumbing.NewLeaderStatus(reg)
	synced := func() bool { return false } // never consulted: a standby has no caches
	ready := readiness(true, synced, leader)

	code, body := readyz(t, ready)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok: standby, no leader observed yet", body)
	assert.Equal(t, 0.0, leaderValue(t, reg))

	leader.Observed("stagehand-controller-1_0b7e")
	code, body = readyz(t, ready)
	assert.Equal(t, http.StatusOK, code, "a standby is ready: the PDB and rolling updates count on it")
	assert.Equal(t, "ok: standby, the leader is stagehand-controller-1_0b7e", body)

	leader.Observed("stagehand-controller-0_9f1c")
	leader.Started()
	code, body = readyz(t, ready)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok: leader", body)
	assert.Equal(t, 1.0, leaderValue(t, reg))

	leader.Stopped()
	_, body = readyz(t, ready)
	assert.Equal(t, "ok: standby, the leader is stagehand-controller-0_9f1c", body, "until another leader is observed")
	assert.Equal(t, 0.0, leaderValue(t, reg))
}

// The elector reports each new leader from a goroutine of its own: a released Lease ("")
// and its new holder, reported close together, may arrive out of order. Once it follows
// the elector's own record, a standby names the holder whatever order the reports took
// (an e2e run once saw a standby say "no leader observed yet" for a minute).
func TestReadyzFollowsTheElectorsRecord(t *testing.T) {
	leader := plumbing.NewLeaderStatus(prometheus.NewRegistry())
	ready := readiness(true, func() bool { return false }, leader)
	holder := "stagehand-controller-1_0b7e"
	leader.Follow(func() string { return holder })
	leader.Observed(holder)
	leader.Observed("") // the older report, late
	_, body := readyz(t, ready)
	assert.Equal(t, "ok: standby, the leader is stagehand-controller-1_0b7e", body)

	holder = ""
	_, body = readyz(t, ready)
	assert.Equal(t, "ok: standby, no leader observed yet", body, "a released Lease")
}

// Without leader election, /readyz waits for the caches.
func TestReadyzWithoutLeaderElection(t *testing.T) {
	synced := false
	ready := readiness(false, func() bool { return synced }, plumbing.NewLeaderStatus(prometheus.NewRegistry()))
	code, body := readyz(t, ready)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "caches not synced yet")

	synced = true
	code, body = readyz(t, ready)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
}

// leaderValue is the one stagehand_leader sample gathered from reg.
func leaderValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "stagehand_leader" {
			require.Len(t, f.GetMetric(), 1, "one series")
			require.Empty(t, f.GetMetric()[0].GetLabel(), "no labels")
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("stagehand_leader is not registered")
	return 0
}
