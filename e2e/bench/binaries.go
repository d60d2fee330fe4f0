package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// BinariesResult is the size of the two binaries, the deployer's start to its first API
// call, and the deployer's peak memory in real rollouts.
type BinariesResult struct {
	DeployerMiB   float64 `json:"deployerMiB"`
	ControllerMiB float64 `json:"controllerMiB"`
	// FirstCallMS: exec of bin/stagehand-deployer → its first request at a loopback proxy,
	// one value per run, and their median.
	FirstCallMS []float64 `json:"firstCallMs"`
	// ColdFirstCallMS is a first, unrecorded run (the binary's pages may not be in the page
	// cache yet).
	ColdFirstCallMS   float64 `json:"coldFirstCallMs"`
	FirstCallMedianMS float64 `json:"firstCallMedianMs"`
	// FirstRequest is the first request's method and path, from the last run.
	FirstRequest string `json:"firstRequest,omitempty"`
	// PeakRSSMiB: the largest VmHWM of the stagehand-deployer processes seen during each
	// rollout of PeakRSSReplicas replicas (Rolling); empty when /proc could not show them.
	PeakRSSMiB       []float64 `json:"peakRssMiB,omitempty"`
	PeakRSSMaxMiB    float64   `json:"peakRssMaxMiB,omitempty"`
	PeakRSSReplicas  int32     `json:"peakRssReplicas,omitempty"`
	PeakRSSSamplesMS float64   `json:"peakRssSampleEveryMs,omitempty"`
	// PeakRSSNote says why PeakRSSMiB is empty.
	PeakRSSNote string `json:"peakRssNote,omitempty"`
}

const (
	mib             = 1 << 20
	rssReplicas     = 10
	rssSampleEvery  = 10 * time.Millisecond
	rssDCName       = "bench-rss"
	firstCallLimit  = 30 * time.Second
	firstCallMinRun = 5
)

func measureBinaries(ctx context.Context, env *framework.Env, o options) (*BinariesResult, error) {
	res := &BinariesResult{}
	bin := filepath.Join(env.RepoRoot, "bin")
	deployer := filepath.Join(bin, "stagehand-deployer")
	for _, b := range []struct {
		path string
		into *float64
	}{{deployer, &res.DeployerMiB}, {filepath.Join(bin, "stagehand-controller"), &res.ControllerMiB}} {
		fi, err := os.Stat(b.path)
		if err != nil {
			return nil, fmt.Errorf("%w (run make build first)", err)
		}
		*b.into = float64(fi.Size()) / mib
	}
	logf("  sizes: stagehand-deployer %.1f MiB, stagehand-controller %.1f MiB", res.DeployerMiB, res.ControllerMiB)

	runs := max(o.rounds, firstCallMinRun)
	cold, _, err := firstCall(ctx, env, deployer)
	if err != nil {
		return nil, fmt.Errorf("deployer warm-up run: %w", err)
	}
	res.ColdFirstCallMS = cold
	for i := 1; i <= runs; i++ {
		d, first, err := firstCall(ctx, env, deployer)
		if err != nil {
			return nil, fmt.Errorf("deployer run %d: %w", i, err)
		}
		res.FirstCallMS = append(res.FirstCallMS, d)
		res.FirstRequest = first
	}
	res.FirstCallMedianMS = median(res.FirstCallMS)
	logf("  deployer exec → first API call: median %s over %d runs after a warm-up run of %s (%s)",
		ms(res.FirstCallMedianMS), runs, ms(res.ColdFirstCallMS), res.FirstRequest)

	if !env.Local() {
		res.PeakRSSNote = "not measured: the deployer runs on a cluster given by " + framework.KubeconfigEnv + ", not as a host process"
		return res, nil
	}
	if err := peakRSS(ctx, env, o, res); err != nil {
		return nil, fmt.Errorf("deployer peak RSS: %w", err)
	}
	return res, nil
}

