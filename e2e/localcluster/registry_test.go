//go:build e2e

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/e2e/localcluster/gate"
)

// killedRegistryEnv holds the folder of TestHelperRegistryThatGetsKilled.
const killedRegistryEnv = "STAGEHAND_TEST_KILLED_REGISTRY_DIR"

// requireRegistry skips the test (fails it in CI) when docker-registry is not installed.
func requireRegistry(t *testing.T) {
	t.Helper()
	gate.Require(t, RegistryMissing())
}

func TestRegistry(t *testing.T) {
	requireRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// Given a registry
	began := time.Now()
	r, err := StartRegistry(ctx, RegistryOptions{Dir: dir, Log: testLog(t)})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = r.Stop()
		}
	})
	t.Logf("started in %s at %s", time.Since(began).Round(time.Millisecond), r.Address)
	announced, err := LoadRegistry(dir)
	require.NoError(t, err)
	assert.Equal(t, r.RegistryInfo, announced)
	address, err := os.ReadFile(layout{dir: dir}.registryAddress())
	require.NoError(t, err)
	assert.Equal(t, r.Address+"\n", string(address))
	assert.Equal(t, "export "+RegistryEnv+"="+r.Address+"\n", strings.SplitAfter(EnvLines(dir), "\n")[1])

	img, err := random.Image(1024, 2)
	require.NoError(t, err)
	want, err := img.Digest()
	require.NoError(t, err)
	creds := remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password})
	wrong := remote.WithAuth(&authn.Basic{Username: r.Username, Password: "guess"})

	// When an image is pushed anonymously to an open repository
	open := parseRef(t, r.Image("app:stable"), name.Insecure)
	require.NoError(t, remote.Write(open, img, remote.WithContext(ctx)))
	// Then anyone resolves and pulls it
	assertDigest(t, want, open, remote.WithContext(ctx))
	assertDigest(t, want, open, creds, remote.WithContext(ctx))
	// And a reference without name.Insecure works too: go-containerregistry falls back to
	// plain HTTP for 127.0.0.1
	assertDigest(t, want, parseRef(t, r.Image("app:stable")), remote.WithContext(ctx))

	// When the image is pushed to a protected repository
	private := parseRef(t, r.PrivateImage("app:stable"), name.Insecure)
	// Then it needs the credentials
	assertUnauthorized(t, remote.Write(private, img, remote.WithContext(ctx)))
	assertUnauthorized(t, remote.Write(private, img, wrong, remote.WithContext(ctx)))
	require.NoError(t, remote.Write(private, img, creds, remote.WithContext(ctx)))
	assertDigest(t, want, private, creds, remote.WithContext(ctx))
	_, err = remote.Head(private, remote.WithContext(ctx))
	assertUnauthorized(t, err)
	_, err = remote.Head(private, wrong, remote.WithContext(ctx))
	assertUnauthorized(t, err)
	_, err = remote.Image(private, remote.WithContext(ctx))
	assertUnauthorized(t, err)

	// When the registry stops
	backendPID := r.backend.pid
	ports := map[string]int{registryProxyName: r.proxyPort, registryName: r.backendPort}
	stopped = true
	require.NoError(t, r.Stop())

	// Then no process and no port is left, and nothing announces it any more
	_, err = os.Stat(fmt.Sprintf("/proc/%d", backendPID))
	assert.True(t, os.IsNotExist(err), "docker-registry (pid %d) still exists after Stop", backendPID)
	assertPortsClosed(t, ports)
	assertNothingLeft(t, dir)
	assert.NoFileExists(t, layout{dir: dir}.registryAddress())
	assert.NoFileExists(t, layout{dir: dir}.registryAuth())
	assert.NoFileExists(t, layout{dir: dir}.pidFile(registryName))
	assert.Equal(t, 1, strings.Count(EnvLines(dir), "\n"), "env names no registry once it stopped")
}

func parseRef(t *testing.T, ref string, opts ...name.Option) name.Reference {
	t.Helper()
	parsed, err := name.ParseReference(ref, opts...)
	require.NoError(t, err)
	return parsed
}

