package plumbing

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// client-go's hooks land in the registry under the names Kubernetes components use.
func TestRegisterClientMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterClientMetrics(reg)
	clientmetrics.RateLimiterLatency.Observe(context.Background(), "PUT", url.URL{}, 300*time.Millisecond)
	clientmetrics.RequestResult.Increment(context.Background(), "200", "PUT", "host")

	n, err := testutil.GatherAndCount(reg, "rest_client_rate_limiter_duration_seconds", "rest_client_requests_total")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, 1.0, testutil.ToFloat64(requestResults.WithLabelValues("200", "PUT")))
}
