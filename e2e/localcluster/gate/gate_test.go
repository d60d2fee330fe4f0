package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		ci       string
		reason   string
		wantSkip bool
		wantErr  bool
	}{
		{name: "present", ci: "", reason: "", wantSkip: false},
		{name: "present in CI", ci: "true", reason: "", wantSkip: false},
		{name: "missing locally skips", ci: "", reason: "not built", wantSkip: true},
		{name: "missing with CI=false skips", ci: "false", reason: "not built", wantSkip: true},
		{name: "missing in CI fails", ci: "true", reason: "not built", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			skip, err := Check(tt.reason)
			assert.Equal(t, tt.wantSkip, skip)
			if tt.wantErr {
				assert.ErrorContains(t, err, tt.reason)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
