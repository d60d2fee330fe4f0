package recreate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/strategies"
	"github.com/stagehand-dev/stagehand/strategies/recreate"
)

// errorCheck asserts the error of Deploy.
type errorCheck func(t *testing.T, err error)

func succeeds(t *testing.T, err error) { assert.NoError(t, err) }

func stopsWith(target error) errorCheck {
	return func(t *testing.T, err error) { assert.ErrorIs(t, err, target) }
}

// hookFails checks for the *HookFailedError of an Abort hook that failed at stage.
func hookFails(stage string) errorCheck {
	return func(t *testing.T, err error) {
		var failed *strategies.HookFailedError
		require.ErrorAs(t, err, &failed)
		assert.Equal(t, stage, failed.Stage)
	}
}

func isInvalid(t *testing.T, err error) {
	var invalid *strategies.InvalidError
	assert.ErrorAs(t, err, &invalid)
}

// timesOutOn checks for the *TimeoutError of a wait on revision.
func timesOutOn(revision string) errorCheck {
	return func(t *testing.T, err error) {
		var timeout *strategies.TimeoutError
		require.ErrorAs(t, err, &timeout)
		assert.Equal(t, revision, timeout.Revision)
	}
}

// stuckOn checks for the *PodStuckError of a pod of revision that cannot start.
func stuckOn(revision string) errorCheck {
	return func(t *testing.T, err error) {
		var stuck *strategies.PodStuckError
		require.ErrorAs(t, err, &stuck)
		assert.Equal(t, revision, stuck.Revision)
		assert.Equal(t, podstatus.WaitingCreateContainerConfigError, stuck.Reason)
	}
}

// failAt makes the hook of stage fail.
func failAt(stage string) map[string]error {
	return map[string]error{stage: &strategies.HookFailedError{Stage: stage, Err: errors.New("exit 1")}}
}

// recreateCase is one case of TestRecreateDeploy.
type recreateCase struct {
	name    string
	old     *appsv1.ReplicaSet // nil: the first rollout
	older   *appsv1.ReplicaSet // another older revision that still serves (WithOlder), or nil
	new     *appsv1.ReplicaSet
	desired int32
	// adjust makes the strategy under test out of the built one.
	adjust  func(*recreate.Recreate) strategies.Strategy
	cluster clusterOptions
	fail    map[string]error // the error of the hook of a stage
	// cancelAfter cancels the context right after the scale of this log entry.
	cancelAfter  string
	timeout      int64
	wantLog      []string
	wantErr      errorCheck
	wantReplicas map[string]int32
}

