package images

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "seconds", value: "2", want: 2 * time.Second, wantOK: true},
		{name: "seconds with spaces", value: " 120 ", want: 2 * time.Minute, wantOK: true},
		{name: "zero", value: "0", want: 0, wantOK: true},
		{name: "HTTP date", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{name: "HTTP date in the past", value: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		{name: "empty", value: ""},
		{name: "negative", value: "-1"},
		{name: "fraction", value: "1.5"},
		{name: "garbage", value: "soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.value, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestResolveRequestTimeout(t *testing.T) {
	reg := newTestRegistry(t)
	// The registry never answers the manifest request by itself: it waits until the client
	// gives up on it (or, if the timeout is broken, until the test ends with a failure).
	abandoned := make(chan struct{}, 1)
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !isManifest(r, "team/app") {
			return false
		}
		select {
		case <-r.Context().Done():
			abandoned <- struct{}{}
		case <-time.After(eventually):
		}
		return true
	})
	res := NewResolver(ResolverOptions{RequestTimeout: 200 * time.Millisecond})

	start := time.Now()
	_, err := res.Resolve(context.Background(), reg.ref("team/app:stable"), nil)
	t.Logf("Resolve returned after %s", time.Since(start))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not answer within 200ms")
	assert.Contains(t, err.Error(), reg.ref("team/app:stable"))
	select {
	case <-abandoned:
	case <-time.After(eventually):
		t.Fatal("the client never gave up on the manifest request")
	}
	assert.Len(t, reg.manifestRequests(), 1, "the request that timed out is not retried")

	// The caller's own end is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = res.Resolve(ctx, reg.ref("team/app:stable"), nil)
	require.ErrorIs(t, err, context.Canceled)
}

// roundTripperFunc is an http.RoundTripper made of a function.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestResolvePlainHTTP(t *testing.T) {
	// A network on which every registry name leads to the test registry, which speaks
	// plain HTTP only.
	network := func(reg *testRegistry) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Scheme != "http" {
				return nil, errors.New("no TLS on this network")
			}
			out := req.Clone(req.Context())
			out.URL.Host = reg.host
			return http.DefaultTransport.RoundTrip(out)
		})
	}
	tests := []struct {
		name     string
		registry string
		insecure func(string) bool
		wantErr  string
	}{
		{name: "marked insecure", registry: "reg.internal:5000", insecure: func(r string) bool { return r == "reg.internal:5000" }},
		{name: "not marked insecure", registry: "reg.internal:5000", wantErr: "no TLS on this network"},
		// go-containerregistry would fall back to plain HTTP on its own here.
		{name: "private IP address not marked insecure", registry: "10.1.2.3:5000", wantErr: "no TLS on this network"},
		{name: "private IP address marked insecure", registry: "10.1.2.3:5000", insecure: func(r string) bool { return r == "10.1.2.3:5000" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			want := reg.pushRandom(t, "team/app:stable")
			res := NewResolver(ResolverOptions{Transport: network(reg), RegistryQPS: -1, Insecure: tt.insecure})
			got, err := res.Resolve(context.Background(), tt.registry+"/team/app:stable", nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Zero(t, reg.countRequests("", time.Now()), "no plain HTTP request")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}
