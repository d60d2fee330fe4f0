package framework

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumEnv points the browser tests at a Chromium binary; the default is chromium on
// the PATH, which make test installs with Debian's package (hack/install-chromium.sh).
const ChromiumEnv = "E2E_CHROMIUM"

// Dashboard is a running kubectl stagehand dashboard.
type Dashboard struct {
	// URL is the one it printed, with its token.
	URL string
	// Base is the URL without the path and token.
	Base string
}

var dashboardURL = regexp.MustCompile(`Stagehand dashboard: ((http://[^/]+)/\?token=[0-9a-f]+)`)

// StartDashboard runs the real plugin's dashboard command on a free loopback port, with
// the suite's kubeconfig and args (for example -n NS, or --as=USER), until the test ends.
func (e *Env) StartDashboard(t *testing.T, args ...string) *Dashboard {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	full := append([]string{"--kubeconfig", e.Kubeconfig, "dashboard", "--port", "0"}, args...)
	cmd := exec.CommandContext(ctx, e.PluginPath(), full...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("dashboard stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s dashboard (build it with make build): %v", e.PluginPath(), err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	found := make(chan *Dashboard, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			t.Logf("dashboard: %s", lines.Text())
			if m := dashboardURL.FindStringSubmatch(lines.Text()); m != nil {
				found <- &Dashboard{URL: m[1], Base: m[2]}
			}
		}
	}()
	select {
	case d := <-found:
		return d
	case <-time.After(time.Minute):
		t.Fatalf("kubectl stagehand dashboard %v printed no URL within a minute", args)
		return nil
	}
}

// Browser starts a headless Chromium with a 1280x800 window for the test, driven over the
// Chrome DevTools Protocol, and returns its context for chromedp.Run.
func Browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv(ChromiumEnv)
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			t.Fatalf("no chromium on the PATH: make test installs it (hack/install-chromium.sh), or set %s", ChromiumEnv)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox, // root in CI: Chromium's sandbox needs an unprivileged user
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium at %s: %v", path, err)
	}
	return ctx
}
