package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"

	stagehandfake "github.com/stagehand-dev/stagehand/api/client/clientset/versioned/fake"
	"github.com/stagehand-dev/stagehand/internal/rollout"
)

// runDefer runs `defer args...` in namespace shop of an empty cluster. The commands'
// logic is internal/deferrun's, tested there; this is their wiring: arguments, -o and
// exit codes.
func runDefer(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newDeferCommandWith(func() (*rollout.Client, error) {
		return &rollout.Client{Kube: kubefake.NewClientset(), Stagehand: stagehandfake.NewSimpleClientset(), Namespace: "shop"}, nil
	}, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestDeferCommandsRefuseAWrongCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"status", "web-1", "web-2"},
		{"status", "web-1", "-A"},
		{"status", "-o", "wide"},
		{"release"},
		{"release", "web-1", "web-2"},
	} {
		_, err := runDefer(t, args...)
		require.Error(t, err, "%v", args)
		assert.Equal(t, 2, exitCode(err), "%v: a usage error", args)
	}
}

func TestDeferCommandsFailOnAMissingPodWithExitCode1(t *testing.T) {
	for _, args := range [][]string{{"status", "pod/nope"}, {"release", "nope"}} {
		_, err := runDefer(t, args...)
		require.Error(t, err)
		assert.Equal(t, `pod "nope" not found in namespace "shop"`, err.Error())
		assert.Equal(t, 1, exitCode(err), "docs/cli.md: 1 when the operation failed")
	}
}

func TestDeferStatusPrintsTheReportOrItsData(t *testing.T) {
	out, err := runDefer(t, "status")
	require.NoError(t, err)
	assert.Equal(t, "No pods are in a defer phase in namespace shop.\n", out)

	out, err = runDefer(t, "status", "-A", "-o", "json")
	require.NoError(t, err)
	assert.Equal(t, "[]\n", out, "an empty list for scripts")
}
