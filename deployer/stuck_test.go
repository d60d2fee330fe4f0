package deployer_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/deployer"
	"github.com/stagehand-dev/stagehand/internal/testutil"
	"github.com/stagehand-dev/stagehand/strategies"
)

// A custom flow's waits get the stuck-pod rule too: ScaleAndWait on a revision whose pod
// cannot start fails at once, and the termination message carries the waiting reason.
func TestScaleAndWaitFailsOnAStuckPodWithItsWaitingReason(t *testing.T) {
	to := unitRevision(3, 1, v1alpha1.RevisionPhaseRunning)
	in, err := deployer.ParseRevision(to)
	require.NoError(t, err)
	in.To = to
	pod := testutil.WaitingPod(to.Namespace, "web-3-abcde", to.Spec.Template.Labels, podstatus.WaitingCreateContainerConfigError,
		"container has runAsNonRoot and image will run as root", time.Now().Add(-time.Minute))
	client := fake.NewClientset(to, pod)
	d := &deployer.Deployer{Inputs: in, Client: client, Clients: strategies.NewKubeClients(client, to.Namespace), Out: strategies.NewProgress(io.Discard)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err = d.ScaleAndWait(ctx, to, 1)

	var stuck *strategies.PodStuckError
	require.ErrorAs(t, err, &stuck)
	m := deployer.TerminationMessageFor(err, "done")
	assert.Equal(t, podstatus.WaitingCreateContainerConfigError, m.Reason)
	assert.Contains(t, m.Message, `pod web-3-abcde: container "app" cannot start: CreateContainerConfigError: container has runAsNonRoot and image will run as root`)
	code, _ := deployer.Outcome(err)
	assert.Equal(t, v1alpha1.ExitFailed, code)
}
