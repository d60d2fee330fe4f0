package localcluster

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	proxy := n.kubeProxyYAML(10256, 10249)
	for _, want := range []string{"mode: iptables", "clusterCIDR: " + n.subnet, "nodePortAddresses: [192.0.2.2/32]",
		"localhostNodePorts: false", "maxPerCore: 0", "hostnameOverride: " + RealNodeName} {
		assert.Contains(t, proxy, want)
	}
}

// TestAPIServerWithRealNode checks that with a real node the apiserver listens beyond
// loopback and publishes the node IP, which its certificate names: the real node's pods
// reach it through the kubernetes Service.
func TestAPIServerWithRealNode(t *testing.T) {
	l := layout{dir: t.TempDir()}
	require.NoError(t, ensurePKI(l.pki()))
	ip := net.IPv4(192, 0, 2, 2)
	assert.Contains(t, apiserverArgs(l, ports{}, false, nil), "--endpoint-reconciler-type=none")
	args := apiserverArgs(l, ports{}, false, ip)
	for _, want := range []string{"--bind-address=0.0.0.0", "--advertise-address=192.0.2.2", "--endpoint-reconciler-type=lease"} {
		assert.Contains(t, args, want)
	}
	require.NoError(t, ensureLeafIP(l.pki(), "apiserver", ip))
	cert, _, err := loadPair(l.pki().cert("apiserver"), l.pki().key("apiserver"))
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(cert.IPAddresses, ip.Equal), "%v", cert.IPAddresses)
	assert.True(t, slices.ContainsFunc(cert.IPAddresses, net.IPv4(10, 0, 0, 1).Equal), "the kubernetes Service IP stays")
}
