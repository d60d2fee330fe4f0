package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/rollout"
	"github.com/stagehand-dev/stagehand/internal/tree"
)

// syncBuffer is written by the watch and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestGetWatchUntilCompleteFollowsTheNextRollout(t *testing.T) {
	for _, tt := range []struct {
		name    string
		outcome v1alpha1.RevisionPhase
		wantErr string
	}{
		{name: "complete", outcome: v1alpha1.RevisionPhaseComplete},
		{name: "failed", outcome: v1alpha1.RevisionPhaseFailed, wantErr: "revision web-2 failed: HookFailed: the pre hook failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Given a DC whose revision 1 is Complete, watched with --until-complete
			dc := treeDC(treeRolling(), 1, v1alpha1.RevisionPhaseComplete, 2)
			rs1 := treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 2, 2, 10*time.Minute)
			out := &syncBuffer{}
			g := newTreeGetter([]runtime.Object{dc, rs1}, nil)
			g.out = out
			done := make(chan error, 1)
			go func() { done <- g.watch(ctx, true) }()
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "web-1") }, 10*time.Second, 10*time.Millisecond)

			// When revision 2 starts, runs and ends
			rs2 := treeRevision(dc, 2, v1alpha1.RevisionPhaseRunning, 2, 0, 0)
			_, err := g.kube.AppsV1().ReplicaSets("shop").Create(ctx, rs2, metav1.CreateOptions{})
			require.NoError(t, err)
			dc.Status.LatestVersion, dc.Status.Phase = 2, v1alpha1.RevisionPhaseRunning
			_, err = g.stagehand.StagehandV1alpha1().DeploymentConfigs("shop").UpdateStatus(ctx, dc, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "◌ Running") }, 10*time.Second, 10*time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("the watch ended while revision 2 runs: %v", err)
			default:
			}
			rs2.Annotations[v1alpha1.PhaseAnnotation] = string(tt.outcome)
			rs2.Annotations[v1alpha1.StatusReasonAnnotation] = "HookFailed: the pre hook failed"
			_, err = g.kube.AppsV1().ReplicaSets("shop").Update(ctx, rs2, metav1.UpdateOptions{})
			require.NoError(t, err)
			// (the watch waits for the DC's status to say so too)
			time.Sleep(100 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("the watch ended before the DC's status followed the revision: %v", err)
			default:
			}
			dc.Status.Phase = tt.outcome
			_, err = g.stagehand.StagehandV1alpha1().DeploymentConfigs("shop").UpdateStatus(ctx, dc, metav1.UpdateOptions{})
			require.NoError(t, err)

			// Then the watch ends by itself, with the outcome
			select {
			case err := <-done:
				if tt.wantErr == "" {
					require.NoError(t, err)
				} else {
					require.EqualError(t, err, tt.wantErr)
					var failed *rollout.RolloutFailed
					assert.ErrorAs(t, err, &failed)
				}
			case <-ctx.Done():
				t.Fatal("the watch did not end when revision 2 ended")
			}
			text := out.String()
			assert.NotContains(t, text, "\x1b", "no escape codes without a terminal")
			assert.True(t, strings.HasPrefix(text, "--- 2026-05-06T12:00:00Z\n"), "each tree starts with a timestamp line:\n%s", text)
			trees := strings.Split(text, "\n\n--- ")
			for i := 1; i < len(trees); i++ {
				assert.NotEqual(t, trees[i-1][strings.Index(trees[i-1], "\n"):], trees[i][strings.Index(trees[i], "\n"):], "tree %d repeats the one before", i)
			}
			running := regexp.MustCompile(`web-2 +Revision 2 +◌ Running`).FindStringIndex(text)
			ended := regexp.MustCompile(`web-2 +Revision 2 +\S+ ` + string(tt.outcome)).FindStringIndex(text)
			require.NotNil(t, running, "revision 2 Running:\n%s", text)
			require.NotNil(t, ended, "revision 2 %s:\n%s", tt.outcome, text)
			assert.Greater(t, ended[0], running[0], "Running, then the outcome")
		})
	}
}

func TestGetPrintRedrawsOnATerminalAndDedupesOtherwise(t *testing.T) {
	dc := treeDC(treeRolling(), 1, v1alpha1.RevisionPhaseComplete, 2)
	o := &tree.Objects{DC: dc, ReplicaSets: []*appsv1.ReplicaSet{treeRevision(dc, 1, v1alpha1.RevisionPhaseComplete, 2, 2, time.Minute)}}
	now := treeNow

	var plain bytes.Buffer
	g := newTreeGetter(nil, &plain)
	g.now = func() time.Time { return now }
	g.print(o)
	now = now.Add(time.Minute) // only the ages move
	g.print(o)
	assert.Equal(t, 1, strings.Count(plain.String(), "--- "), "an unchanged tree is not printed again:\n%s", plain.String())
	o.ReplicaSets[0].Annotations[v1alpha1.PhaseAnnotation] = string(v1alpha1.RevisionPhaseFailed)
	g.print(o)
	assert.Equal(t, 2, strings.Count(plain.String(), "--- "))
	assert.Contains(t, plain.String(), "\n\n--- 2026-05-06T12:01:00Z\nName:", "a changed tree follows a blank line and a timestamp:\n%s", plain.String())

	var term bytes.Buffer
	g = newTreeGetter(nil, &term)
	g.tty, g.style = true, tree.Style{Color: true}
	g.print(o)
	g.print(o)
	assert.Equal(t, 2, strings.Count(term.String(), "\x1b[H\x1b[2J"), "a terminal is redrawn in place each time")
	assert.Contains(t, term.String(), "\x1b[31m✖ Failed\x1b[0m")
}
