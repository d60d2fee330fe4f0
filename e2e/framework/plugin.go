package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PluginEnv names the variable that points the suite at a kubectl-stagehand binary; the
// default is bin/kubectl-stagehand of the checkout (make build).
const PluginEnv = "E2E_PLUGIN"

// PluginResult is one run of the kubectl plugin.
type PluginResult struct {
	Args     []string
	Stdout   string
	Stderr   string
	ExitCode int
}

// String renders the run for failure messages.
func (r PluginResult) String() string {
	return fmt.Sprintf("kubectl stagehand %s (exit %d)\n--- stdout\n%s--- stderr\n%s",
		strings.Join(r.Args, " "), r.ExitCode, r.Stdout, r.Stderr)
}

// PluginPath is the kubectl-stagehand binary the suite runs.
func (e *Env) PluginPath() string {
	if p := os.Getenv(PluginEnv); p != "" {
		return p
	}
	return filepath.Join(e.RepoRoot, "bin", "kubectl-stagehand")
}

// Plugin runs the real kubectl-stagehand binary against the suite's cluster in namespace
// ns, with stdin as its input when it is not nil. A run that cannot start at all (no
// binary) is an error; a non-zero exit is not, it is in the result.
func (e *Env) Plugin(ctx context.Context, ns string, stdin []byte, args ...string) (PluginResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", e.Kubeconfig, "--namespace", ns}, args...)
	cmd := exec.CommandContext(ctx, e.PluginPath(), full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	res := PluginResult{Args: args, Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		return res, fmt.Errorf("running %s (build it with make build): %w", e.PluginPath(), err)
	}
	return res, nil
}
