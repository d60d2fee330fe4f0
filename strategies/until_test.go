package strategies

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseUntil(t *testing.T) {
	tests := []struct {
		in      string
		want    Until
		wantErr bool
	}{
		{in: "", want: Until{}},
		{in: "pre", want: Until{Stage: StagePre}},
		{in: "mid", want: Until{Stage: StageMid}},
		{in: "50%", want: Until{Percent: 50}},
		{in: "100%", want: Until{Percent: 100}},
		{in: "1%", want: Until{Percent: 1}},
		{in: "0%", wantErr: true},
		{in: "101%", wantErr: true},
		{in: "50", wantErr: true},
		{in: "post", wantErr: true},
		{in: "x%", wantErr: true},
		{in: "-5%", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseUntil(tt.in)
			if tt.wantErr {
				var invalid *InvalidError
				assert.ErrorAs(t, err, &invalid)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in, got.String())
		})
	}
}

func TestUntilTarget(t *testing.T) {
	tests := []struct {
		name    string
		until   Until
		desired int32
		want    int32
	}{
		{name: "whole rollout", desired: 4, want: 4},
		{name: "stage", until: Until{Stage: StagePre}, desired: 4, want: 4},
		{name: "half of 4", until: Until{Percent: 50}, desired: 4, want: 2},
		{name: "half of 3 rounds up", until: Until{Percent: 50}, desired: 3, want: 2},
		{name: "1% of 3 is one pod", until: Until{Percent: 1}, desired: 3, want: 1},
		{name: "100%", until: Until{Percent: 100}, desired: 3, want: 3},
		{name: "none desired", until: Until{Percent: 50}, desired: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.until.Target(tt.desired))
		})
	}
}

func TestUntilStops(t *testing.T) {
	assert.NoError(t, Until{}.AfterHook(StagePre, "web-2"))
	assert.NoError(t, Until{Stage: StageMid}.AfterHook(StagePre, "web-2"))
	assert.True(t, errors.Is(Until{Stage: StagePre}.AfterHook(StagePre, "web-2"), ErrUntilReached))
	assert.NoError(t, Until{Stage: StagePre}.AtPercent("web-2", 1, 2))
	assert.ErrorIs(t, Until{Percent: 50}.AtPercent("web-2", 1, 2), ErrUntilReached)
}
