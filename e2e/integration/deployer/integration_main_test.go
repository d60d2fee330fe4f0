//go:build e2e

// Package deployer_test runs the deployer, in process and as its binary, against the local
// control plane.
package deployer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/e2e/framework"
	"github.com/stagehand-dev/stagehand/e2e/localcluster"
	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// The integration tests share one local control plane, started by TestMain.
var (
	skipReason string
	kubeconfig string
	restConfig *rest.Config
	kube       kubernetes.Interface
	stagehand  versioned.Interface
	repoRoot   string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := localcluster.FindRepoRoot()
	if err != nil {
		log.Fatal(err)
	}
	repoRoot = root
	bin := localcluster.DefaultBinDir(root)
	skipReason = localcluster.ControlPlaneMissing(bin)
	skip, err := gate.Check(skipReason)
	if err != nil {
		log.Fatal(err)
	}
	if skip {
		return m.Run() // every test skips, with skipReason
	}
	// Stable per checkout (the next run cleans up what a killed run left), distinct across
	// checkouts on one machine.
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "stagehand-it-deployer-"+hex.EncodeToString(sum[:4]))
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: dir, BinDir: bin, Nodes: 1, Log: logrus.NewEntry(quiet)})
	if err != nil {
		log.Fatal(err) // the error names the failing component and its log
	}
	defer func() {
		if err := c.Stop(); err != nil {
			log.Print(err)
		}
	}()
	restConfig = c.RESTConfig()
	kubeconfig = c.KubeconfigPath()
	kube = kubernetes.NewForConfigOrDie(restConfig)
	stagehand = versioned.NewForConfigOrDie(restConfig)
	if err := framework.InstallCRDs(ctx, dynamic.NewForConfigOrDie(restConfig), root); err != nil {
		log.Fatal(err)
	}
	return m.Run()
}

// requireCluster skips a test that needs the local control plane when it is not built
// (fails it in CI).
func requireCluster(t *testing.T) {
	t.Helper()
	gate.Require(t, skipReason)
}
