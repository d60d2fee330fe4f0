package nodeagent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Readiness probes run on the host: exec probes run the command in the container's
// directory with its environment; tcpSocket and httpGet probes connect to the probe's host
// or else the pod IP (the host's address), since pods share the host's network. gRPC probes
// are not supported and count as passing. Liveness and startup probes are ignored: a
// container counts as started as soon as its process runs.

// probeReadiness runs the readiness probe of a container run until ctx ends, and keeps the
// container's Ready flag in step with it.
func (w *podWorker) probeReadiness(ctx context.Context, c *ctr, run *ctrRun, p *corev1.Probe) {
	period := seconds(p.PeriodSeconds, 10)
	timeout := seconds(p.TimeoutSeconds, 1)
	successThreshold := max(p.SuccessThreshold, 1)
	failureThreshold := max(p.FailureThreshold, 1)
	if p.FailureThreshold == 0 {
		failureThreshold = 3
	}
	wait := time.Duration(p.InitialDelaySeconds) * time.Second
	var successes, failures int32
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = period
		if !w.gate.running() {
			continue // a stopped node does not probe
		}
		err := w.probeOnce(ctx, c, run, p, timeout)
		if ctx.Err() != nil {
			return
		}
		var ready, change bool
		if err == nil {
			successes, failures = successes+1, 0
			ready, change = true, successes >= successThreshold
		} else {
			successes, failures = 0, failures+1
			ready, change = false, failures >= failureThreshold
			w.log.WithError(err).WithField("container", c.spec.Name).Debug("readiness probe failed")
		}
		if !change {
			continue
		}
		w.mu.Lock()
		changed := c.run == run && c.status.State.Running != nil && c.status.Ready != ready
		if changed {
			c.status.Ready = ready
		}
		w.mu.Unlock()
		if changed {
			w.markDirty()
		}
	}
}

func seconds(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// probeOnce runs one probe; nil means it passed.
func (w *podWorker) probeOnce(ctx context.Context, c *ctr, run *ctrRun, p *corev1.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		return w.execProbe(ctx, run, p.Exec.Command)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, c.spec)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(w.probeHost(p.TCPSocket.Host), port))
		if err != nil {
			return fmt.Errorf("tcp probe: %w", err)
		}
		return conn.Close()
	case p.HTTPGet != nil:
		return w.httpProbe(ctx, c, p.HTTPGet)
	}
	return nil
}

func (w *podWorker) probeHost(host string) string {
	if host != "" {
		return host
	}
	return w.podIPOrHost()
}

func (w *podWorker) execProbe(ctx context.Context, run *ctrRun, command []string) error {
	cmd, err := newCommand(command, run.dir, run.env)
	if err != nil {
		return fmt.Errorf("exec probe: %w", err)
	}
	p, err := w.a.spawner.start(cmd)
	if err != nil {
		return fmt.Errorf("exec probe: %w", err)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("exec probe timed out: %w", ctx.Err())
	}
	if code := p.exitCode(); code != 0 {
		return fmt.Errorf("exec probe exited with code %d", code)
	}
	return nil
}

// probeTransport skips certificate checks, like the kubelet's HTTPS probes.
var probeTransport = &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes never verify
	DisableKeepAlives: true,
}

func (w *podWorker) httpProbe(ctx context.Context, c *ctr, g *corev1.HTTPGetAction) error {
	port, err := resolvePort(g.Port, c.spec)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(w.probeHost(g.Host), port), Path: g.Path}
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("http probe: %w", err)
	}
	for _, h := range g.HTTPHeaders {
		if h.Name == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := probeTransport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("http probe: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("http probe: status %d", resp.StatusCode)
	}
	return nil
}

// resolvePort turns a probe port (a number or a named container port) into a number.
func resolvePort(port intstr.IntOrString, c *corev1.Container) (string, error) {
	if port.Type == intstr.Int {
		return strconv.Itoa(port.IntValue()), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return strconv.Itoa(int(p.ContainerPort)), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return strconv.Itoa(n), nil
	}
	return "", fmt.Errorf("probe port %q is not a port of container %s", port.StrVal, c.Name)
}
