package localcluster

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRealNodeNames checks the names the host shares: a bridge name within Linux's 15 bytes,
// a /24 in 10.240.0.0/12, and different names for different cluster folders.
func TestRealNodeNames(t *testing.T) {
	a := newRealNode("/work/a/.localcluster", "127.0.0.1:5000", DefaultPauseImage)
	b := newRealNode("/work/b/.localcluster", "127.0.0.1:5000", DefaultPauseImage)
	assert.LessOrEqual(t, len(a.bridge), 15)
	assert.NotEqual(t, a.bridge, b.bridge)
	assert.NotEqual(t, a.cgroup, b.cgroup)
	_, subnet, err := net.ParseCIDR(a.subnet)
	assert.NoError(t, err)
	_, wide, _ := net.ParseCIDR("10.240.0.0/12")
	assert.True(t, wide.Contains(subnet.IP), a.subnet)
	assert.Equal(t, "127.0.0.1:5000/stagehand/pause:dev", a.pause)
}

// TestRealNodeConfigs checks the settings this machine needs (docs/localcluster.md).
func TestRealNodeConfigs(t *testing.T) {
	n := newRealNode("/tmp/c", "127.0.0.1:5000", DefaultPauseImage)
	n.nodeIP = net.IPv4(192, 0, 2, 2)
	kubelet := n.kubeletYAML(pki{dir: "/tmp/c/pki"}, 10350, 10358)
	for _, want := range []string{"failCgroupV1: false", "makeIPTablesUtilChains: false", "address: 192.0.2.2",
		"cgroupDriver: cgroupfs", "key: " + RealNodeTaintKey} {
		assert.Contains(t, kubelet, want)
	}
	ctrd := n.containerdTOML()
	for _, want := range []string{"restrict_oom_score_adj = true", "SystemdCgroup = false",
		`sandbox_image = "127.0.0.1:5000/stagehand/pause:dev"`, `bin_dir = "/usr/lib/cni"`} {
		assert.Contains(t, ctrd, want)
	}
	assert.True(t, strings.HasPrefix(n.hostsTOML(), `server = "http://127.0.0.1:5000"`))
	assert.Contains(t, n.conflist(), `"ipMasq": false`)
}
