//go:build e2e

package localcluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A port taken between the pick and the bind costs one retry, not the start.
func TestLaunchRetriesWhenPortTaken(t *testing.T) {
	bin := requireControlPlane(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	dir := t.TempDir()
	c := &Cluster{opts: Options{Dir: dir, BinDir: bin}, layout: layout{dir: dir}, log: testLog(t)}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pids"), 0o755))
	t.Cleanup(func() { _ = c.Stop() })

	var pp portPicker
	attempts := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.launch(ctx, etcdName, filepath.Join(bin, etcdName), etcdTimeout, func(attempt int) ([]string, check, error) {
		attempts = attempt
		client := taken.Addr().(*net.TCPAddr).Port
		if attempt > 1 {
			client, _ = pp.pick(0)
		}
		peer, err := pp.pick(0)
		require.NoError(t, err)
		c.state.Ports.EtcdClient, c.state.Ports.EtcdPeer = client, peer
		return etcdArgs(c.layout, c.state.Ports), etcdHealthy(client), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, attempts)
	assert.Len(t, c.procs, 1, "the failed attempt is forgotten")
	assert.Contains(t, logTail(c.layout.logFile(etcdName), 1000), "address already in use")
}
