package nodeagent

import (
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"
)

// Config is everything the node agent needs. The localcluster package fills it in.
type Config struct {
	// RESTConfig carries admin credentials for the apiserver.
	RESTConfig *rest.Config
	// NodeNames are the Nodes this agent registers and serves, e.g. ["stagehand-node-1"].
	NodeNames []string
	// Dir is the agent's working folder: per-pod directories, container logs.
	Dir string
	// ImageMap sends container images to local binaries.
	ImageMap ImageMap
	// Address is the loopback address that the kubelet endpoints listen on (127.0.0.1).
	Address string
	// ServingCertFile and ServingKeyFile are the TLS pair for the kubelet endpoints.
	ServingCertFile, ServingKeyFile string
	// Log receives the agent's own log lines.
	Log *logrus.Entry

	// RestartBackoff is the first delay before a crashed container restarts; it doubles with
	// every restart up to MaxRestartBackoff. Defaults: 1s and 5m (the kubelet uses 10s and 5m;
	// a shorter start keeps CrashLoopBackOff tests fast).
	RestartBackoff, MaxRestartBackoff time.Duration
	// PodNetwork is a /16 routed to loopback from which pods annotated OwnIPAnnotation get
	// their IPs; empty: they get loopback addresses of their own (podip.go).
	PodNetwork string
	// ExtraEnv ("NAME=value") is added to the environment of every container, before the
	// container's own env, which can override it.
	ExtraEnv []string
}