// firstCall runs the deployer once as a host process, pointed through KUBECONFIG at a
// loopback TLS reverse proxy to the cluster, for a revision that does not exist. It
// returns the time from just before exec to the first request at the proxy, and that
// request. The deployer fails after that call; only the call is timed.
func firstCall(ctx context.Context, env *framework.Env, binary string) (float64, string, error) {
	upstream, err := url.Parse(env.Config.Host)
	if err != nil {
		return 0, "", err
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		return 0, "", err
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = transport
	var (
		once    sync.Once
		arrived = make(chan struct{})
		at      time.Time
		first   string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			at = time.Now()
			first = r.Method + " " + r.URL.Path
			close(arrived)
		})
		r.Header.Del("Authorization") // the proxy's transport authenticates as the bench
		proxy.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	defer srv.Close()

	dir, err := os.MkdirTemp("", "bench-deployer-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{Token: "unused"}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "bench"}
	cfg.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return 0, "", err
	}

	runCtx, cancel := context.WithTimeout(ctx, firstCallLimit)
	defer cancel()
	cmd := exec.CommandContext(runCtx, binary)
	cmd.Dir = dir
	// A clean environment: no KUBERNETES_SERVICE_HOST, so client-go's in-cluster config
	// fails at once and KUBECONFIG is used, as in a local-cluster pod.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"KUBECONFIG=" + kubeconfig,
		stagehandv1.EnvRevision + "=bench-missing-1",
		stagehandv1.EnvNamespace + "=" + metav1.NamespaceDefault,
		"STAGEHAND_TERMINATION_MESSAGE_PATH=" + filepath.Join(dir, "termination-log"),
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-arrived:
	case err := <-exited:
		return 0, "", fmt.Errorf("the deployer exited (%v) before any API call: %s", err, podstatus.LastLine(strings.TrimSpace(out.String())))
	case <-runCtx.Done():
		return 0, "", fmt.Errorf("no API call within %s", firstCallLimit)
	}
	// Let it fail on the missing revision and exit; it is killed if it does not.
	select {
	case err := <-exited:
		_ = err // the missing revision fails it, as meant
	case <-time.After(10 * time.Second):
		cancel()
		err := <-exited
		_ = err // stopped by the cancel, as meant
	}
	return float64(at.Sub(start).Microseconds()) / 1000, first, nil
}

// peakRSS rolls out a Rolling DeploymentConfig of rssReplicas replicas o.rounds times and
// samples /proc for the stagehand-deployer processes of its namespace (the node agent runs
// pods as host processes), keeping each rollout's largest VmHWM.
func peakRSS(ctx context.Context, env *framework.Env, o options, res *BinariesResult) error {
	res.PeakRSSReplicas, res.PeakRSSSamplesMS = rssReplicas, float64(rssSampleEvery.Milliseconds())
	ns, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-rss-"}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	}()
	dc := newDC(benchCase{Strategy: stagehandv1.DeploymentStrategyTypeRolling, Replicas: rssReplicas})
	dc.Name = rssDCName
	dc.Spec.Template = template(rssDCName, 1)
	if _, err := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns.Name).Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		return err
	}
	const limit = 3 * time.Minute
	if err := settleDC(ctx, env, ns.Name, rssDCName, rssReplicas, 1, limit); err != nil {
		return fmt.Errorf("first rollout: %w", err)
	}
	for i := 1; i <= o.rounds; i++ {
		sampleCtx, stop := context.WithCancel(ctx)
		peak := make(chan float64, 1)
		go func() { peak <- sampleDeployerHWM(sampleCtx, ns.Name) }()
		_, err := timeRollout(ctx, env, ns.Name, rssDCName, i+1, limit)
		if err == nil {
			// The deployer exits after it reports Complete; keep sampling until then.
			err = settleDC(ctx, env, ns.Name, rssDCName, rssReplicas, int64(i+1), limit)
			time.Sleep(200 * time.Millisecond)
		}
		stop()
		kib := <-peak
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if kib == 0 {
			logf("  round %d: no stagehand-deployer process of %s seen in /proc", i, ns.Name)
			res.PeakRSSNote = "in some rollouts no stagehand-deployer process of the namespace was seen in /proc"
			continue
		}
		res.PeakRSSMiB = append(res.PeakRSSMiB, kib/1024)
		res.PeakRSSMaxMiB = max(res.PeakRSSMaxMiB, kib/1024)
		logf("  round %d: deployer peak RSS %.1f MiB", i, kib/1024)
	}
	return nil
}

