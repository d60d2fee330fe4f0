package deployer_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
)

func TestOutcome(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantCode   v1alpha1.DeployerExitCode
		wantReason string
	}{
		{name: "success", err: nil, wantCode: v1alpha1.ExitComplete, wantReason: v1alpha1.ReasonCompleted},
		{name: "stopped at --until", err: fmt.Errorf("rolling: %w", strategies.ErrUntilReached), wantCode: v1alpha1.ExitComplete, wantReason: v1alpha1.ReasonCompleted},
		{name: "any other error", err: errors.New("boom"), wantCode: v1alpha1.ExitFailed, wantReason: v1alpha1.ReasonFailed},
		{name: "invalid input", err: fmt.Errorf("reading: %w", strategies.Invalidf("bad")), wantCode: v1alpha1.ExitInvalid, wantReason: v1alpha1.ReasonInvalidConfig},
		{name: "hook failed", err: fmt.Errorf("pre: %w", &strategies.HookFailedError{Stage: "pre", Err: errors.New("exit 1")}), wantCode: v1alpha1.ExitHookAborted, wantReason: v1alpha1.ReasonHookFailed},
		{name: "timed out", err: fmt.Errorf("scaling: %w", &strategies.TimeoutError{Revision: "web-2"}), wantCode: v1alpha1.ExitTimedOut, wantReason: v1alpha1.ReasonTimedOut},
		{name: "a new pod that cannot start fails with its waiting reason", err: fmt.Errorf("rolling: %w", &strategies.PodStuckError{Revision: "web-2", Pod: "web-2-abcde", Reason: "CreateContainerConfigError"}), wantCode: v1alpha1.ExitFailed, wantReason: "CreateContainerConfigError"},
		{name: "a stuck pod without a reason is Failed", err: &strategies.PodStuckError{Pod: "web-2-abcde"}, wantCode: v1alpha1.ExitFailed, wantReason: v1alpha1.ReasonFailed},
		{name: "cancelled", err: fmt.Errorf("waiting: %w", strategies.ErrCancelled), wantCode: v1alpha1.ExitCancelled, wantReason: v1alpha1.ReasonCancelled},
		{name: "context cancelled", err: fmt.Errorf("scaling: %w", context.Canceled), wantCode: v1alpha1.ExitCancelled, wantReason: v1alpha1.ReasonCancelled},
		{name: "cancelled wins over a timeout", err: fmt.Errorf("%w: %w", strategies.ErrCancelled, &strategies.TimeoutError{}), wantCode: v1alpha1.ExitCancelled, wantReason: v1alpha1.ReasonCancelled},
		{name: "a custom flow's own reason and code", err: fmt.Errorf("gate: %w", &deployer.Failure{Reason: "CanaryCheckFailed", Message: "check failed", Code: v1alpha1.ExitHookAborted}), wantCode: v1alpha1.ExitHookAborted, wantReason: "CanaryCheckFailed"},
		{name: "a custom failure defaults to exit 1 and Failed", err: &deployer.Failure{Message: "no"}, wantCode: v1alpha1.ExitFailed, wantReason: v1alpha1.ReasonFailed},
		{name: "a custom failure wrapping a timeout keeps its own reason", err: &deployer.Failure{Reason: "GateTimedOut", Message: "slow", Err: &strategies.TimeoutError{}}, wantCode: v1alpha1.ExitFailed, wantReason: "GateTimedOut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, reason := deployer.Outcome(tt.err)
			assert.Equal(t, tt.wantCode, code)
			assert.Equal(t, tt.wantReason, reason)
			assert.Equal(t, tt.wantReason, deployer.TerminationMessageFor(tt.err, "done").Reason)
		})
	}
}

// The hooks a run finished travel in the termination message, bounded, and the whole
// message stays under the kubelet's 4 KiB however long the failure's text is.
func TestTerminationMessageCarriesTheHooks(t *testing.T) {
	var hooks []v1alpha1.HookOutcome
	for i := range v1alpha1.MaxReportedHooks + 6 {
		hooks = append(hooks, v1alpha1.HookOutcome{Stage: v1alpha1.StepStage(i + 1), Result: v1alpha1.HookResultIgnored, Seconds: 12345.678})
	}
	long := errors.New(strings.Repeat("log line of the failed hook\n", 400) + "the end")
	m := deployer.TerminationMessageFor(long, "", hooks...)
	assert.Len(t, m.Hooks, v1alpha1.MaxReportedHooks, "at most MaxReportedHooks")
	assert.Equal(t, "step-1", m.Hooks[0].Stage, "the first ones")
	assert.LessOrEqual(t, len(m.Encode()), 4096, "under the kubelet's limit")
	assert.True(t, strings.HasSuffix(m.Message, "the end"), "the end of the text is kept")

	m = deployer.TerminationMessageFor(nil, "done", hooks[0])
	assert.Equal(t, `{"reason":"Completed","message":"done","hooks":[{"stage":"step-1","result":"Ignored","seconds":12345.678}]}`, m.Encode())
	assert.Equal(t, `{"reason":"Completed","message":"done"}`, deployer.TerminationMessageFor(nil, "done").Encode(), "no hooks: no field")
}

