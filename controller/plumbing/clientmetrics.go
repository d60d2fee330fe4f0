package plumbing

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The client-go request metrics, under the names Kubernetes components use, so that a
// controller held back by its own client-side rate limit (--kube-api-qps, --kube-api-burst)
// shows it: rest_client_rate_limiter_duration_seconds is the time each request waited for
// the limiter before it was sent.
var (
	rateLimiterWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time a request to the apiserver waited in the client-side rate limiter, by verb.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"verb"})
	requestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Latency of requests to the apiserver, from send to response, by verb.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"verb"})
	requestResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Requests to the apiserver, by HTTP method and response code.",
	}, []string{"code", "method"})
)

type latencyAdapter struct{ h *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) {
	a.h.WithLabelValues(verb).Observe(d.Seconds())
}

type resultAdapter struct{ c *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, _ string) {
	a.c.WithLabelValues(code, method).Inc()
}

// RegisterClientMetrics makes client-go report its rate-limiter waits, request latencies
// and results into reg. client-go takes the first registration of a process only.
func RegisterClientMetrics(reg prometheus.Registerer) {
	reg.MustRegister(rateLimiterWait, requestLatency, requestResults)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RateLimiterLatency: latencyAdapter{rateLimiterWait},
		RequestLatency:     latencyAdapter{requestLatency},
		RequestResult:      resultAdapter{requestResults},
	})
}
