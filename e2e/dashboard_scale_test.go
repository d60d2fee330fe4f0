//go:build e2e

package e2e

// The dashboard with 200 DeploymentConfigs: it opens a fixed number of watches whatever the
// DCs and the tabs, stays live, and its server's memory is measured (docs/dashboard.md).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/internal/webui"
)

// dashboardStats reads /api/stats of a running dashboard, with its token.
func dashboardStats(t *testing.T, d *framework.Dashboard) webui.Stats {
	t.Helper()
	token := d.URL[strings.Index(d.URL, "token=")+len("token="):]
	req, err := http.NewRequest(http.MethodGet, d.Base+"/api/stats", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: webui.CookieName, Value: token})
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st webui.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

func TestDashboardServes200DeploymentConfigs(t *testing.T) {
	requireController(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	dash := env.StartDashboard(t, "-n", ns)
	before := dashboardStats(t, dash)

	// Given 200 DCs, paused before their first revision (no pods: the cluster stays small)
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)
	for i := range 200 {
		dc := framework.NewDeploymentConfig(fmt.Sprintf("dc-%03d", i), 0, stagehandv1.DeploymentStrategyTypeRolling)
		dc.Spec.Paused = true
		_, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	browser := framework.Browser(t)
	require.NoError(t, chromedp.Do(browser, chromedp.Navigate(dash.URL), chromedp.WaitVisible(chromedp.CSS("#list-view"))))
	rows := `String(document.querySelectorAll("#dc-table tbody tr").length)`
	waitText(t, browser, rows, "200", time.Minute)

	// When one of them is resumed, its row changes without a reload
	start := time.Now()
	out, err := env.Kubectl(ns, "patch", "dc/dc-150", "--type=merge", "-p", `{"spec":{"paused":false}}`)
	require.NoError(t, err, out)
	cell := fmt.Sprintf(`document.querySelector('tr[data-name="%s/dc-150"] td:nth-child(6)').textContent === "" ? "resumed" : "paused"`, ns)
	waitText(t, browser, cell, "resumed", 30*time.Second)
	t.Logf("the resumed DC's row changed %s after the patch", time.Since(start).Round(10*time.Millisecond))

	// Then the watches stayed what they were with no DC and one tab, and the memory is
	// measured (a second tab changes neither the watches nor the apiserver's load)
	second := framework.Browser(t)
	require.NoError(t, chromedp.Do(second, chromedp.Navigate(dash.URL), chromedp.WaitVisible(chromedp.CSS("#list-view"))))
	waitText(t, second, rows, "200", time.Minute)
	after := dashboardStats(t, dash)
	assert.Equal(t, 200, after.Configs)
	assert.Equal(t, before.Watches, after.Watches, "the watches do not grow with the DCs or the tabs")
	assert.Equal(t, int64(5), after.Watches, "one watch per kind: DeploymentConfigs, ReplicaSets, ControllerRevisions, pods, events about DCs")
	t.Logf("dashboard server with 200 DCs and 2 tabs: heap %.1f MiB (%.1f MiB with none), %d watches",
		float64(after.HeapBytes)/(1<<20), float64(before.HeapBytes)/(1<<20), after.Watches)
}
