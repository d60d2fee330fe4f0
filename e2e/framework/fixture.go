package framework

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	stagehandv1 "github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// RolloutTimeout bounds a wait for one rollout in the suite.
const RolloutTimeout = 2 * time.Minute

// Scenario is one Given/When/Then test of a DeploymentConfig in a namespace of its own.
//
//	env.Given(t).DeploymentConfig(dc).
//		When().Created().
//		Then().RevisionPhase(1, stagehandv1.RevisionPhaseComplete).ReadyPods(4)
type Scenario struct {
	t        *testing.T
	env      *Env
	NS       string
	Name     string
	deployer *PodRecorder
	pending  *stagehandv1.DeploymentConfig
}

// Given starts a scenario: a namespace of the test's own, and a recorder of every deployer
// pod created in it, so a test can check that each revision had exactly one.
func (e *Env) Given(t *testing.T) *Given {
	t.Helper()
	s := &Scenario{t: t, env: e, NS: e.Namespace(t)}
	s.deployer = e.RecordPods(t, s.NS, stagehandv1.DeployerPodForLabel)
	return &Given{s}
}

// Given sets up the scenario.
type Given struct{ *Scenario }

// When acts on the scenario.
type When struct{ *Scenario }

// Then checks the scenario, waiting on watches.
type Then struct{ *Scenario }

// DeploymentConfig names the DeploymentConfig the scenario is about; When().Created()
// creates it.
func (g *Given) DeploymentConfig(dc *stagehandv1.DeploymentConfig) *Given {
	g.Name = dc.Name
	g.pending = dc
	return g
}

// When moves on to the actions.
func (g *Given) When() *When { return &When{g.Scenario} }

// Created creates the DeploymentConfig given to DeploymentConfig().
func (w *When) Created() *When {
	w.t.Helper()
	require.NotNil(w.t, w.pending, "Given().DeploymentConfig(...) first")
	_, err := w.env.Stagehand.StagehandV1alpha1().DeploymentConfigs(w.NS).Create(context.Background(), w.pending, metav1.CreateOptions{})
	require.NoError(w.t, err, "creating DeploymentConfig %s", w.Name)
	return w
}

// Updated changes the DeploymentConfig's spec (retrying on conflicts).
func (w *When) Updated(mutate func(*stagehandv1.DeploymentConfig)) *When {
	w.t.Helper()
	client := w.env.Stagehand.StagehandV1alpha1().DeploymentConfigs(w.NS)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dc, err := client.Get(context.Background(), w.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(dc)
		_, err = client.Update(context.Background(), dc, metav1.UpdateOptions{})
		return err
	})
	require.NoError(w.t, err, "updating DeploymentConfig %s", w.Name)
	return w
}

// TemplateChanged changes the pod template (the VERSION variable of the first container),
// which a ConfigChange trigger turns into a new revision.
func (w *When) TemplateChanged(version int) *When {
	w.t.Helper()
	return w.Updated(func(dc *stagehandv1.DeploymentConfig) { SetVersion(dc, version) })
}

// Scaled runs `kubectl scale dc/<name> --replicas=N`, which goes through the scale
// subresource.
func (w *When) Scaled(replicas int32) *When {
	w.t.Helper()
	out, err := w.env.Kubectl(w.NS, "scale", "dc/"+w.Name, "--replicas="+strconv.Itoa(int(replicas)))
	require.NoError(w.t, err, "kubectl scale: %s", out)
	return w
}

// Then moves on to the checks.
func (w *When) Then() *Then { return &Then{w.Scenario} }

// When goes back to actions after checks.
func (th *Then) When() *When { return &When{th.Scenario} }

// RevisionPhase waits until revision n is in the phase.
func (th *Then) RevisionPhase(n int64, phase stagehandv1.RevisionPhase) *Then {
	th.t.Helper()
	th.env.WaitForRevision(th.t, th.NS, th.Name, n, RolloutTimeout, "phase "+string(phase), func(rs map[string]string, _ int32) bool {
		return rs[stagehandv1.PhaseAnnotation] == string(phase)
	})
	return th
}

// RevisionReplicas waits until revision n's ReplicaSet asks for the replicas.
func (th *Then) RevisionReplicas(n int64, replicas int32) *Then {
	th.t.Helper()
	th.env.WaitForRevision(th.t, th.NS, th.Name, n, RolloutTimeout, strconv.Itoa(int(replicas))+" replicas", func(_ map[string]string, r int32) bool {
		return r == replicas
	})
	return th
}

// ReadyPods waits until exactly n pods of the DeploymentConfig are ready and none is
// terminating.
func (th *Then) ReadyPods(n int) *Then {
	th.t.Helper()
	th.env.WaitForPods(th.t, th.NS, stagehandv1.ConfigLabel+"="+th.Name+",!"+stagehandv1.DeployerPodForLabel+",!"+stagehandv1.HookStageLabel, RolloutTimeout,
		strconv.Itoa(n)+" ready pods of "+th.Name, func(pods []*corev1.Pod) bool {
			ready := 0
			for _, p := range pods {
				if p.DeletionTimestamp != nil {
					return false
				}
				if PodReady(p) {
					ready++
				}
			}
			return ready == n && len(pods) == n
		})
	return th
}

// DeploymentConfig waits until cond holds for the DeploymentConfig.
func (th *Then) DeploymentConfig(what string, cond func(*stagehandv1.DeploymentConfig) bool) *Then {
	th.t.Helper()
	th.env.WaitForDeploymentConfig(th.t, th.NS, th.Name, RolloutTimeout, what, cond)
	return th
}

// OneDeployerPodPerRevision checks that every revision so far had exactly one deployer
// pod, from the recorder that watched the namespace since Given.
func (th *Then) OneDeployerPodPerRevision(revisions int64) *Then {
	th.t.Helper()
	created := th.deployer.Created()
	for n := int64(1); n <= revisions; n++ {
		name := stagehandv1.DeployerPodName(stagehandv1.RevisionName(th.Name, n))
		require.Equal(th.t, 1, created[name], "deployer pods named %s created (every pod seen: %v)", name, created)
	}
	return th
}

// Then checks the scenario without acting first.
func (s *Scenario) Then() *Then { return &Then{s} }

// Deployers returns how many distinct deployer pods were created under each name since Given.
func (s *Scenario) Deployers() map[string]int { return s.deployer.Created() }

// Get returns the DeploymentConfig as it is now.
func (s *Scenario) Get() *stagehandv1.DeploymentConfig {
	s.t.Helper()
	dc, err := s.env.Stagehand.StagehandV1alpha1().DeploymentConfigs(s.NS).Get(context.Background(), s.Name, metav1.GetOptions{})
	require.NoError(s.t, err)
	return dc
}
