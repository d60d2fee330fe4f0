//go:build e2e

package e2e

// kubectl stagehand dashboard (docs/dashboard.md), driven in a real headless Chromium over
// the Chrome DevTools Protocol: live updates without a reload, the why-line of a paused
// canary and its promote, a failed hook's log, a refusal under the user's own rights, and
// no way in without the token. Screenshots at 1280x800 go to bin/screenshots/, and to
// docs/images/ with STAGEHAND_UPDATE_SCREENSHOTS=1.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// text evaluates a JavaScript expression that yields a string in the page.
func text(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	require.NoError(t, err)
	return s
}

// waitText polls expr every 100 ms until its text contains want, and returns every
// distinct text it saw on the way.
func waitText(t *testing.T, ctx context.Context, expr, want string, timeout time.Duration) []string {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(timeout)
	for {
		s := text(t, ctx, expr)
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if strings.Contains(s, want) {
			return seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed %q in %s within %s; it showed %q", want, expr, timeout, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// click clicks the element of selector, then the dialog's Confirm.
func clickConfirmed(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(selector)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-ok")),
		chromedp.Click(chromedp.CSS("#confirm-ok"))))
}

// screenshot saves the 1280x800 viewport as name.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	dirs := []string{filepath.Join(env.RepoRoot, "bin", "screenshots")}
	if os.Getenv("STAGEHAND_UPDATE_SCREENSHOTS") == "1" {
		dirs = append(dirs, filepath.Join(env.RepoRoot, "docs", "images"))
	}
	for _, dir := range dirs {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	}
}

func TestDashboardInChromium(t *testing.T) {
	requireController(t)
	s := env.Given(t)
	ns := s.NS
	dash := env.StartDashboard(t, "-n", ns)
	ctx := framework.Browser(t)

	// Without the token: refused, in the browser and for a plain request
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(dash.Base+"/")))
	assert.Contains(t, text(t, ctx, `document.body.innerText`), "missing or wrong token")
	resp, err := http.Get(dash.Base + "/api/events")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)

	// With it: the list, live
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(dash.URL), chromedp.WaitVisible(chromedp.CSS("#list-view"))))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded = true`))
	require.NoError(t, err)
	dc := framework.NewDeploymentConfig("web", 2, stagehandv1.DeploymentStrategyTypeRolling)
	dc.Spec.Strategy.RollingParams = &stagehandv1.RollingDeploymentStrategyParams{
		Pre: framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "sleep 3")}
	s.DeploymentConfig(dc).When().Created()
	row := fmt.Sprintf(`(document.querySelector('tr[data-name="%s/web"] .badge') || {}).textContent || ""`, ns)
	seen := waitText(t, ctx, row, "Complete", 2*time.Minute)
	assert.Contains(t, seen, "Running", "the row moved through Running to Complete: %q", seen)
	notReloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))
	require.NoError(t, err)
	assert.True(t, notReloaded, "live, without a reload")
	ready := fmt.Sprintf(`(document.querySelector('tr[data-name="%s/web"] td:nth-child(5)') || {}).textContent || ""`, ns)
	waitText(t, ctx, ready, "2/2", time.Minute)
	screenshot(t, ctx, "dashboard-list")

	// A paused canary: its why-line, then promote from the page
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RollingParams.Steps = []stagehandv1.RollingStep{{SetReplicas: ptr.To(intstr.FromInt32(1))}, {Pause: &stagehandv1.PauseStep{}}}
	})
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(dash.Base+"/#/dc/"+ns+"/web"), chromedp.WaitVisible(chromedp.CSS("#dc-view"))))
	waitText(t, ctx, `document.querySelector("#why").textContent`, "paused at step 2 of 2", 2*time.Minute)
	screenshot(t, ctx, "dashboard-why")
	clickConfirmed(t, ctx, `button[data-verb="promote"]`)
	waitText(t, ctx, `document.querySelector("#message").textContent`, "promoted", 30*time.Second)
	waitText(t, ctx, `document.querySelector("#dc-summary .badge").textContent`, "Complete", 2*time.Minute)
	// Its timeline times each stage, the pre hook included, whose pod is gone by now
	waitText(t, ctx, `document.querySelector("#timeline li").textContent`, "pre hook: Succeeded in", 30*time.Second)
	assert.Contains(t, text(t, ctx, `document.querySelector("#timeline li").textContent`), "deployer: Succeeded in")
	screenshot(t, ctx, "dashboard-timeline")

	// A failed revision: its pre hook's log tail
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 3)
		dc.Spec.Strategy.RollingParams.Steps = nil
		dc.Spec.Strategy.RollingParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migration-3 broke; exit 1")
	})
	s.Then().RevisionPhase(3, stagehandv1.RevisionPhaseFailed)
	hookPod := stagehandv1.HookPodName("web-3", "pre", 1)
	waitText(t, ctx, `Array.from(document.querySelectorAll("#pod-table td")).map(td => td.textContent).join(" ")`, hookPod, time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[aria-label="Log of %s"]`, hookPod)))))
	waitText(t, ctx, `document.querySelector("#log").textContent`, "migration-3 broke", 30*time.Second)
	waitText(t, ctx, `document.querySelector("#why").textContent`, "revision web-3 failed", 30*time.Second)

	// A user who may only read: the page works, an action is refused with the apiserver's words
	bindClusterRole(t, ns, "vic", "view")
	viewer := env.StartDashboard(t, "-n", ns, "--as=vic")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(viewer.URL), chromedp.WaitVisible(chromedp.CSS("#list-view")),
		chromedp.Navigate(viewer.Base+"/#/dc/"+ns+"/web"), chromedp.WaitVisible(chromedp.CSS("#dc-view"))))
	waitText(t, ctx, `document.querySelector("#dc-title").textContent`, "deploymentconfig/web", 30*time.Second)
	clickConfirmed(t, ctx, `button[data-verb="pause"]`)
	msg := waitText(t, ctx, `document.querySelector("#message").textContent`, "Refused:", 30*time.Second)
	assert.Contains(t, msg[len(msg)-1], `User "vic" cannot`, "the apiserver's message")
	dcNow := s.Get()
	assert.False(t, dcNow.Spec.Paused, "nothing was paused")
}