// assertDigest checks that ref resolves (HEAD) and pulls as the image with digest want.
func assertDigest(t *testing.T, want v1.Hash, ref name.Reference, opts ...remote.Option) {
	t.Helper()
	desc, err := remote.Head(ref, opts...)
	if assert.NoError(t, err, "HEAD %s", ref) {
		assert.Equal(t, want, desc.Digest, "HEAD %s", ref)
	}
	img, err := remote.Image(ref, opts...)
	if assert.NoError(t, err, "pulling %s", ref) {
		got, err := img.Digest()
		assert.NoError(t, err)
		assert.Equal(t, want, got, "pulling %s", ref)
	}
}

// assertUnauthorized checks that err is the registry's 401.
func assertUnauthorized(t *testing.T, err error) {
	t.Helper()
	var terr *transport.Error
	if assert.True(t, errors.As(err, &terr), "want a 401 from the registry, got %v", err) {
		assert.Equal(t, http.StatusUnauthorized, terr.StatusCode, "%v", err)
	}
}

func TestKilledTestBinaryLeavesNoRegistryBehind(t *testing.T) {
	requireRegistry(t)
	// Given a test binary that runs a registry
	dir := t.TempDir()
	child := startHelperBinary(t, "TestHelperRegistryThatGetsKilled", killedRegistryEnv, dir)
	gotDir, port := readHelperReady(t, child.stdout, child.stderr)
	require.Equal(t, dir, gotDir)
	require.NotEmpty(t, processesOf(dir), "docker-registry runs")

	// When the test binary is killed
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	// Then docker-registry has gone, and its port is closed
	assertNothingLeft(t, dir)
	assertPortsClosed(t, map[string]int{registryName: port})
}

// TestHelperRegistryThatGetsKilled is the test binary that TestKilledTestBinaryLeavesNoRegistryBehind
// kills. It runs only when that test starts it.
func TestHelperRegistryThatGetsKilled(t *testing.T) {
	dir, ok := os.LookupEnv(killedRegistryEnv)
	if !ok {
		t.Skip("helper of TestKilledTestBinaryLeavesNoRegistryBehind; it runs only when started by it")
	}
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	r, err := StartRegistry(context.Background(), RegistryOptions{Dir: dir, Log: logrus.NewEntry(logger)})
	require.NoError(t, err)
	defer func() { _ = r.Stop() }()
	_, _ = fmt.Fprintf(os.Stdout, "%s %s %d\n", helperReady, dir, r.backendPort)
	time.Sleep(3 * time.Minute) // the test kills this process long before
}

// `up --registry` starts the registry with the cluster, `env` names it, and `down` stops
// all of it.
func TestUpWithRegistryAndDown(t *testing.T) {
	bin := requireControlPlane(t)
	requireRegistry(t)
	exe := buildCommand(t, "e2e/localcluster", "./cmd/stagehand-localcluster", "stagehand-localcluster")
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := Down(dir); err != nil { // only does something when this test failed
			t.Logf("cleaning up: %v", err)
		}
	})
	// Given a cluster that `up --registry` started
	runCommand(t, 3*time.Minute, exe, "up", "--dir", dir, "--bin-dir", bin, "--registry")
	ri, err := LoadRegistry(dir)
	require.NoError(t, err)
	env, err := exec.Command(exe, "env", "--dir", dir).Output()
	require.NoError(t, err)
	assert.Contains(t, string(env), "export "+RegistryEnv+"="+ri.Address+"\n")
	require.NoError(t, Status(context.Background(), dir))
	st, err := layout{dir: dir}.readState()
	require.NoError(t, err)
	assert.Equal(t, ri.Address, st.Registry)

	// Then its protected repository takes the credentials from registry-auth.json
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := random.Image(512, 1)
	require.NoError(t, err)
	private := parseRef(t, ri.PrivateImage("app:v1"), name.Insecure)
	assertUnauthorized(t, remote.Write(private, img, remote.WithContext(ctx)))
	creds := remote.WithAuth(&authn.Basic{Username: ri.Username, Password: ri.Password})
	require.NoError(t, remote.Write(private, img, creds, remote.WithContext(ctx)))

	// When it is taken down
	runCommand(t, time.Minute, exe, "down", "--dir", dir)

	// Then no process of the registry is left, its ports are closed, and nothing names it
	assertNothingLeft(t, dir)
	assertPortsClosed(t, map[string]int{registryProxyName: st.Ports.Registry, registryName: st.Ports.RegistryBackend})
	assert.NoFileExists(t, layout{dir: dir}.registryAuth())
	env, err = os.ReadFile(layout{dir: dir}.env())
	require.NoError(t, err)
	assert.NotContains(t, string(env), RegistryEnv)
}