// recreateCases are TestRecreateDeploy's cases.
var recreateCases = []recreateCase{
	{
		name: "first rollout", new: revision(1, 0), desired: 3,
		wantLog: []string{
			"pre hook (run-pre): pods web-1 0/0",
			"mid hook (run-mid): pods web-1 0/0",
			"scale web-1 to 3",
			"post hook (run-post): pods web-1 3/3",
		},
		wantErr: succeeds, wantReplicas: map[string]int32{"web-1": 3},
	},
	{
		name: "old pods are gone before the mid hook, new ones available before the post hook",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
			"scale web-2 to 3",
			"post hook (run-post): pods web-1 0/0, web-2 3/3",
		},
		wantErr: succeeds, wantReplicas: map[string]int32{"web-1": 0, "web-2": 3},
	},
	{
		name: "an older revision that still serves runs until the pre hook is over, and stops with from",
		old:  revision(2, 2), older: revision(1, 1), new: revision(3, 0), desired: 3,
		wantLog: []string{
			"pre hook (run-pre): pods web-1 1/1, web-2 2/2, web-3 0/0",
			"scale web-1 to 0",
			"scale web-2 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0, web-3 0/0",
			"scale web-3 to 3",
			"post hook (run-post): pods web-1 0/0, web-2 0/0, web-3 3/3",
		},
		wantErr: succeeds, wantReplicas: map[string]int32{"web-1": 0, "web-2": 0, "web-3": 3},
	},
	{
		name: "without the mid hook",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		adjust: func(r *recreate.Recreate) strategies.Strategy { return r.WithoutMidHook() },
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"scale web-2 to 3",
			"post hook (run-post): pods web-1 0/0, web-2 3/3",
		},
		wantErr: succeeds, wantReplicas: map[string]int32{"web-1": 0, "web-2": 3},
	},
	{
		name: "run again after it completed, it scales nothing",
		old:  revision(1, 0), new: revision(2, 3), desired: 3,
		wantLog: []string{
			"pre hook (run-pre): pods web-1 0/0, web-2 3/3",
			"mid hook (run-mid): pods web-1 0/0, web-2 3/3",
			"post hook (run-post): pods web-1 0/0, web-2 3/3",
		},
		wantErr: succeeds, wantReplicas: map[string]int32{"web-1": 0, "web-2": 3},
	},
	{
		name: "a failed pre hook scales nothing",
		old:  revision(1, 2), new: revision(2, 0), desired: 3, fail: failAt(strategies.StagePre),
		wantLog: []string{"pre hook (run-pre): pods web-1 2/2, web-2 0/0"},
		wantErr: hookFails(strategies.StagePre), wantReplicas: map[string]int32{"web-1": 2, "web-2": 0},
	},
	{
		name: "a failed mid hook leaves the new revision at 0",
		old:  revision(1, 2), new: revision(2, 0), desired: 3, fail: failAt(strategies.StageMid),
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
		},
		wantErr: hookFails(strategies.StageMid), wantReplicas: map[string]int32{"web-1": 0, "web-2": 0},
	},
	{
		name: "a failed post hook fails the rollout",
		old:  revision(1, 2), new: revision(2, 0), desired: 3, fail: failAt(strategies.StagePost),
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
			"scale web-2 to 3",
			"post hook (run-post): pods web-1 0/0, web-2 3/3",
		},
		wantErr: hookFails(strategies.StagePost), wantReplicas: map[string]int32{"web-1": 0, "web-2": 3},
	},
	{
		name: "a mid hook that cannot be built is invalid",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		fail: map[string]error{strategies.StageMid: strategies.Invalidf("no container app")},
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
		},
		wantErr: isInvalid, wantReplicas: map[string]int32{"web-1": 0, "web-2": 0},
	},
	{
		name: "--until=pre",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		adjust: func(r *recreate.Recreate) strategies.Strategy {
			return r.WithUntil(strategies.Until{Stage: strategies.StagePre})
		},
		wantLog: []string{"pre hook (run-pre): pods web-1 2/2, web-2 0/0"},
		wantErr: stopsWith(strategies.ErrUntilReached), wantReplicas: map[string]int32{"web-1": 2, "web-2": 0},
	},
	{
		name: "--until=mid",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		adjust: func(r *recreate.Recreate) strategies.Strategy {
			return r.WithUntil(strategies.Until{Stage: strategies.StageMid})
		},
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
		},
		wantErr: stopsWith(strategies.ErrUntilReached), wantReplicas: map[string]int32{"web-1": 0, "web-2": 0},
	},
	{
		name: "--until=50% of 3 stops at 2 available, before the post hook",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		adjust: func(r *recreate.Recreate) strategies.Strategy { return r.WithUntil(strategies.Until{Percent: 50}) },
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
			"scale web-2 to 2",
		},
		wantErr: stopsWith(strategies.ErrUntilReached), wantReplicas: map[string]int32{"web-1": 0, "web-2": 2},
	},
	{
		name: "cancelled while the old pods terminate, it stops before the mid hook",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		cluster: clusterOptions{stuckTerminating: true}, cancelAfter: "scale web-1 to 0",
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
		},
		wantErr: stopsWith(strategies.ErrCancelled), wantReplicas: map[string]int32{"web-1": 0, "web-2": 0},
	},
	{
		name: "new pods that never become ready time out before the post hook",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		cluster: clusterOptions{unready: true}, timeout: 1,
		wantLog: []string{
			"pre hook (run-pre): pods web-1 0/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
			"scale web-2 to 3",
		},
		wantErr: timesOutOn("web-2"), wantReplicas: map[string]int32{"web-1": 0, "web-2": 3},
	},
	{
		name: "a new pod that cannot start fails the rollout before the post hook, not at the timeout",
		old:  revision(1, 2), new: revision(2, 0), desired: 3,
		cluster: clusterOptions{stuck: "web-2"}, timeout: 5,
		wantLog: []string{
			"pre hook (run-pre): pods web-1 2/2, web-2 0/0",
			"scale web-1 to 0",
			"mid hook (run-mid): pods web-1 0/0, web-2 0/0",
			"scale web-2 to 3",
		},
		wantErr: stuckOn("web-2"), wantReplicas: map[string]int32{"web-1": 0, "web-2": 3},
	},
}

