package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMetricsParsing(t *testing.T) {
	text := `# HELP rest_client_rate_limiter_duration_seconds x
rest_client_rate_limiter_duration_seconds_sum{verb="PUT"} 1.5
rest_client_rate_limiter_duration_seconds_sum{verb="POST"} 0.25
rest_client_rate_limiter_duration_seconds_count{verb="PUT"} 10
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
`
	assert.Equal(t, 1.75, sumSeries(text, "rest_client_rate_limiter_duration_seconds_sum"))
	assert.Equal(t, 10.0, sumSeries(text, "rest_client_rate_limiter_duration_seconds_count"))
	assert.Equal(t, map[string]float64{"pods/status PUT": 9, "pods POST": 3}, apiserverRequests(text))
	assert.Equal(t, "pods/status PUT 9.0, pods POST 3.0", requestsList(apiserverRequests(text)))
}
