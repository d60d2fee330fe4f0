//go:build e2e

package controllerintegration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// seedEnv names the variable that replays a run of TestIntegrationRestartSafety: set it to
// the seed that a failed run logged.
const seedEnv = "STAGEHAND_SEED"

// TestIntegrationRestartSafety stops the controller at random moments during a series of
// config changes and starts a new instance each time; the invariants must hold at the end.
func TestIntegrationRestartSafety(t *testing.T) {
	requireEnv(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv(seedEnv); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "%s=%q", seedEnv, s)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("random seed %d (replay with %s=%d)", seed, seedEnv, seed)
	ns := env.Namespace(t)
	pods := recordDeployerPods(t, ns)
	ctx := context.Background()
	dcs := env.Stagehand.StagehandV1alpha1().DeploymentConfigs(ns)

	dc := stubDC("web", 1, rollsOut("sleep 0.5; exit 0"))
	limit := int32(100)
	dc.Spec.RevisionHistoryLimit = &limit
	_, err := dcs.Create(ctx, dc, metav1.CreateOptions{})
	require.NoError(t, err)

	for i := 2; i <= 6; i++ {
		stop := runController(t, ns)
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		updateDC(t, ns, "web", func(dc *v1alpha1.DeploymentConfig) {
			dc.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("example.com/app:%d", i)
		})
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		stop()
	}
	runController(t, ns)

	var latest int64
	waitFor(t, 40*time.Second, "the last revision to complete and every revision to be terminal", func(ctx context.Context) (bool, error) {
		got, err := dcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		latest = got.Status.LatestVersion
		last, err := env.Kube.AppsV1().ReplicaSets(ns).Get(ctx, v1alpha1.RevisionName("web", latest), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if templateChanged(defaulted(got), last) || revision.Phase(last) != v1alpha1.RevisionPhaseComplete {
			return false, nil
		}
		list, err := env.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=web"})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			if !revision.Phase(&list.Items[i]).IsTerminal() {
				return false, nil
			}
		}
		return true, nil
	})

	list, err := env.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=web"})
	require.NoError(t, err)
	assert.Len(t, list.Items, int(latest), "latestVersion equals the number of revisions")
	time.Sleep(time.Second) // let the watch deliver the last events
	created, _ := pods.snapshot()
	for name, n := range created {
		assert.Equal(t, 1, n, "deployer pod %s created once", name)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if revision.Phase(rs) == v1alpha1.RevisionPhaseComplete || !revision.Cancelled(rs) {
			assert.Contains(t, created, v1alpha1.DeployerPodName(rs.Name), "revision %s ran its deployer", rs.Name)
		}
	}
	t.Logf("latestVersion %d, deployer pods %v", latest, created)
}
