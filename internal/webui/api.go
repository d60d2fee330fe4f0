package webui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stagehand-dev/stagehand/internal/rollout"
)

// coalesce is the shortest time between two pushes to one tab: a burst of changes (a
// rollout moves many pods) is one update, still well within a second.
const coalesce = 250 * time.Millisecond

// heartbeat keeps an idle stream open through proxies.
const heartbeat = 15 * time.Second

// events streams, as server-sent events, the DC list, or one DC's detail with ?dc=NS/NAME:
// the whole view at once and again at every change of the model.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ns, name, one := strings.Cut(r.URL.Query().Get("dc"), "/")
	w.Header().Set("Content-Type", "text/event-stream")
	var last []byte
	for {
		_, changed := s.Model.Changed()
		var view any
		if one {
			if c := s.Model.config(ns, name); c != nil {
				view = detailOf(c)
			}
		} else {
			list := []Summary{}
			for _, c := range s.Model.configs() {
				list = append(list, summaryOf(c))
			}
			view = list
		}
		payload, err := json.Marshal(view)
		if err != nil {
			return
		}
		if !bytes.Equal(payload, last) {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", payload); err != nil {
				return
			}
			flusher.Flush()
			last = payload
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			time.Sleep(coalesce)
		case <-time.After(heartbeat):
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// logs streams the log of one pod of the DC (?ns=&pod=), the last 200 lines then live, one
// server-sent event per line, read with the user's rights.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	tail := int64(200)
	stream, err := s.Kube.CoreV1().Pods(q.Get("ns")).GetLogs(q.Get("pod"), &corev1.PodLogOptions{Follow: true, TailLines: &tail}).Stream(r.Context())
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	defer stream.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	lines := bufio.NewScanner(stream)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for lines.Scan() {
		line, _ := json.Marshal(lines.Text())
		if _, err := fmt.Fprintf(w, "data: %s\n\n", line); err != nil {
			return
		}
		flusher.Flush()
	}
	fmt.Fprint(w, "event: end\ndata: \"\"\n\n")
	flusher.Flush()
}

// Action is a rollout verb asked of one DC.
type Action struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Verb is promote, resume, pause, cancel, retry, latest or undo.
	Verb string `json:"verb"`
	// Revision is undo's --to-revision; 0 the revision before the latest.
	Revision int64 `json:"revision,omitempty"`
}

// action runs one verb with the same internal/rollout calls as the CLI's verb, under the
// user's rights. A refusal answers 4xx with the apiserver's (or the verb's) message.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	var a Action
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&a); err != nil {
		http.Error(w, "a bad action: "+err.Error(), http.StatusBadRequest)
		return
	}
	if a.Namespace == "" || a.Name == "" {
		http.Error(w, "a bad action: namespace and name are required", http.StatusBadRequest)
		return
	}
	c := &rollout.Client{Kube: s.Kube, Stagehand: s.Stagehand, Namespace: a.Namespace}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	msg, err := runVerb(ctx, c, a)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func runVerb(ctx context.Context, c *rollout.Client, a Action) (string, error) {
	dc := "deploymentconfig/" + a.Name
	switch a.Verb {
	case "promote":
		st, err := c.Promote(ctx, a.Name)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("revision %s promoted", st.RevisionName), nil
	case "resume":
		changed, err := c.SetPaused(ctx, a.Name, false)
		if err != nil {
			return "", err
		}
		stepped, err := c.ResumeStep(ctx, a.Name)
		switch {
		case err != nil:
			return "", err
		case stepped != nil:
			return fmt.Sprintf("revision %s: step %d/%d resumed", stepped.RevisionName, stepped.Step.Step, stepped.Step.Total), nil
		case changed:
			return dc + " resumed", nil
		}
		return dc + " is not paused, and its rollout is not paused at a step", nil
	case "pause":
		if _, err := c.SetPaused(ctx, a.Name, true); err != nil {
			return "", err
		}
		return dc + " paused", nil
	case "cancel":
		done, err := c.Cancel(ctx, a.Name, 0)
		if err != nil {
			return "", err
		}
		return "revision " + done.RevisionName + " cancelled", nil
	case "retry":
		req, err := c.Retry(ctx, a.Name)
		if err != nil {
			return "", err
		}
		return "retrying revision " + req.RevisionName, nil
	case "latest":
		req, err := c.Latest(ctx, a.Name, "from the dashboard")
		if err != nil {
			return "", err
		}
		return "rollout of revision " + strconv.FormatInt(req.Revision, 10) + " requested", nil
	case "undo":
		opts := rollout.RollbackOptions{ToRevision: a.Revision}
		plan, err := c.PlanRollback(ctx, a.Name, opts)
		if err != nil {
			return "", err
		}
		if _, _, err := c.Rollback(ctx, plan, opts); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s rolled back to revision %d", dc, plan.To), nil
	}
	return "", &badRequest{fmt.Sprintf("unknown verb %q: promote, resume, pause, cancel, retry, latest or undo", a.Verb)}
}

// diff is what undo to ?revision=N of ?ns=&name= would change, for its confirmation.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, _ := strconv.ParseInt(q.Get("revision"), 10, 64)
	c := &rollout.Client{Kube: s.Kube, Stagehand: s.Stagehand, Namespace: q.Get("ns")}
	plan, err := c.PlanRollback(r.Context(), q.Get("name"), rollout.RollbackOptions{ToRevision: n})
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	text, err := plan.Diff()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, text)
}

// Stats are the dashboard server's own figures, for docs/dashboard.md's measurement.
type Stats struct {
	HeapBytes uint64 `json:"heapBytes"`
	Watches   int64  `json:"watches"`
	Configs   int    `json:"configs"`
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	var st Stats
	if s.Stats != nil {
		st = s.Stats()
	}
	st.Configs = len(s.Model.dcs.ListKeys())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

// statusOf is the HTTP status that answers err: the apiserver's own, 400 for a bad
// request, 409 for a refusal of the verb, 500 otherwise.
func statusOf(err error) int {
	var status apierrors.APIStatus
	var bad *badRequest
	var refused *rollout.Refused
	switch {
	case errors.As(err, &status) && status.Status().Code >= 400:
		return int(status.Status().Code)
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.As(err, &refused):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}