// sampleDeployerHWM polls /proc until ctx ends and returns the largest VmHWM (KiB) of the
// stagehand-deployer processes whose environment names namespace ns. Other clusters on
// the machine run deployers too; the namespace tells ours apart.
func sampleDeployerHWM(ctx context.Context, ns string) float64 {
	// pid → a deployer of ns. Only deployers are remembered: a pod's process is the node
	// agent's shim until it execs the deployer, under the same pid.
	ours := map[int]bool{}
	var peak float64
	want := stagehandv1.EnvNamespace + "=" + ns
	for {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			mine, known := ours[pid]
			if !known && isDeployer(pid) {
				// Right after the exec, environ can read empty for a moment: decide later.
				if env := environ(pid); len(env) > 0 {
					mine = hasEnv(env, want)
					ours[pid] = mine
				}
			}
			if mine {
				peak = max(peak, vmHWM(pid))
			}
		}
		select {
		case <-ctx.Done():
			return peak
		case <-time.After(rssSampleEvery):
		}
	}
}

func isDeployer(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return err == nil && filepath.Base(string(argv0)) == "stagehand-deployer"
}

// environ is the process's environment, NUL-separated (nil once it is gone).
func environ(pid int) []byte {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return b
}

// hasEnv reports whether environ holds the variable line NAME=value, whole.
func hasEnv(environ []byte, line string) bool {
	return bytes.Contains(append([]byte{0}, environ...), append(append([]byte{0}, line...), 0))
}

// vmHWM is the process's peak resident set in KiB (0 once it is gone).
func vmHWM(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kib
			}
		}
	}
	return 0
}

// deployerSizeTarget is issue 38's bound on the deployer binary, in MB (10^6 bytes).
const deployerSizeTarget = 20.0

func (r *BinariesResult) targets() []Target {
	t := Target{Goal: fmt.Sprintf("deployer binary ≤ %s MB", trimFloat(deployerSizeTarget)), Limit: deployerSizeTarget, Unit: "MB", Status: "not measured"}
	if r.DeployerMiB > 0 {
		t.Measured = r.DeployerMiB * mib / 1e6
		t.Status = status(t.Measured <= deployerSizeTarget)
	}
	return []Target{t}
}

func (r *BinariesResult) markdown(p func(format string, args ...any)) {
	p("## Binaries\n\n")
	p("The sizes of `bin/stagehand-deployer` and `bin/stagehand-controller` as `make build` builds them, and the deployer's\n")
	p("start-up: the bench runs the deployer binary as a host process, with `KUBECONFIG` pointing at a loopback TLS reverse\n")
	p("proxy (in the bench) to the cluster and a revision that does not exist, and times exec → the first request's\n")
	p("arrival at the proxy (%d runs, median, after one warm-up run that is not counted). The deployer fails after\n", len(r.FirstCallMS))
	p("that call; only the call is timed. It includes the Go runtime's start, the package initialisation, reading the\n")
	p("configuration and the TLS handshake.\n\n")
	p("| | |\n|---|---|\n")
	p("| `stagehand-deployer` size | %.1f MiB |\n", r.DeployerMiB)
	p("| `stagehand-controller` size | %.1f MiB |\n", r.ControllerMiB)
	var runs []string
	for _, v := range r.FirstCallMS {
		runs = append(runs, ms(v))
	}
	p("| deployer exec → first API call (median) | %s (runs: %s; warm-up run: %s; first request `%s`) |\n",
		ms(r.FirstCallMedianMS), strings.Join(runs, ", "), ms(r.ColdFirstCallMS), r.FirstRequest)
	if len(r.PeakRSSMiB) > 0 {
		var peaks []string
		for _, v := range r.PeakRSSMiB {
			peaks = append(peaks, fmt.Sprintf("%.1f", v))
		}
		p("| deployer peak RSS in a rollout (largest) | %.1f MiB (per rollout: %s MiB) |\n", r.PeakRSSMaxMiB, strings.Join(peaks, ", "))
		p("\nPeak RSS is the largest `VmHWM` in `/proc/<pid>/status` of the `stagehand-deployer` processes that the node agent\n")
		p("starts for a Rolling DeploymentConfig of %d replicas (one per rollout, sampled every %.0f ms while it rolls out;\n", r.PeakRSSReplicas, r.PeakRSSSamplesMS)
		p("the deployer's environment names the namespace, which keeps out deployers of other clusters on the machine).\n")
	} else if r.PeakRSSNote != "" {
		p("| deployer peak RSS in a rollout | %s |\n", r.PeakRSSNote)
	}
}
