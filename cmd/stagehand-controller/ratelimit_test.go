package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
)

func TestDecideClientLimit(t *testing.T) {
	apfOn := func() (bool, error) { return true, nil }
	apfOff := func() (bool, error) { return false, nil }
	unknown := func() (bool, error) { return false, errors.New("connection refused") }
	notAsked := func() (bool, error) { t.Error("the apiserver was asked although the flag decided"); return false, nil }
	tests := []struct {
		name      string
		qps       float64
		burst     int
		apf       func() (bool, error)
		wantQPS   float32
		wantBurst int
	}{
		{name: "default with Priority and Fairness: no client-side limit", apf: apfOn},
		{name: "default without it: the fallback", apf: apfOff, wantQPS: fallbackQPS, wantBurst: fallbackBurst},
		{name: "default when the apiserver cannot tell: the fallback", apf: unknown, wantQPS: fallbackQPS, wantBurst: fallbackBurst},
		{name: "a QPS set by hand wins", qps: 40, burst: 80, apf: notAsked, wantQPS: 40, wantBurst: 80},
		{name: "a QPS set by hand without a burst: twice the QPS", qps: 40, apf: notAsked, wantQPS: 40, wantBurst: 80},
		{name: "below 0: no limit, even without Priority and Fairness", qps: -1, apf: notAsked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideClientLimit(tt.qps, tt.burst, tt.apf)
			assert.Equal(t, tt.wantQPS, got.QPS)
			assert.Equal(t, tt.wantBurst, got.Burst)
			assert.NotEmpty(t, got.Why)
		})
	}
}

// The apiserver names the FlowSchema that matched a request in a header when it runs
// Priority and Fairness; its absence means it does not.
func TestApiserverHasAPF(t *testing.T) {
	for _, header := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "/version", r.URL.Path)
			if header {
				w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "3b4f6e0c")
			}
			_, _ = w.Write([]byte(`{"major":"1","minor":"36"}`))
		}))
		got, err := apiserverHasAPF(context.Background(), &rest.Config{Host: srv.URL})
		srv.Close()
		require.NoError(t, err)
		assert.Equal(t, header, got)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	_, err := apiserverHasAPF(context.Background(), &rest.Config{Host: srv.URL})
	assert.ErrorContains(t, err, "403")
}
