//go:build e2e

package e2e

// kubectl stagehand get dc/NAME with the real plugin binary: the tree of revisions, the
// deployer pod and the hook pods with their states, and `get --watch --until-complete`
// read line by line while a rollout runs, as a CI log would show it.

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/e2e/framework"
)

func TestCLIGetShowsRevisionsDeployerAndHookPods(t *testing.T) {
	requireController(t)
	// Given a DC with a pre hook whose revision 1 completed
	dc := recreateWithHooks("web", 1, framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo migrating"), nil, nil)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	// When get runs, then it shows the revision, its deployer pod and its pod, each with its
	// state (the deployer deletes the pods of hooks that succeeded)
	res := pluginOK(t, s.NS, "get", "dc/web")
	t.Logf("get dc/web:\n%s", res.Stdout)
	assert.NotContains(t, res.Stdout, "\x1b", "no escape codes without a terminal")
	assert.Contains(t, res.Stdout, "Status:      ✔ Complete, revision 1")
	assert.Contains(t, res.Stdout, "Strategy:    Recreate, hooks: pre")
	assert.Regexp(t, `(?m)^└── web-1 +Revision 1 +✔ Complete .*ConfigChange, .*ready 1/1, active$`, res.Stdout)
	assert.Regexp(t, `(?m)^    ├── web-1-deploy +Deployer +✔ Succeeded `, res.Stdout)
	assert.Regexp(t, `(?m)^    └── web-1-\S+ +Pod +✔ Running .*ready 1/1`, res.Stdout)

	// When revision 2's pre hook fails
	s.When().Updated(func(dc *stagehandv1.DeploymentConfig) {
		framework.SetVersion(dc, 2)
		dc.Spec.Strategy.RecreateParams.Pre = framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo the schema is locked; exit 1")
	}).Then().RevisionPhase(2, failed)

	// Then get shows it Failed with the reason, the hook pod's exit code and its last output
	// line, and revision 1 still active
	res = pluginOK(t, s.NS, "get", "web")
	t.Logf("get web:\n%s", res.Stdout)
	assert.Contains(t, res.Stdout, "Status:      ✖ Failed, revision 2")
	assert.Regexp(t, `(?m)^├── web-2 +Revision 2 +✖ Failed .*HookFailed`, res.Stdout)
	assert.Regexp(t, `(?m)^│   ├── web-2-deploy +Deployer +✖ Failed .*exit code`, res.Stdout)
	assert.Regexp(t, `(?m)^│   └── web-2-hook-pre +Hook pre +✖ Failed .*exit code 1 \(Error\): the schema is locked$`, res.Stdout)
	assert.Regexp(t, `(?m)^└── web-1 +Revision 1 +✔ Complete .*active$`, res.Stdout)

	// And a DC that does not exist is an error
	missing := plugin(t, s.NS, "get", "dc/nothing")
	assert.Equal(t, 1, missing.ExitCode, "%s", missing)
	assert.Contains(t, missing.Stderr, `deploymentconfig "nothing" not found`)
}

func TestCLIGetWatchShowsARolloutUntilItCompletes(t *testing.T) {
	requireController(t)
	// Given a DC whose revision 1 completed; its pre hook makes a rollout last a few seconds
	dc := recreateWithHooks("web", 1, framework.ShellHook(stagehandv1.LifecycleHookFailurePolicyAbort, "echo warming up; sleep 3"), nil, nil)
	s := env.Given(t).DeploymentConfig(dc)
	s.When().Created().Then().RevisionPhase(1, complete).ReadyPods(1)

	// And get --watch --until-complete runs, its output read as it arrives
	ctx, cancel := context.WithTimeout(context.Background(), framework.RolloutTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.PluginPath(), "--kubeconfig", env.Kubeconfig, "--namespace", s.NS,
		"get", "dc/web", "--watch", "--until-complete", "--timeout", framework.RolloutTimeout.String())
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start(), "run make build first")
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen, hook []string // the states of revision 2 and of its pre hook pod, in the order they were printed
	var output strings.Builder
	revision2 := regexp.MustCompile(`^├── web-2 +Revision 2 +\S+ (\S+)`)
	hookPod := regexp.MustCompile(`^│   [├└]── web-2-hook-pre +Hook pre +\S+ (\S+)`)
	read := func(until func(line string) bool) {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					return
				}
				output.WriteString(line + "\n")
				if m := revision2.FindStringSubmatch(line); m != nil && (len(seen) == 0 || seen[len(seen)-1] != m[1]) {
					seen = append(seen, m[1])
				}
				if m := hookPod.FindStringSubmatch(line); m != nil && (len(hook) == 0 || hook[len(hook)-1] != m[1]) {
					hook = append(hook, m[1])
				}
				if until(line) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no more output from get --watch:\n%s", output.String())
			}
		}
	}
	read(func(line string) bool { return strings.HasPrefix(line, "└── web-1 ") })
	require.NotContains(t, output.String(), "web-2", "the first tree shows revision 1 only")

	// When the template changes
	s.When().TemplateChanged(2)

	// Then the watch shows revision 2 Running (with its pre hook pod) and then Complete, in
	// that order, and exits 0 by itself
	read(func(string) bool { return false })
	werr := cmd.Wait()
	t.Logf("get --watch --until-complete printed:\n%s", output.String())
	var exit *exec.ExitError
	if errors.As(werr, &exit) {
		t.Fatalf("get --watch exited %d: %s", exit.ExitCode(), stderr.String())
	}
	require.NoError(t, werr, "get --watch ended by itself, before the test's deadline")
	assert.Contains(t, seen, string(stagehandv1.RevisionPhaseRunning), "states of revision 2: %v", seen)
	require.NotEmpty(t, seen)
	assert.Equal(t, string(complete), seen[len(seen)-1], "the last tree shows revision 2 Complete: %v", seen)
	assert.Less(t, slices.Index(seen, string(stagehandv1.RevisionPhaseRunning)), slices.Index(seen, string(complete)), "Running before Complete: %v", seen)
	assert.Contains(t, hook, "Running", "the pre hook pod, seen while it runs: %v", hook)
	assert.Regexp(t, `(?m)^--- \d{4}-\d\d-\d\dT`, output.String(), "each tree starts with a timestamp line")
	assert.NotContains(t, output.String(), "\x1b", "no escape codes without a terminal")
	s.Then().RevisionPhase(2, complete)
}
