package localcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// layout names the files in the cluster folder. docs/localcluster.md describes them.
type layout struct{ dir string }

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}
func (l layout) kubeconfig() string         { return l.path("kubeconfig") }
func (l layout) env() string                { return l.path("env") }
func (l layout) imageMap() string           { return l.path("imagemap") }
func (l layout) state() string              { return l.path("cluster.json") }
func (l layout) etcdData() string           { return l.path("etcd") }
func (l layout) agentDir() string           { return l.path("nodeagent") }
func (l layout) pki() pki                   { return pki{dir: l.path("pki")} }
func (l layout) logFile(name string) string { return l.path("logs", name+".log") }
func (l layout) pidFile(name string) string { return l.path("pids", name+".pid") }
func (l layout) componentKubeconfig(name string) string {
	return l.path("pki", name+".kubeconfig")
}

// The registry's files: the address and the credentials at the top, for users; the rest in
// distribution/.
func (l layout) registryAddress() string     { return l.path("registry") }
func (l layout) registryAuth() string        { return l.path("registry-auth.json") }
func (l layout) registryConfig() string      { return l.path("distribution", "config.yml") }
func (l layout) registryStorage() string     { return l.path("distribution", "storage") }
func (l layout) registryHtpasswd() string    { return l.path("distribution", "htpasswd") }
func (l layout) registryProxyConfig() string { return l.path("distribution", "proxy.json") }

// state is what a start records in cluster.json, for `env`, `agent` and the next start.
type state struct {
	APIServerURL string `json:"apiServerURL"`
	Ports        ports  `json:"ports"`
	Nodes        int    `json:"nodes"`
	BinDir       string `json:"binDir"`
	Detached     bool   `json:"detached"`
	// Registry is the registry's address when the cluster runs one.
	Registry string `json:"registry,omitempty"`
	// RealNode is the real node's Node name, when one runs.
	RealNode string `json:"realNode,omitempty"`
}

// ports are the loopback ports in use, all picked free at start.
type ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Registry          int `json:"registry,omitempty"`        // the auth proxy
	RegistryBackend   int `json:"registryBackend,omitempty"` // docker-registry
}

func (l layout) writeState(s state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding cluster state: %w", err)
	}
	return writeFileAtomic(l.state(), append(data, '\n'), 0o644)
}

func (l layout) readState() (state, error) {
	var s state
	data, err := os.ReadFile(l.state())
	if err != nil {
		return s, fmt.Errorf("reading cluster state: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("parsing %s: %w", l.state(), err)
	}
	return s, nil
}

// EnvLines returns the shell lines that point kubectl at the cluster in dir, and name its
// registry in $STAGEHAND_REGISTRY when one runs.
func EnvLines(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	lines := fmt.Sprintf("export KUBECONFIG=%s\n", shellQuote(layout{dir: abs}.kubeconfig()))
	if addr := registryAddressIn(abs); addr != "" {
		lines += fmt.Sprintf("export %s=%s\n", RegistryEnv, shellQuote(addr))
	}
	return lines
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path characters.
func shellQuote(s string) string {
	if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeKubeconfig writes a kubeconfig with the client pair of user embedded, so the file
// stands alone.
func (l layout) writeKubeconfig(path, server, user string) error {
	p := l.pki()
	ca, err := os.ReadFile(p.caCert())
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	cert, err := os.ReadFile(p.cert(user))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	key, err := os.ReadFile(p.key(user))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	const name = "stagehand-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// loadRESTConfig reads a kubeconfig and raises client-side rate limits, which would otherwise
// throttle tests and benchmarks long before this apiserver does.
func loadRESTConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, nil
}
