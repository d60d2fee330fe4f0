package nodeagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// The kubelet endpoints of one node, served over HTTPS on Config.Address and a free port.
// Clients are not authenticated: the server listens on loopback only and serves a test
// cluster (the apiserver does not verify the kubelet's certificate either).
//
//	GET      /healthz
//	GET      /containerLogs/{namespace}/{pod}/{container}  follow, tailLines, timestamps,
//	                                                         previous, limitBytes,
//	                                                         sinceSeconds, sinceTime
//	GET|POST /exec/{namespace}/{pod}/{container}?command=...&input=1&output=1&error=1&tty=0
const (
	execIdleTimeout           = 4 * time.Hour
	execStreamCreationTimeout = 30 * time.Second
)

// nodeServer is the HTTPS server of one node.
type nodeServer struct {
	node   string
	port   int32
	server *http.Server
	errLog *io.PipeWriter
	done   chan struct{} // closed when Serve returned
}

func (a *Agent) startServer(node string, cert tls.Certificate) (*nodeServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(a.address, "0"))
	if err != nil {
		return nil, fmt.Errorf("listening for node %s: %w", node, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", a.serveLogs(node))
	mux.HandleFunc("GET /exec/{namespace}/{pod}/{container}", a.serveExec(node))
	mux.HandleFunc("POST /exec/{namespace}/{pod}/{container}", a.serveExec(node))
	errLog := a.log.WithField("node", node).WriterLevel(logrus.DebugLevel)
	s := &nodeServer{
		node: node,
		port: int32(ln.Addr().(*net.TCPAddr).Port),
		server: &http.Server{
			Handler: mux,
			// HTTP/1.1 only: exec upgrades the connection to SPDY or WebSocket.
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12},
			TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
			ReadHeaderTimeout: 30 * time.Second,
			ErrorLog:          log.New(errLog, "", 0),
		},
		errLog: errLog,
		done:   make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		err := s.server.Serve(tls.NewListener(ln, s.server.TLSConfig))
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.WithError(err).WithField("node", node).Error("kubelet endpoint server stopped")
		}
	}()
	return s, nil
}

// shutdown stops the server; streams that are still open (followed logs, exec sessions)
// are cut after a short while.
func (s *nodeServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.server.Shutdown(ctx); err != nil {
		_ = s.server.Close()
	}
	<-s.done
	_ = s.errLog.Close()
}

// httpError is an error with the HTTP status the kubelet would answer with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		code = he.code
	}
	http.Error(w, err.Error(), code)
}

// lookupContainer finds a container of a pod that runs on node. While the node is
// stopped, its endpoints answer 503 Service Unavailable: its kubelet is down.
func (a *Agent) lookupContainer(node string, r *http.Request) (*podWorker, *ctr, error) {
	if n := a.nodes[node]; n != nil && !n.gate.running() {
		return nil, nil, &httpError{http.StatusServiceUnavailable, fmt.Sprintf("the kubelet of node %s is stopped", node)}
	}
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	a.mu.Lock()
	w := a.byName[ns+"/"+name]
	a.mu.Unlock()
	if w == nil || w.latest().Spec.NodeName != node {
		return nil, nil, &httpError{http.StatusNotFound, fmt.Sprintf("pod %s/%s not found on node %s", ns, name, node)}
	}
	c := w.findCtr(container)
	if c == nil {
		return nil, nil, &httpError{http.StatusNotFound, fmt.Sprintf("container %q not found in pod %s/%s", container, ns, name)}
	}
	return w, c, nil
}

func (a *Agent) serveLogs(node string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		opts, err := parseLogOptions(r.URL.Query(), time.Now())
		if err != nil {
			writeError(rw, &httpError{http.StatusBadRequest, err.Error()})
			return
		}
		w, c, err := a.lookupContainer(node, r)
		if err != nil {
			writeError(rw, err)
			return
		}
		w.mu.Lock()
		run, waiting := c.run, c.status.State.Waiting
		w.mu.Unlock()
		pod := w.latest().Name
		var path string
		var running <-chan struct{}
		if opts.previous {
			path = w.previousLogPath(c)
			if _, err := os.Stat(path); err != nil {
				writeError(rw, &httpError{http.StatusBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", c.spec.Name, pod)})
				return
			}
		} else {
			if run == nil {
				reason := reasonCreating
				if waiting != nil {
					reason = waiting.Reason
				}
				writeError(rw, &httpError{http.StatusBadRequest, fmt.Sprintf("container %q in pod %q is waiting to start: %s", c.spec.Name, pod, reason)})
				return
			}
			path, running = w.logPath(c), run.done
		}
		rw.Header().Set("Content-Type", "text/plain")
		if err := writeLogs(r.Context(), rw, path, opts, running); err != nil {
			w.log.WithError(err).Warn("serving container logs")
		}
	}
}

func (a *Agent) serveExec(node string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		w, c, err := a.lookupContainer(node, r)
		if err != nil {
			writeError(rw, err)
			return
		}
		w.mu.Lock()
		run, running := c.run, c.status.State.Running != nil
		w.mu.Unlock()
		if !running || run == nil {
			writeError(rw, &httpError{http.StatusBadRequest, fmt.Sprintf("container %q in pod %q is not running", c.spec.Name, w.latest().Name)})
			return
		}
		opts, err := remotecommand.NewOptions(r)
		if err != nil {
			writeError(rw, &httpError{http.StatusBadRequest, err.Error()})
			return
		}
		cmd := r.URL.Query()["command"]
		pod := w.latest()
		remotecommand.ServeExec(rw, r, &executor{spawner: a.spawner, run: run}, pod.Name, string(pod.UID), c.spec.Name,
			cmd, opts, execIdleTimeout, execStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	}
}
