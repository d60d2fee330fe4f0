package localcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// maxSocketPath keeps containerd's socket within a unix socket address (108 bytes with NUL).
const maxSocketPath = 100

// writeFiles writes the real node's certificates, kubeconfig and the configs of containerd,
// CNI and the kubelet under n.dir.
func (n realNode) writeFiles(l layout, apiserverURL string, pp *portPicker) error {
	if len(n.socket()) > maxSocketPath {
		return fmt.Errorf("containerd's socket %s would be longer than %d bytes: use a shorter cluster folder",
			n.socket(), maxSocketPath)
	}
	for _, d := range []string{n.dir, n.cniConfDir(), n.path("certs.d", n.registry)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := writeRealNodePKI(l.pki(), n.nodeIP); err != nil {
		return err
	}
	if err := l.writeKubeconfig(n.kubeconfig(), apiserverURL, realNodeClient); err != nil {
		return err
	}
	if err := l.writeKubeconfig(n.kubeProxyKubeconfig(), apiserverURL, kubeProxyClient); err != nil {
		return err
	}
	var port [4]int // the kubelet's and its healthz, kube-proxy's healthz and metrics
	for i := range port {
		p, err := pp.pick(0)
		if err != nil {
			return err
		}
		port[i] = p
	}
	files := map[string]string{
		n.containerdConfig():                                   n.containerdTOML(),
		n.path("certs.d", n.registry, "hosts.toml"):            n.hostsTOML(),
		filepath.Join(n.cniConfDir(), "10-stagehand.conflist"): n.conflist(),
		n.kubeletConfig():                                      n.kubeletYAML(l.pki(), port[0], port[1]),
		n.kubeProxyConfig():                                    n.kubeProxyYAML(port[2], port[3]),
	}
	for path, text := range files {
		if err := writeFileAtomic(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// The real node's certificates, signed by the cluster CA: the kubelet's client certificate,
// which the Node authorizer and NodeRestriction admit as the Node itself, its serving
// certificate for the node IP, and kube-proxy's client certificate.
const (
	realNodeClient  = "realnode-client"
	realNodeServing = "realnode-serving"
)

func writeRealNodePKI(p pki, nodeIP net.IP) error {
	ca, caKey, err := loadPair(p.caCert(), p.key("ca"))
	if err != nil {
		return fmt.Errorf("loading the cluster CA: %w", err)
	}
	specs := []leafSpec{
		{name: realNodeClient, cn: "system:node:" + RealNodeName, orgs: []string{"system:nodes"}},
		{name: realNodeServing, cn: RealNodeName, server: true, dns: []string{RealNodeName, "localhost"},
			ips: []net.IP{nodeIP, net.IPv4(127, 0, 0, 1)}},
		{name: kubeProxyClient, cn: "system:kube-proxy"},
	}
	for _, spec := range specs {
		cert, key, err := newLeaf(spec, ca, caKey)
		if err != nil {
			return err
		}
		if err := writePair(p.cert(spec.name), p.key(spec.name), cert, key); err != nil {
			return err
		}
	}
	return nil
}

// containerdTOML is containerd 1.6's config (schema version 2): its own root, state and
// socket; runc v2 on cgroupfs; restrict_oom_score_adj, because root here may lack
// CAP_SYS_RESOURCE and runc then fails to lower a sandbox's oom_score_adj ("can't get final
// child's PID from pipe: EOF"); network namespaces under the state folder; the CNI plugins of
// /usr/lib/cni; and the registry settings of certs.d, which make it pull over plain HTTP.
func (n realNode) containerdTOML() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %[5]q
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %[6]q
      conf_dir = %[7]q
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = %[8]q
`, n.path("containerd", "root"), n.path("containerd", "state"), n.socket(), n.socket()+".ttrpc",
		n.pause, cniBinDir, n.cniConfDir(), n.path("certs.d"))
}

// hostsTOML makes containerd speak plain HTTP to the cluster's registry.
func (n realNode) hostsTOML() string {
	return fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"http://"+n.registry, "http://"+n.registry)
}

// conflist is the pod network: a bridge of this cluster's own, host-local addresses from its
// subnet, no masquerading (the pods only talk to the host and to each other).
func (n realNode) conflist() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "stagehand-realnode",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.bridge, n.path("ipam"), n.subnet)
}

// kubeletYAML is the KubeletConfiguration. Beyond the usual: failCgroupV1 false (the kubelet
// v1.36 otherwise refuses a cgroup v1 host), makeIPTablesUtilChains false (it would add
// KUBE-FIREWALL and canary chains to the host's iptables), a cgroupRoot of this cluster's
// own, and pod logs under the cluster folder.
func (n realNode) kubeletYAML(p pki, port, healthzPort int) string {
	lines := []string{
		"apiVersion: kubelet.config.k8s.io/v1beta1",
		"kind: KubeletConfiguration",
		fmt.Sprintf("address: %s", n.nodeIP),
		fmt.Sprintf("port: %d", port),
		"readOnlyPort: 0",
		"healthzBindAddress: 127.0.0.1",
		fmt.Sprintf("healthzPort: %d", healthzPort),
		fmt.Sprintf("tlsCertFile: %s", p.cert(realNodeServing)),
		fmt.Sprintf("tlsPrivateKeyFile: %s", p.key(realNodeServing)),
		"authentication:",
		"  anonymous: {enabled: false}",
		"  webhook: {enabled: true}",
		fmt.Sprintf("  x509: {clientCAFile: %s}", p.caCert()),
		"authorization: {mode: Webhook}",
		"cgroupDriver: cgroupfs",
		fmt.Sprintf("cgroupRoot: %s", n.cgroup),
		"cgroupsPerQOS: true",
		"enforceNodeAllocatable: []",
		"failSwapOn: false",
		"failCgroupV1: false",
		"makeIPTablesUtilChains: false",
		fmt.Sprintf("containerRuntimeEndpoint: unix://%s", n.socket()),
		fmt.Sprintf("imageServiceEndpoint: unix://%s", n.socket()),
		fmt.Sprintf("podLogsDir: %s", n.path("pod-logs")),
		fmt.Sprintf("volumePluginDir: %s", n.path("volume-plugins")),
		"clusterDomain: cluster.local",
		"resolvConf: /etc/resolv.conf",
		"evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}",
		"imageGCHighThresholdPercent: 100",
		"imageGCLowThresholdPercent: 99",
		"serializeImagePulls: false",
		"registerNode: true",
		"registerWithTaints:",
		fmt.Sprintf("- {key: %s, value: \"true\", effect: NoSchedule}", RealNodeTaintKey),
	}
	return strings.Join(lines, "\n") + "\n"
}
