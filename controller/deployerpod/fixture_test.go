package deployerpod

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/internal/controllertest"
)

// fixture is the deployer-pod controller over the shared fake clientsets, so that a test
// can call syncHandler directly and look at the actions.
type fixture struct {
	*controllertest.Fixture
	pods *Controller
}

func newFixture(t *testing.T, dcs []*v1alpha1.DeploymentConfig, kubeObjs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fixture: controllertest.New(t, dcs, kubeObjs...)}
	var err error
	f.pods, err = NewController(f.Kube, f.Informers, Defaults{Image: "stagehand/deployer:test"}, nil, logrus.NewEntry(logrus.New()))
	require.NoError(t, err)
	f.pods.recorder = f.Events
	return f
}

func (f *fixture) syncRevision(name string) error {
	f.ClearActions()
	return f.pods.syncHandler(context.Background(), "ns/"+name)
}

// deployerPod is the deployer pod of rs, as the deployer-pod controller creates it, in
// the given phase.
func deployerPod(t *testing.T, rs *appsv1.ReplicaSet, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	pod, _, err := PodFor(rs, Defaults{Image: "stagehand/deployer:test"})
	require.NoError(t, err)
	pod.Status.Phase = phase
	return pod
}
