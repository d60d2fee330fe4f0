package images

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTag(t *testing.T) {
	tests := []struct {
		name       string
		ref        string
		wantName   string // the full name of the tag
		wantScheme string
		wantErr    string
	}{
		{name: "registry with port", ref: "reg.example.com:5000/team/app:stable", wantName: "reg.example.com:5000/team/app:stable", wantScheme: "https"},
		{name: "Docker Hub short name", ref: "nginx", wantName: "index.docker.io/library/nginx:latest", wantScheme: "https"},
		{name: "localhost without a port is plain HTTP", ref: "localhost/app:1", wantName: "localhost/app:1", wantScheme: "http"},
		{name: "loopback IPv4", ref: "127.0.0.1:5000/app:1", wantName: "127.0.0.1:5000/app:1", wantScheme: "http"},
		{name: "loopback IPv6", ref: "[::1]:5000/app:1", wantName: "[::1]:5000/app:1", wantScheme: "http"},
		{name: "digest reference", ref: "reg.example.com/app@sha256:" + sixtyFourZeros, wantErr: "is a digest reference, not a tag"},
		{name: "tag and digest", ref: "reg.example.com/app:1@sha256:" + sixtyFourZeros, wantErr: "is a digest reference, not a tag"},
		{name: "invalid", ref: "reg.example.com/App:1", wantErr: "is not a valid tag reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tag, err := ParseTag(tt.ref)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, tag.Name())
			assert.Equal(t, tt.wantScheme, tag.Scheme())
		})
	}
}

func TestPin(t *testing.T) {
	digest := "sha256:" + sixtyFourZeros
	tests := []struct {
		name    string
		ref     string
		digest  string
		want    string
		wantErr string
	}{
		{name: "tag", ref: "reg:5000/team/app:stable", digest: digest, want: "reg:5000/team/app@" + digest},
		{name: "implicit latest", ref: "reg:5000/team/app", digest: digest, want: "reg:5000/team/app@" + digest},
		{name: "Docker Hub short name keeps its spelling", ref: "nginx:1.27", digest: digest, want: "nginx@" + digest},
		{name: "IPv6 registry", ref: "[::1]:5000/app:1", digest: digest, want: "[::1]:5000/app@" + digest},
		{name: "bad digest", ref: "reg/app:1", digest: "sha256:abc", wantErr: `pinning "reg/app:1"`},
		{name: "digest reference", ref: "reg/app@" + digest, digest: digest, wantErr: "is a digest reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Pin(tt.ref, tt.digest)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
