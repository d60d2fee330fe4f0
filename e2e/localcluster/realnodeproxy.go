package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
)

// The real node's pods reach the apiserver as in any cluster: client-go's in-cluster config
// dials the kubernetes Service (KUBERNETES_SERVICE_HOST, its ClusterIP, which the kubelet
// sets), and kube-proxy, in iptables mode, sends that to the apiserver's endpoint. With a
// real node the apiserver listens on every address and publishes the node IP (see
// apiserverArgs), and its serving certificate names that IP too.
const (
	kubeProxyName   = "kube-proxy"
	kubeProxyClient = "realnode-kube-proxy" // CN system:kube-proxy: the bootstrap role system:node-proxier
	// kubernetesServiceIP is the kubernetes Service's ClusterIP: the first of
	// serviceClusterIPRange.
	kubernetesServiceIP = "10.0.0.1"
)

func (n realNode) kubeProxyConfig() string     { return n.path("kube-proxy.yaml") }
func (n realNode) kubeProxyKubeconfig() string { return n.path("kube-proxy.kubeconfig") }
func (n realNode) kubeProxyBinaryFile() string { return n.path("kube-proxy.binary") }

// kubeProxyPath is the kube-proxy that hack/build-kubelet.sh builds beside the kubelet.
func kubeProxyPath(kubelet string) string { return filepath.Join(filepath.Dir(kubelet), kubeProxyName) }

// prepareRealNode finds the node IP and puts it in the apiserver's serving certificate; it
// does nothing for a cluster without a real node.
func (c *Cluster) prepareRealNode() error {
	if !c.opts.RealNode {
		return nil
	}
	ip, err := hostIPv4()
	if err != nil {
		return err
	}
	c.nodeIP = ip
	if err := ensureLeafIP(c.layout.pki(), "apiserver", ip); err != nil {
		return fmt.Errorf("preparing certificates in %s: %w", c.layout.pki().dir, err)
	}
	return nil
}

// ensureLeafIP reissues the certificate of leafSpecs' name when it does not name ip (a folder
// first started without a real node, or on another address).
func ensureLeafIP(p pki, name string, ip net.IP) error {
	i := slices.IndexFunc(leafSpecs, func(s leafSpec) bool { return s.name == name })
	if i < 0 {
		return fmt.Errorf("no certificate %q", name)
	}
	if cert, _, err := loadPair(p.cert(name), p.key(name)); err == nil &&
		slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
		return nil
	}
	ca, caKey, err := loadPair(p.caCert(), p.key("ca"))
	if err != nil {
		return fmt.Errorf("loading the cluster CA: %w", err)
	}
	spec := leafSpecs[i]
	spec.ips = append(slices.Clone(spec.ips), ip)
	cert, key, err := newLeaf(spec, ca, caKey)
	if err != nil {
		return err
	}
	return writePair(p.cert(name), p.key(name), cert, key)
}

// kubeProxyYAML is the KubeProxyConfiguration: iptables mode; no conntrack sysctls (root
// here may not write them, and the defaults suit a test node); no NodePorts on localhost,
// which would need route_localnet; NodePorts on the node IP only.
func (n realNode) kubeProxyYAML(healthz, metrics int) string {
	lines := []string{
		"apiVersion: kubeproxy.config.k8s.io/v1alpha1",
		"kind: KubeProxyConfiguration",
		"clientConnection:",
		fmt.Sprintf("  kubeconfig: %s", n.kubeProxyKubeconfig()),
		fmt.Sprintf("hostnameOverride: %s", RealNodeName),
		fmt.Sprintf("healthzBindAddress: 127.0.0.1:%d", healthz),
		fmt.Sprintf("metricsBindAddress: 127.0.0.1:%d", metrics),
		"mode: iptables",
		fmt.Sprintf("clusterCIDR: %s", n.subnet),
		fmt.Sprintf("nodePortAddresses: [%s/32]", n.nodeIP),
		"iptables: {localhostNodePorts: false}",
		"conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}",
	}
	return strings.Join(lines, "\n") + "\n"
}

// serviceRulesReady passes once kube-proxy has written the kubernetes Service's rule: from
// then on a pod's in-cluster client reaches the apiserver.
func serviceRulesReady(context.Context) error {
	out, err := exec.Command("iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables -t nat -S KUBE-SERVICES: %w: %s", err, bytes.TrimSpace(out))
	}
	if !bytes.Contains(out, []byte(kubernetesServiceIP+"/32")) {
		return fmt.Errorf("no rule for the kubernetes Service (%s) yet", kubernetesServiceIP)
	}
	return nil
}

// cleanupKubeProxy removes the iptables chains kube-proxy wrote (kube-proxy --cleanup), once
// it has stopped; startRealNode recorded which kube-proxy in the node's folder. There is one
// set of KUBE-* chains per host: one real node at a time.
func (n realNode) cleanupKubeProxy(log *logrus.Entry) {
	path, err := os.ReadFile(n.kubeProxyBinaryFile())
	if err != nil {
		return // none started
	}
	out, err := exec.Command(strings.TrimSpace(string(path)), "--cleanup").CombinedOutput()
	if err != nil {
		log.WithError(err).WithField("output", string(out)).Warn("kube-proxy --cleanup failed; KUBE-* iptables chains may remain")
	}
}
