package v1alpha1

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestHookPodName(t *testing.T) {
	long := strings.Repeat("a", 60)
	tests := []struct {
		name     string
		revision string
		stage    string
		attempt  int
		want     string
	}{
		{name: "first attempt keeps the plain name", revision: "web-3", stage: "pre", attempt: 1, want: "web-3-hook-pre"},
		{name: "attempt zero is the first attempt", revision: "web-3", stage: "mid", attempt: 0, want: "web-3-hook-mid"},
		{name: "later attempts get a suffix", revision: "web-3", stage: "post", attempt: 2, want: "web-3-hook-post-2"},
		{name: "exactly 63 characters is kept", revision: strings.Repeat("b", 54), stage: "pre", attempt: 1, want: strings.Repeat("b", 54) + "-hook-pre"},
		{name: "over 63 characters is shortened", revision: long + "-12", stage: "post", attempt: 1, want: ShortenName(long + "-12-hook-post")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HookPodName(tt.revision, tt.stage, tt.attempt)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), MaxDerivedNameLength)
			assert.Empty(t, validation.IsDNS1123Label(got), "hook pod name %q must be a DNS label", got)
		})
	}
}

func TestShortenName(t *testing.T) {
	a := strings.Repeat("x", 70) + "-1-hook-pre"
	b := strings.Repeat("x", 70) + "-2-hook-pre"
	assert.Equal(t, ShortenName(a), ShortenName(a), "shortening must be stable")
	assert.NotEqual(t, ShortenName(a), ShortenName(b), "distinct long names must stay distinct")
	assert.Len(t, ShortenName(a), MaxDerivedNameLength)
	assert.True(t, strings.HasPrefix(ShortenName(a), strings.Repeat("x", 40)), "the readable prefix is kept")

	// A cut that lands on a '-' must not leave "--" or a trailing '-' before the hash.
	dashes := strings.Repeat("y", 51) + "-------------------hook-pre"
	got := ShortenName(dashes)
	assert.NotContains(t, got, "--")
	assert.Empty(t, validation.IsDNS1123Label(got))
}

func TestRevisionAndDeployerNames(t *testing.T) {
	assert.Equal(t, "web-12", RevisionName("web", 12))
	assert.Equal(t, "web-12-deploy", DeployerPodName(RevisionName("web", 12)))
	long := strings.Repeat("n", 63)
	assert.Equal(t, long+"-7-deploy", DeployerPodName(RevisionName(long, 7)), "the deployer pod name is a public contract and is never shortened")
}

func TestParseRevisionName(t *testing.T) {
	config, n, ok := ParseRevisionName(RevisionName("my-web-2", 12))
	assert.True(t, ok)
	assert.Equal(t, "my-web-2", config)
	assert.Equal(t, int64(12), n)
	for _, name := range []string{"web", "web-", "-3", "web-x", "web-0", "web-012", "web-+1"} {
		_, _, ok := ParseRevisionName(name)
		assert.False(t, ok, name)
	}
}

func TestRevisionPhaseIsTerminal(t *testing.T) {
	for phase, want := range map[RevisionPhase]bool{
		RevisionPhaseNew: false, RevisionPhasePending: false, RevisionPhaseRunning: false,
		RevisionPhaseComplete: true, RevisionPhaseFailed: true,
	} {
		assert.Equal(t, want, phase.IsTerminal(), string(phase))
	}
}