func TestConfigEnvNamesFollowTheContract(t *testing.T) {
	want := map[string]string{
		"Revision":                     v1alpha1.EnvRevision,
		"Namespace":                    v1alpha1.EnvNamespace,
		"OpenShiftDeploymentName":      v1alpha1.EnvOpenShiftDeploymentName,
		"OpenShiftDeploymentNamespace": v1alpha1.EnvOpenShiftDeploymentNamespace,
		"TerminationMessagePath":       deployer.EnvTerminationMessagePath,
	}
	typ := reflect.TypeFor[deployer.Config]()
	for field, env := range want {
		f, ok := typ.FieldByName(field)
		require.True(t, ok, field)
		assert.Equal(t, env, f.Tag.Get("envconfig"), field)
	}
	f, _ := typ.FieldByName("TerminationMessagePath")
	assert.Equal(t, v1alpha1.DefaultTerminationMessagePath, f.Tag.Get("default"))
}

func TestConfigResolved(t *testing.T) {
	t.Setenv(v1alpha1.EnvRevision, "")
	t.Setenv(v1alpha1.EnvNamespace, "")
	t.Setenv(v1alpha1.EnvOpenShiftDeploymentName, "web-3")
	t.Setenv(v1alpha1.EnvOpenShiftDeploymentNamespace, "shop")
	cfg, err := deployer.LoadConfig()
	require.NoError(t, err)
	revision, namespace, err := cfg.Resolved()
	require.NoError(t, err)
	assert.Equal(t, "web-3", revision, "falls back to OPENSHIFT_DEPLOYMENT_NAME")
	assert.Equal(t, "shop", namespace)
	assert.Equal(t, v1alpha1.DefaultTerminationMessagePath, cfg.TerminationMessagePath)

	cfg.Revision = "web-4"
	revision, _, err = cfg.Resolved()
	require.NoError(t, err)
	assert.Equal(t, "web-4", revision, "STAGEHAND_REVISION wins")

	_, _, err = deployer.Config{Namespace: "shop"}.Resolved()
	code, _ := deployer.Outcome(err)
	assert.Equal(t, v1alpha1.ExitInvalid, code)
	assert.ErrorContains(t, err, v1alpha1.EnvRevision)
}

func unitRevision(n int64, replicas int32, phase v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	dc := testutil.DeploymentConfig("web", testutil.SimulatedImage, 4, v1alpha1.DeploymentStrategy{Type: v1alpha1.DeploymentStrategyTypeRecreate})
	dc.Namespace, dc.UID = "shop", "dc-uid"
	rs := testutil.Revision(dc, n, replicas, phase)
	rs.UID = types.UID(fmt.Sprintf("rs-%d", n))
	return rs
}

func TestParseRevision(t *testing.T) {
	in, err := deployer.ParseRevision(unitRevision(3, 0, v1alpha1.RevisionPhaseRunning))
	require.NoError(t, err)
	assert.Equal(t, "web", in.ConfigName)
	assert.Equal(t, int64(3), in.Version)
	assert.Equal(t, int32(4), in.Desired)
	require.NotNil(t, in.Config.Spec.Strategy.RecreateParams, "defaults are applied")
	assert.Equal(t, v1alpha1.DefaultTimeoutSeconds, *in.Config.Spec.Strategy.RecreateParams.TimeoutSeconds)

	tests := []struct {
		name   string
		mutate func(rs *appsv1.ReplicaSet)
		want   string
	}{
		{name: "missing snapshot", mutate: func(rs *appsv1.ReplicaSet) { delete(rs.Annotations, v1alpha1.ConfigSnapshotAnnotation) }, want: "has no " + v1alpha1.ConfigSnapshotAnnotation},
		{name: "unparsable snapshot", mutate: func(rs *appsv1.ReplicaSet) { rs.Annotations[v1alpha1.ConfigSnapshotAnnotation] = "[" }, want: "is not a DeploymentConfig spec"},
		{name: "missing desired replicas", mutate: func(rs *appsv1.ReplicaSet) { delete(rs.Annotations, v1alpha1.DesiredReplicasAnnotation) }, want: v1alpha1.DesiredReplicasAnnotation},
		{name: "negative desired replicas", mutate: func(rs *appsv1.ReplicaSet) { rs.Annotations[v1alpha1.DesiredReplicasAnnotation] = "-1" }, want: v1alpha1.DesiredReplicasAnnotation},
		{name: "no config label", mutate: func(rs *appsv1.ReplicaSet) { delete(rs.Labels, v1alpha1.ConfigLabel) }, want: "not a Stagehand revision"},
		{name: "no revision label", mutate: func(rs *appsv1.ReplicaSet) { rs.Labels[v1alpha1.RevisionLabel] = "x" }, want: v1alpha1.RevisionLabel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := unitRevision(3, 0, v1alpha1.RevisionPhaseRunning)
			tt.mutate(rs)
			_, err := deployer.ParseRevision(rs)
			require.Error(t, err)
			assert.ErrorContains(t, err, tt.want)
			code, _ := deployer.Outcome(err)
			assert.Equal(t, v1alpha1.ExitInvalid, code)
		})
	}
}

