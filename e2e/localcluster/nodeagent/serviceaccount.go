package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A pod's service-account identity lives in its directory:
//
//	<poddir>/serviceaccount/token      the bound token (refreshed before it expires)
//	<poddir>/serviceaccount/ca.crt     the apiserver's CA
//	<poddir>/serviceaccount/namespace  the pod's namespace
//	<poddir>/kubeconfig.yaml           a kubeconfig with that token and the pod's namespace
//
// Every process container gets KUBECONFIG=<poddir>/kubeconfig.yaml and
// STAGEHAND_SERVICEACCOUNT_DIR=<poddir>/serviceaccount. KUBERNETES_SERVICE_HOST and _PORT are
// deliberately not set, so client-go's in-cluster config fails fast and clients fall back to
// KUBECONFIG, the standard client-go way.
const (
	EnvServiceAccountDir = "STAGEHAND_SERVICEACCOUNT_DIR"
	envKubeconfig        = "KUBECONFIG"
	kubeconfigFile       = "kubeconfig.yaml"
	// serviceAccountDirName is <poddir>/serviceaccount.
	serviceAccountDirName = "serviceaccount"
	tokenLifetime         = time.Hour
)

// wantsToken reports whether the pod gets a service-account token. As on a kubelet, the
// pod's spec decides: the ServiceAccount admission plugin adds a projected volume with a
// serviceAccountToken source when neither the pod nor its ServiceAccount turn
// automounting off, and the agent mints a token for a pod that has one. (It used to read
// the ServiceAccount itself: a request before every process start that no kubelet makes.)
func wantsToken(pod *corev1.Pod) bool {
	if pod.Spec.ServiceAccountName == "" {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

// writeIdentity mints a token bound to the pod and writes the identity files. It returns
// when the token should be refreshed.
func (a *Agent) writeIdentity(ctx context.Context, pod *corev1.Pod, podDir string) (time.Time, error) {
	expiration := int64(tokenLifetime / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiration,
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
		},
	}}
	issued := time.Now()
	tr, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, tr, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("requesting a token for service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	saDir := filepath.Join(podDir, serviceAccountDirName)
	if err := os.MkdirAll(saDir, 0o755); err != nil {
		return time.Time{}, fmt.Errorf("creating service account folder: %w", err)
	}
	tokenPath := filepath.Join(saDir, "token")
	files := map[string][]byte{
		tokenPath:                         []byte(tr.Status.Token),
		filepath.Join(saDir, "namespace"): []byte(pod.Namespace),
	}
	if len(a.caData) > 0 {
		files[filepath.Join(saDir, "ca.crt")] = a.caData
	}
	kc, err := clientcmd.Write(a.podKubeconfig(pod.Namespace, tr.Status.Token, tokenPath))
	if err != nil {
		return time.Time{}, fmt.Errorf("encoding pod kubeconfig: %w", err)
	}
	files[filepath.Join(podDir, kubeconfigFile)] = kc
	for path, data := range files {
		if err := writeFileAtomic(path, data); err != nil {
			return time.Time{}, err
		}
	}
	// Refresh at 80% of the lifetime, like the kubelet's token manager.
	lifetime := tr.Status.ExpirationTimestamp.Sub(issued)
	if lifetime <= 0 || lifetime > tokenLifetime {
		lifetime = tokenLifetime
	}
	return issued.Add(lifetime * 8 / 10), nil
}

// podKubeconfig builds a kubeconfig for a pod. The user carries the token inline and also
// names the token file, which client-go re-reads, so long-running processes see the
// refreshed token.
func (a *Agent) podKubeconfig(namespace, token, tokenPath string) clientcmdapi.Config {
	cluster := clientcmdapi.NewCluster()
	cluster.Server = a.cfg.RESTConfig.Host
	cluster.CertificateAuthorityData = a.caData
	cluster.InsecureSkipTLSVerify = len(a.caData) == 0 && a.cfg.RESTConfig.Insecure
	user := clientcmdapi.NewAuthInfo()
	user.Token = token
	user.TokenFile = tokenPath
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = "local"
	kctx.AuthInfo = "serviceaccount"
	kctx.Namespace = namespace
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = cluster
	cfg.AuthInfos["serviceaccount"] = user
	cfg.Contexts["default"] = kctx
	cfg.CurrentContext = "default"
	return *cfg
}

// caBundle returns the apiserver's CA from the REST config (data or file).
func caBundle(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading apiserver CA: %w", err)
	}
	return data, nil
}

// writeFileAtomic replaces path with data, so that readers never see a half-written file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
