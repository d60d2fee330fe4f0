package nodeagent

import (
	"fmt"
	"hash/fnv"
	"net"

	corev1 "k8s.io/api/core/v1"
)

// OwnIPAnnotation, set to "true" on a pod, gives the pod an IP of its own, from its UID,
// instead of the node's 127.0.0.1: in Config.PodNetwork (a /16 routed to loopback), else
// 127.x.y.z. Every process still shares the host's network, but a container that binds
// $(POD_IP) (a fieldRef to status.podIP) then gets an address that no other pod has, so
// two replicas can listen on the same port, and with PodNetwork a Service reaches each of
// them, as with a CNI (the apiserver refuses loopback endpoints). The agent probes such a
// pod at its own IP. Pods without the annotation keep 127.0.0.1 (docs/localcluster.md).
const OwnIPAnnotation = "localcluster.stagehand.dev/own-ip"

// podIP is pod's IP: its own address when it asks for one, else host.
func podIP(pod *corev1.Pod, host, network string) string {
	if pod.Annotations[OwnIPAnnotation] != "true" {
		return host
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(pod.UID))
	sum := h.Sum32()
	if _, cidr, err := net.ParseCIDR(network); err == nil && cidr.IP.To4() != nil {
		base := cidr.IP.To4()
		// x.y.0.1 ... x.y.255.254 of the /16: never a .0 or .255 host part.
		return fmt.Sprintf("%d.%d.%d.%d", base[0], base[1], sum&0xff, 1+(sum>>8)%254)
	}
	// 127.1.0.1 ... 127.254.255.254: never 127.0.0.1, never a .0 or .255 host part.
	return fmt.Sprintf("127.%d.%d.%d", 1+sum%254, (sum>>8)&0xff, 1+(sum>>16)%254)
}

// podIPOrHost is the worker's pod IP; a worker built by hand in a test has the node's.
func (w *podWorker) podIPOrHost() string {
	if w.ip != "" {
		return w.ip
	}
	return w.a.address
}
