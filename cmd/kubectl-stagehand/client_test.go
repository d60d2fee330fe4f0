package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		arg, want, wantErr string
	}{
		{arg: "web", want: "web"},
		{arg: "dc/web", want: "web"},
		{arg: "deploymentconfig/web", want: "web"},
		{arg: "DeploymentConfigs.stagehand.dev/web", want: "web"},
		{arg: "deployment/web", wantErr: `"deployment/web" is not a DeploymentConfig`},
		{arg: "dc/", wantErr: `"dc/" has no name`},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, err := parseRef(tt.arg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, 2, exitCode(err), "a usage mistake exits 2")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
