package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Component names double as log and pid file stems.
const (
	etcdName              = "etcd"
	apiserverName         = "kube-apiserver"
	controllerManagerName = "kube-controller-manager"
	schedulerName         = "kube-scheduler"
	agentName             = "nodeagent"
)

const serviceClusterIPRange = "10.0.0.0/24"

// Client-side rate limits of the controller manager and the scheduler. The defaults (20/30
// and 50/100) throttle them long before this apiserver is busy: a scale benchmark that
// creates thousands of pods would measure client-go's token bucket.
const (
	componentAPIQPS   = "200"
	componentAPIBurst = "400"
	// replicaSetSyncs is the ReplicaSet controller's workers (default 5), for benchmarks
	// with many ReplicaSets at once.
	replicaSetSyncs = "20"
)

func etcdArgs(l layout, p ports) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(p.EtcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(p.EtcdPeer)
	return []string{
		"--name=default",
		"--data-dir=" + l.etcdData(),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--initial-cluster-state=new",
		// Test data is thrown away; fsync would only slow every write down.
		"--unsafe-no-fsync",
	}
}

// apiserverArgs are the apiserver's flags; apf turns API Priority and Fairness on (see
// Options.PriorityAndFairness). nodeIP is the real node's address, nil without one: the
// apiserver then also listens there and publishes it as the kubernetes Service's endpoint,
// which the real node's kube-proxy sends the pods' in-cluster clients to.
func apiserverArgs(l layout, p ports, apf bool, nodeIP net.IP) []string {
	k := l.pki()
	bind, advertise := "127.0.0.1", "127.0.0.1"
	// The default reconciler tries to publish 127.0.0.1 as the kubernetes Service's
	// endpoint, which is refused, and logs an error every 10 s.
	reconciler := "none"
	if nodeIP != nil {
		bind, advertise, reconciler = "0.0.0.0", nodeIP.String(), "lease"
	}
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(p.EtcdClient),
		"--bind-address=" + bind,
		"--advertise-address=" + advertise,
		"--secure-port=" + strconv.Itoa(p.APIServer),
		"--tls-cert-file=" + k.cert("apiserver"),
		"--tls-private-key-file=" + k.key("apiserver"),
		"--client-ca-file=" + k.caCert(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + k.saPub(),
		"--service-account-signing-key-file=" + k.saKey(),
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--kubelet-client-certificate=" + k.cert("apiserver-kubelet-client"),
		"--kubelet-client-key=" + k.key("apiserver-kubelet-client"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--endpoint-reconciler-type=" + reconciler,
		"--enable-priority-and-fairness=" + strconv.FormatBool(apf),
		// On SIGTERM, answer new requests 429 with Retry-After (client-go retries them) until
		// the requests in flight are done, then close every connection within 2 s. By
		// default the apiserver waits up to 60 s for its clients' watches to end, so a
		// RestartComponent while clients watch would always end in SIGKILL after termGrace
		// and keep the API away for that long.
		"--shutdown-send-retry-after=true",
		"--profiling=false",
	}
}

// auditPolicy logs every request at level Metadata (who, what, verb, status; no bodies),
// once per request stage past RequestReceived.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// auditLogPath is the apiserver's audit log when Options.AuditLog is set: JSON lines, one
// audit event each.
func auditLogPath(l layout) string { return l.logFile("audit") }

// auditArgs writes the audit policy into the cluster folder and returns the apiserver's
// audit flags. The batch mode with batches of one event writes each event right away but
// off the request's path: the blocking mode made every request wait for its write, which
// slowed the whole cluster down during a benchmark. A reader waits for the log to be quiet
// (as the bench's API cost does); the large buffer keeps a burst from dropping events.
func auditArgs(l layout) ([]string, error) {
	policy := l.path("audit-policy.yaml")
	if err := writeFileAtomic(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + auditLogPath(l),
		"--audit-log-format=json",
		"--audit-log-mode=batch",
		"--audit-log-batch-max-size=1",
		"--audit-log-batch-buffer-size=200000",
		"--audit-log-maxsize=0", // never rotate: a reader keeps its offset
	}, nil
}

func controllerManagerArgs(l layout, p ports) []string {
	k := l.pki()
	return []string{
		// No --authentication-kubeconfig: /healthz needs no credentials, and delegated
		// authentication would look for a request-header CA this apiserver does not have.
		"--kubeconfig=" + l.componentKubeconfig(controllerManagerName),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.ControllerManager),
		"--tls-cert-file=" + k.cert("components"),
		"--tls-private-key-file=" + k.key("components"),
		// Every on-by-default controller: the ServiceAccount controller (pods cannot be
		// admitted without the default ServiceAccount), ReplicaSets, garbage collection.
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + k.saKey(),
		"--root-ca-file=" + k.caCert(),
		"--cluster-signing-cert-file=" + k.caCert(),
		"--cluster-signing-key-file=" + k.key("ca"),
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--kube-api-qps=" + componentAPIQPS,
		"--kube-api-burst=" + componentAPIBurst,
		"--concurrent-replicaset-syncs=" + replicaSetSyncs,
		"--profiling=false",
	}
}