func TestRecreateDeploy(t *testing.T) {
	tests := recreateCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := tt.cluster
			opts.afterScale = func(entry string) {
				if entry == tt.cancelAfter {
					cancel()
				}
			}
			revisions := []*appsv1.ReplicaSet{tt.new}
			if tt.old != nil {
				revisions = append(revisions, tt.old)
			}
			if tt.older != nil {
				revisions = append(revisions, tt.older)
			}
			c := newCluster(t, opts, revisions...)
			params := v1alpha1.RecreateDeploymentStrategyParams{Pre: hook("run-pre"), Mid: hook("run-mid"), Post: hook("run-post")}
			if tt.timeout > 0 {
				params.TimeoutSeconds = &tt.timeout
			}
			built := recreate.New(c.clients(), c.hooks(tt.fail), strategies.NewProgress(t.Output()), params, 0)
			if tt.older != nil {
				built = built.WithOlder([]*appsv1.ReplicaSet{tt.older})
			}
			var strategy strategies.Strategy = built
			if tt.adjust != nil {
				strategy = tt.adjust(built)
			}

			err := strategy.Deploy(ctx, tt.old, tt.new, tt.desired)

			tt.wantErr(t, err)
			assert.Equal(t, tt.wantLog, c.entries())
			assert.Equal(t, tt.wantReplicas, c.replicas())
		})
	}
}

func TestRecreateCancelledBeforeItStarts(t *testing.T) {
	c := newCluster(t, clusterOptions{}, revision(1, 2), revision(2, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := recreate.New(c.clients(), c.hooks(nil), strategies.NewProgress(t.Output()), v1alpha1.RecreateDeploymentStrategyParams{}, 0)

	err := r.Deploy(ctx, revision(1, 2), revision(2, 0), 3)

	assert.ErrorIs(t, err, strategies.ErrCancelled)
	assert.Equal(t, map[string]int32{"web-1": 2, "web-2": 0}, c.replicas(), "nothing is scaled")
}

func TestFirstRollout(t *testing.T) {
	params := v1alpha1.RollingDeploymentStrategyParams{Pre: hook("run-pre"), Post: hook("run-post")}
	tests := []struct {
		name    string
		until   strategies.Until
		wantLog []string
		wantErr errorCheck
	}{
		{
			name: "Recreate with the pre and post hooks of the Rolling params, no mid hook",
			wantLog: []string{
				"pre hook (run-pre): pods web-1 0/0",
				"scale web-1 to 3",
				"post hook (run-post): pods web-1 3/3",
			},
			wantErr: succeeds,
		},
		{
			name:    "it stops where until says",
			until:   strategies.Until{Stage: strategies.StagePre},
			wantLog: []string{"pre hook (run-pre): pods web-1 0/0"},
			wantErr: stopsWith(strategies.ErrUntilReached),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, clusterOptions{}, revision(1, 0))
			first := recreate.FirstRollout(c.clients(), c.hooks(nil), strategies.NewProgress(t.Output()), 0)

			err := first(params, tt.until).Deploy(context.Background(), nil, revision(1, 0), 3)

			tt.wantErr(t, err)
			assert.Equal(t, tt.wantLog, c.entries())
		})
	}
}
