package webui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
)

// Options are kubectl stagehand dashboard's flags.
type Options struct {
	// Config is the user's own: every read and every action is the user's.
	Config *rest.Config
	// Namespace is the scope; "" for all namespaces.
	Namespace string
	// Address and Port are where to listen: 127.0.0.1 and 3100 by default. Port 0 picks one.
	Address string
	Port    int
	// Open opens the URL in a browser.
	Open bool
	// Out gets the URL.
	Out io.Writer
}

// Serve runs the dashboard until ctx is done: it syncs its caches, listens, prints the
// URL with a fresh random token, and serves.
func Serve(ctx context.Context, o Options) error {
	var watches atomic.Int64
	config := rest.CopyConfig(o.Config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &watchCounter{next: rt, open: &watches} })
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	sh, err := stagehandclient.NewForConfig(config)
	if err != nil {
		return err
	}
	model, err := NewModel(kube, sh, o.Namespace)
	if err != nil {
		return err
	}
	if err := model.Run(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("listening on %s:%d: %w", o.Address, o.Port, err)
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	srv := &Server{Kube: kube, Stagehand: sh, Model: model, Token: token, Hosts: LoopbackHosts(addr),
		Stats: func() Stats {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return Stats{HeapBytes: m.HeapAlloc, Watches: watches.Load()}
		}}
	url := "http://" + addr + "/?token=" + token
	fmt.Fprintf(o.Out, "Stagehand dashboard: %s\n", url)
	if o.Address != "127.0.0.1" && o.Address != "localhost" && o.Address != "::1" {
		fmt.Fprintf(o.Out, "Warning: listening on %s, not on loopback: anyone who can reach it and learns the token acts with your rights\n", o.Address)
	}
	if o.Open {
		openBrowser(url, o.Out)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the dashboard's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// openBrowser asks the desktop to open url; a failure only prints.
func openBrowser(url string, out io.Writer) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if err := exec.Command(name, url).Start(); err != nil {
		fmt.Fprintf(out, "Could not open a browser (%v): open the URL above\n", err)
	}
}

// watchCounter counts the watches open on the apiserver: requests with watch=true whose
// response body is not closed yet.
type watchCounter struct {
	next http.RoundTripper
	open *atomic.Int64
}

func (w *watchCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(r)
	if err != nil || r.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	w.open.Add(1)
	resp.Body = &countedBody{ReadCloser: resp.Body, open: w.open}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	open   *atomic.Int64
	closed atomic.Bool
}

func (b *countedBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.open.Add(-1)
	}
	return b.ReadCloser.Close()
}
