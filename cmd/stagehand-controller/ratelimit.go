package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

// The client-side rate limit when the apiserver has no Priority and Fairness: the limit
// the controller shipped with before it relied on the server (docs/controller.md, "Rate
// limits").
const (
	fallbackQPS   = 100
	fallbackBurst = 200
	// apfProbeTimeout bounds the one request that asks the apiserver whether it queues.
	apfProbeTimeout = 10 * time.Second
)

// clientLimit is the controller's client-side rate limit, as decided at start.
type clientLimit struct {
	QPS   float32 // 0: none
	Burst int
	Why   string // for the start-up log line
}

// decideClientLimit chooses the client-side rate limit of every controller's requests.
//
//   - --kube-api-qps above 0: that limit, with --kube-api-burst (default twice the QPS).
//   - --kube-api-qps below 0: none.
//   - --kube-api-qps 0, the default: none when the apiserver runs Priority and Fairness,
//     which queues and sheds load fairly between clients on the server, where the load
//     is known; otherwise the fallback limit. apf asks the apiserver; it is called only in
//     this case.
//
// A client-side limit holds back every rollout once hundreds run at once, whatever the
// apiserver could take: on an idle 16-CPU machine the old fixed 100 QPS was what held 300
// first rollouts back (issue 23).
func decideClientLimit(qps float64, burst int, apf func() (bool, error)) clientLimit {
	switch {
	case qps > 0:
		if burst < 1 {
			burst = max(1, int(2*qps))
		}
		return clientLimit{QPS: float32(qps), Burst: burst, Why: "set by --kube-api-qps"}
	case qps < 0:
		return clientLimit{Why: "turned off by --kube-api-qps below 0"}
	}
	on, err := apf()
	switch {
	case err != nil:
		return clientLimit{QPS: fallbackQPS, Burst: fallbackBurst,
			Why: fmt.Sprintf("could not tell whether the apiserver runs Priority and Fairness (%v): the fallback limit", err)}
	case on:
		return clientLimit{Why: "the apiserver runs Priority and Fairness, which limits the controller on the server"}
	default:
		return clientLimit{QPS: fallbackQPS, Burst: fallbackBurst,
			Why: "the apiserver does not run Priority and Fairness: the fallback limit protects it"}
	}
}

// apiserverHasAPF asks the apiserver whether it runs Priority and Fairness: when it does,
// every answer it classified names the FlowSchema that matched it in a response header.
func apiserverHasAPF(ctx context.Context, rc *rest.Config) (bool, error) {
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		return false, err
	}
	base, _, err := rest.DefaultServerUrlFor(rc)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, apfProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base.String(), "/")+"/version", nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 400 {
		return false, fmt.Errorf("GET /version: %s", resp.Status)
	}
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "", nil
}
