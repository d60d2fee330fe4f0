package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// serveHealth serves /metrics, /healthz and /readyz, and the extra handlers by path, on
// addr until ctx is done. ready says whether /readyz answers 200, and its body. The
// returned channel closes once the server has shut down. An empty addr serves nothing.
func serveHealth(ctx context.Context, addr string, reg *prometheus.Registry, ready func() (bool, string),
	extra map[string]http.Handler, log *logrus.Entry) (<-chan struct{}, error) {
	done := make(chan struct{})
	if addr == "" {
		close(done)
		return done, nil
	}
	mux := healthMux(reg, ready, extra)
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for metrics and health: %w", addr, err)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("The metrics and health server stopped")
		}
	}()
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()
	log.WithField("addr", listener.Addr().String()).Info("Serving /metrics, /healthz and /readyz")
	return done, nil
}

// readiness is /readyz's answer. Without leader election: 200 "ok" once the caches have
// synced, 503 before. With it: always 200 (a standby is ready; the PodDisruptionBudget and
// rolling updates count on it), "ok: leader" or "ok: standby, the leader is <identity>".
func readiness(elected bool, synced func() bool, leader *plumbing.LeaderStatus) func() (bool, string) {
	if elected {
		return func() (bool, string) { return true, leader.Readiness() }
	}
	return func() (bool, string) {
		if !synced() {
			return false, "caches not synced yet"
		}
		return true, "ok"
	}
}

// healthMux routes /metrics, /healthz, /readyz and the extra handlers.
func healthMux(reg *prometheus.Registry, ready func() (bool, string), extra map[string]http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, body := ready()
		if !ok {
			http.Error(w, body, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(body))
	})
	for path, h := range extra {
		mux.Handle(path, h)
	}
	return mux
}