func schedulerArgs(l layout, p ports) []string {
	k := l.pki()
	return []string{
		"--kubeconfig=" + l.componentKubeconfig(schedulerName),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.Scheduler),
		"--tls-cert-file=" + k.cert("components"),
		"--tls-private-key-file=" + k.key("components"),
		// Deprecated in favour of clientConnection in a --config file, which would also
		// replace every other flag here; v1.36 still honours them.
		"--kube-api-qps=" + componentAPIQPS,
		"--kube-api-burst=" + componentAPIBurst,
		"--profiling=false",
	}
}

// portPicker hands out free loopback ports, never the same one twice in one start.
type portPicker struct{ used map[int]bool }

// pick returns preferred when it is free, otherwise a port the kernel picks. Another process
// can still take the port before the component binds it; launch retries then.
func (pp *portPicker) pick(preferred int) (int, error) {
	if pp.used == nil {
		pp.used = map[int]bool{}
	}
	if preferred > 0 && !pp.used[preferred] && portFree(preferred) {
		pp.used[preferred] = true
		return preferred, nil
	}
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("picking a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !pp.used[port] {
			pp.used[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("picking a free port: the kernel kept returning used ones")
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// plainClient keeps no idle connections, so nothing stays connected to a stopped cluster.
var plainClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// etcdHealthy checks etcd's /health endpoint.
func etcdHealthy(port int) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := httpGet(ctx, plainClient, fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err != nil {
			return err
		}
		if !strings.Contains(body, `"health":"true"`) {
			return fmt.Errorf("etcd reports %s", strings.TrimSpace(body))
		}
		return nil
	}
}

// apiserverReady checks /readyz as the admin.
func apiserverReady(cs kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		var failing []string
		for _, line := range strings.Split(string(body), "\n") {
			if name, ok := strings.CutPrefix(line, "[-]"); ok {
				failing = append(failing, strings.TrimSuffix(name, " failed: reason withheld"))
			}
		}
		if len(failing) == 0 {
			return fmt.Errorf("GET /readyz: %w", err)
		}
		return fmt.Errorf("GET /readyz: not ready: %s", strings.Join(failing, ", "))
	}
}

// componentHealthy checks the /healthz endpoint that the controller manager and the
// scheduler serve on their secure port; /healthz needs no credentials there.
func componentHealthy(caFile string, port int) (func(context.Context) error, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return func(ctx context.Context) error {
		body, err := httpGet(ctx, client, url)
		if err != nil {
			return err
		}
		if strings.TrimSpace(body) != "ok" {
			return fmt.Errorf("GET %s: %s", url, body)
		}
		return nil
	}, nil
}

// defaultServiceAccount checks that the ServiceAccount controller has run: without the
// default ServiceAccount no pod is admitted.
func defaultServiceAccount(cs kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the ServiceAccount controller has not created default/default yet")
		}
		return err
	}
}

func httpGet(ctx context.Context, client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