func TestSelectRevisions(t *testing.T) {
	foreign := unitRevision(2, 3, v1alpha1.RevisionPhaseComplete)
	foreign.OwnerReferences[0].UID = "another-dc"
	names := func(rss []*appsv1.ReplicaSet) []string {
		var out []string
		for _, rs := range rss {
			out = append(out, rs.Name)
		}
		return out
	}
	tests := []struct {
		name      string
		to        *appsv1.ReplicaSet
		all       []*appsv1.ReplicaSet
		wantFrom  string
		wantOlder []string
	}{
		{name: "first rollout", to: unitRevision(1, 0, v1alpha1.RevisionPhaseRunning), wantFrom: ""},
		{name: "newest complete is from", to: unitRevision(4, 0, v1alpha1.RevisionPhaseRunning),
			all:      []*appsv1.ReplicaSet{unitRevision(1, 0, v1alpha1.RevisionPhaseComplete), unitRevision(2, 4, v1alpha1.RevisionPhaseComplete), unitRevision(3, 1, v1alpha1.RevisionPhaseFailed)},
			wantFrom: "web-2", wantOlder: []string{"web-3"}},
		{name: "failed revisions are never from", to: unitRevision(3, 0, v1alpha1.RevisionPhaseRunning),
			all:      []*appsv1.ReplicaSet{unitRevision(1, 2, v1alpha1.RevisionPhaseFailed), unitRevision(2, 0, v1alpha1.RevisionPhaseFailed)},
			wantFrom: "", wantOlder: []string{"web-1"}},
		{name: "newer revisions and other owners are ignored", to: unitRevision(3, 0, v1alpha1.RevisionPhaseRunning),
			all:      []*appsv1.ReplicaSet{unitRevision(1, 4, v1alpha1.RevisionPhaseComplete), foreign, unitRevision(4, 2, v1alpha1.RevisionPhaseNew)},
			wantFrom: "web-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := []appsv1.ReplicaSet{*tt.to}
			for _, rs := range tt.all {
				all = append(all, *rs)
			}
			from, older := deployer.SelectRevisions(tt.to, all)
			if tt.wantFrom == "" {
				assert.Nil(t, from)
			} else if assert.NotNil(t, from) {
				assert.Equal(t, tt.wantFrom, from.Name)
			}
			assert.Equal(t, tt.wantOlder, names(older))
		})
	}
}

func TestProgramName(t *testing.T) {
	assert.Equal(t, deployer.OpenShiftName, deployer.ProgramName("/usr/bin/openshift-deploy", "stagehand-deployer"))
	assert.Equal(t, "stagehand-deployer", deployer.ProgramName("/stagehand-deployer", "stagehand-deployer"))
	assert.Equal(t, "canary", deployer.ProgramName("./canary", "canary"))
}

func TestLoadInputsReadsTheRevisionsInOneList(t *testing.T) {
	to := unitRevision(3, 0, v1alpha1.RevisionPhaseRunning)
	from := unitRevision(2, 4, v1alpha1.RevisionPhaseComplete)
	client := fake.NewClientset(to, from)
	in, err := deployer.LoadInputs(context.Background(), client, to.Namespace, to.Name)
	require.NoError(t, err)
	require.NotNil(t, in.From)
	assert.Equal(t, "web-2", in.From.Name)
	assert.Equal(t, "web-3", in.To.Name)
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
	}
	assert.Equal(t, []string{"list replicasets"}, verbs, "a revision named <config>-<N> is read with its siblings")

	_, err = deployer.LoadInputs(context.Background(), client, to.Namespace, "web-9")
	require.Error(t, err, "a revision that does not exist")
	assert.ErrorContains(t, err, "does not exist")
	code, _ := deployer.Outcome(err)
	assert.Equal(t, v1alpha1.ExitInvalid, code)
}
