package localcluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The real node: containerd, runc and a kubelet of the pinned version, beside the node agent
// (Options.RealNode, docs/localcluster.md "Real node").
const (
	// RealNodeName is the real node's Node name.
	RealNodeName = "stagehand-real-node"
	// RealNodeTaintKey taints (NoSchedule) and labels ("true") the real node, so that only
	// pods that tolerate it and select it run there; the suites of the node agent never do.
	RealNodeTaintKey = "stagehand.dev/real-node"
	// DefaultPauseImage is the sandbox image, under the cluster's registry: make oci-images
	// builds and pushes it (hack/images). containerd pulls it at the first pod.
	DefaultPauseImage = "stagehand/pause:dev"

	containerdName = "containerd"
	kubeletName    = "kubelet"
	cniBinDir      = "/usr/lib/cni"
	realNodeWait   = 60 * time.Second
)

// DefaultKubeletPath is where hack/build-kubelet.sh puts the kubelet.
func DefaultKubeletPath(root string) string {
	return filepath.Join(root, "bin", "k8s-"+KubernetesVersion+"-node", "kubelet")
}

// realNode holds what the real node's files and cleanup need. Everything lives under
// <dir>/realnode; the names that the host shares (bridge, subnet, cgroup) derive from the
// cluster folder so that two clusters on one machine do not meet.
type realNode struct {
	dir      string // <cluster>/realnode
	nodeIP   net.IP
	bridge   string // at most 15 bytes
	subnet   string // a /24 in 10.240.0.0/12
	cgroup   string // the kubelet's cgroupRoot, e.g. /stagehand-1a2b3c4d
	registry string // host:port
	pause    string // the sandbox image reference
}

func newRealNode(clusterDir, registry, pauseImage string) realNode {
	sum := sha256.Sum256([]byte(clusterDir))
	tag := fmt.Sprintf("%x", sum[:4])
	return realNode{
		dir:      filepath.Join(clusterDir, "realnode"),
		bridge:   "shrn" + tag,
		subnet:   fmt.Sprintf("10.%d.%d.0/24", 240+int(sum[4]%16), sum[5]),
		cgroup:   "/stagehand-" + tag,
		registry: registry,
		pause:    registry + "/" + pauseImage,
	}
}

func (n realNode) path(elem ...string) string {
	return filepath.Join(append([]string{n.dir}, elem...)...)
}
func (n realNode) socket() string           { return n.path("containerd.sock") }
func (n realNode) containerdConfig() string { return n.path("containerd.toml") }
func (n realNode) cniConfDir() string       { return n.path("net.d") }
func (n realNode) kubeletConfig() string    { return n.path("kubelet.yaml") }
func (n realNode) kubeconfig() string       { return n.path("kubelet.kubeconfig") }

// RealNodeMissing says why this machine cannot run the real node with the kubelet that
// hack/build-kubelet.sh builds in the repository at root, or "" when it can.
func RealNodeMissing(root string) string { return realNodeMissing(DefaultKubeletPath(root)) }

// realNodeMissing says why this machine cannot run the real node, or "" when it can.
func realNodeMissing(kubelet string) string {
	if os.Geteuid() != 0 {
		return "the real node needs root (containerd and the kubelet mount, and manage cgroups and network namespaces)"
	}
	for _, b := range []string{"containerd", "runc", "ip", "iptables"} {
		if _, err := exec.LookPath(b); err != nil {
			return b + " is not on PATH: hack/install-node.sh installs Debian's containerd, runc, CNI plugins and iptables"
		}
	}
	if _, err := os.Stat(filepath.Join(cniBinDir, "bridge")); err != nil {
		return "no CNI bridge plugin in " + cniBinDir + ": hack/install-node.sh installs containernetworking-plugins"
	}
	for _, b := range []string{kubelet, kubeProxyPath(kubelet)} {
		if _, err := os.Stat(b); err != nil {
			return "no " + filepath.Base(b) + " at " + b + ": hack/build-kubelet.sh builds it"
		}
	}
	return ""
}

// hostIPv4 returns the first IPv4 address of an up, non-loopback interface that is not a
// bridge or a veth (a cluster's CNI bridge has an address too). The kubelet refuses a
// loopback node IP ("nodeIP can't be loopback address"), and the apiserver reaches the
// kubelet at the Node's InternalIP.
func hostIPv4() (net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || virtualInterface(ifc.Name) {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.To4(), nil
			}
		}
	}
	return nil, errors.New("the real node needs a non-loopback IPv4 address, and this machine has none")
}

func virtualInterface(name string) bool {
	if _, err := os.Stat(filepath.Join("/sys/class/net", name, "bridge")); err == nil {
		return true
	}
	return strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "cni")
}

// startRealNode starts containerd and the kubelet, and waits until the Node is Ready. It
// runs after the control plane and the registry, whose address containerd pulls from.
func (c *Cluster) startRealNode(ctx context.Context, pp *portPicker) error {
	if c.registry == nil {
		return errors.New("the real node pulls its images from the cluster's registry: start with Options.Registry (up --registry)")
	}
	n := newRealNode(c.layout.dir, c.registry.Address, c.opts.PauseImage)
	n.nodeIP = c.nodeIP
	// A killed earlier run may have left mounts, containers and the bridge behind.
	cleanupRealNode(c.layout.dir, c.log)
	if err := os.RemoveAll(n.dir); err != nil {
		return fmt.Errorf("clearing %s: %w", n.dir, err)
	}
	if err := n.writeFiles(c.layout, c.state.APIServerURL, pp); err != nil {
		return err
	}
	if err := createCgroup(n.cgroup); err != nil {
		return err
	}
	err := c.launch(ctx, containerdName, "containerd", componentTimeout, func(int) ([]string, check, error) {
		return []string{"--config", n.containerdConfig()}, socketReady(n.socket()), nil
	})
	if err != nil {
		return err
	}
	err = c.launch(ctx, kubeletName, c.opts.KubeletPath, nodesTimeout, func(int) ([]string, check, error) {
		return []string{"--config=" + n.kubeletConfig(), "--kubeconfig=" + n.kubeconfig(),
			"--root-dir=" + n.path("kubelet"), "--hostname-override=" + RealNodeName,
			"--node-ip=" + n.nodeIP.String(), "--node-labels=" + RealNodeTaintKey + "=true", "--v=2",
		}, nodesReady(c.client, []string{RealNodeName}), nil
	})
	if err != nil {
		return err
	}
	proxy := kubeProxyPath(c.opts.KubeletPath)
	if err := writeFileAtomic(n.kubeProxyBinaryFile(), []byte(proxy+"\n"), 0o644); err != nil {
		return err
	}
	err = c.launch(ctx, kubeProxyName, proxy, componentTimeout, func(int) ([]string, check, error) {
		return []string{"--config=" + n.kubeProxyConfig(), "--v=2"}, serviceRulesReady, nil
	})
	if err != nil {
		return err
	}
	c.state.RealNode = RealNodeName
	c.log.WithField("node", RealNodeName).WithField("ip", n.nodeIP.String()).
		WithField("sandbox", n.pause).Info("Real node ready (containerd, runc, kubelet " + KubernetesVersion + ")")
	return c.layout.writeState(c.state)
}

// socketReady passes once something accepts connections on the unix socket.
func socketReady(path string) check {
	return func(context.Context) error {
		conn, err := net.DialTimeout("unix", path, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}
