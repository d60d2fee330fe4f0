package localcluster

import (
	"net"
	"os/exec"
	"sync"

	"github.com/sirupsen/logrus"
)

// PodNetwork is the range from which a pod that asks for an IP of its own gets one
// (nodeagent.OwnIPAnnotation). It is routed to loopback (`ip route add local ... dev lo`),
// so every address in it is the host's own, as 127.0.0.0/8 is; unlike loopback addresses,
// the apiserver accepts these in EndpointSlices and proxies to them, so Services work.
// 198.18.0.0/15 is reserved for benchmarks (RFC 2544) and unused on real networks.
const PodNetwork = "198.18.0.0/16"

var (
	podNetworkOnce sync.Once
	podNetworkErr  string
)

// podNetwork routes PodNetwork to loopback once per process, and returns it, or "" with
// the reason when it cannot (adding a route needs root and iproute2): pods then get
// loopback addresses of their own, which Services cannot reach.
func podNetwork(log *logrus.Entry) string {
	podNetworkOnce.Do(func() {
		if routed() {
			return
		}
		out, err := exec.Command("ip", "route", "add", "local", PodNetwork, "dev", "lo").CombinedOutput()
		if !routed() {
			podNetworkErr = "cannot route " + PodNetwork + " to loopback"
			if err != nil {
				podNetworkErr += ": " + err.Error() + ": " + string(out)
			}
		}
	})
	if podNetworkErr != "" {
		log.Warnf("Pods asking for an IP of their own get a loopback one, which no Service reaches: %s", podNetworkErr)
		return ""
	}
	return PodNetwork
}

// routed reports whether the first address of PodNetwork is the host's own.
func routed() bool {
	ln, err := net.Listen("tcp", "198.18.0.1:0")
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
