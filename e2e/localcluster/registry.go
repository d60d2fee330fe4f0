package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"sigs.k8s.io/yaml"
)

// Component names of the registry, which double as log and pid file stems.
const (
	registryName      = "registry"       // docker-registry
	registryProxyName = "registry-proxy" // the auth proxy in front of it
)

const (
	// registryBinary is the Distribution registry of Debian's docker-registry package.
	registryBinary  = "docker-registry"
	registryTimeout = 30 * time.Second
	// RegistryUser is the user that the protected repositories accept.
	RegistryUser = "stagehand"
	// RegistryProtectedPrefix starts the names of the repositories that need credentials:
	// <address>/private/app needs them, <address>/app does not.
	RegistryProtectedPrefix = "private/"
	// RegistryEnv names the variable that `stagehand-localcluster env` sets to the address.
	RegistryEnv = "STAGEHAND_REGISTRY"
)

// RegistryMissing returns why the registry cannot run ("" when it can): docker-registry is
// not on PATH. Tests hand the reason to gate.Require.
func RegistryMissing() string {
	if _, err := exec.LookPath(registryBinary); err != nil {
		return fmt.Sprintf("%s is not installed (%v); run hack/install-registry.sh or `make registry`",
			registryBinary, err)
	}
	return ""
}

// RegistryInfo is how clients reach the registry: <dir>/registry-auth.json holds it while the
// registry runs, and <dir>/registry holds the address alone.
type RegistryInfo struct {
	// Address is the registry's host:port, 127.0.0.1:<port>. It serves plain HTTP; with
	// go-containerregistry, parse references with name.Insecure.
	Address string `json:"address"`
	// Username and Password open the repositories under ProtectedPrefix. The password is
	// new at every start.
	Username string `json:"username"`
	Password string `json:"password"`
	// ProtectedPrefix starts the names of the repositories that need the credentials.
	ProtectedPrefix string `json:"protectedPrefix"`
}

// Image returns the reference of repository:tag in the registry, for example
// Image("app:stable") = "127.0.0.1:<port>/app:stable".
func (ri RegistryInfo) Image(repoAndTag string) string { return ri.Address + "/" + repoAndTag }

// PrivateImage returns the reference of a repository under the protected prefix, for example
// PrivateImage("app:stable") = "127.0.0.1:<port>/private/app:stable".
func (ri RegistryInfo) PrivateImage(repoAndTag string) string {
	return ri.Address + "/" + ri.ProtectedPrefix + repoAndTag
}

// LoadRegistry reads the registry of the cluster in dir. The error wraps os.ErrNotExist
// when no registry runs there.
func LoadRegistry(dir string) (RegistryInfo, error) {
	var ri RegistryInfo
	l := layout{dir: dir}
	data, err := os.ReadFile(l.registryAuth())
	if err != nil {
		return ri, fmt.Errorf("reading the registry's address and credentials: %w", err)
	}
	if err := json.Unmarshal(data, &ri); err != nil {
		return ri, fmt.Errorf("parsing %s: %w", l.registryAuth(), err)
	}
	return ri, nil
}

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// Dir is the folder for the registry's files, logs and pid files (required).
	Dir string
	// Log receives progress lines. Default: the standard logrus logger.
	Log *logrus.Entry
}

// Registry is a running registry: docker-registry, with filesystem storage in the folder,
// behind an auth proxy that asks for Basic credentials for the protected repositories.
type Registry struct {
	RegistryInfo

	layout      layout
	log         *logrus.Entry
	proxyPort   int
	backendPort int
	backend     *process     // docker-registry
	proxyProc   *process     // the proxy, when detached
	proxy       *proxyServer // the proxy, in this process

	stopOnce sync.Once
	stopErr  error
}

// StartRegistry starts a registry on its own, without a control plane, in opts.Dir. Its
// processes die with this one; Stop ends them sooner. Clusters start theirs with
// Options.Registry.
func StartRegistry(ctx context.Context, opts RegistryOptions) (*Registry, error) {
	if opts.Dir == "" {
		return nil, errors.New("starting a registry: no folder given")
	}
	if opts.Log == nil {
		opts.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	l := layout{dir: opts.Dir}
	for _, d := range []string{l.path("logs"), l.path("pids")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := checkNotRunning(l); err != nil {
		return nil, err
	}
	return startRegistry(ctx, l, false, &portPicker{}, opts.Log.WithField("component", "localcluster"))
}

// startRegistry starts docker-registry on a free port, then the auth proxy on another: in
// this process, or, when detached, as `<this executable> registry-proxy --dir <dir>`.
func startRegistry(ctx context.Context, l layout, detach bool, pp *portPicker, log *logrus.Entry) (_ *Registry, err error) {
	binary, lookErr := exec.LookPath(registryBinary)
	if lookErr != nil {
		return nil, errors.New(RegistryMissing())
	}
	r := &Registry{layout: l, log: log}
	defer func() {
		if err != nil {
			if stopErr := r.Stop(); stopErr != nil {
				log.WithError(stopErr).Warn("Stopping the registry after a failed start")
			}
			err = fmt.Errorf("starting the registry: %w", err)
		}
	}()
	r.RegistryInfo = RegistryInfo{Username: RegistryUser, Password: rand.Text(), ProtectedPrefix: RegistryProtectedPrefix}
	if err := prepareRegistryDir(l, r.RegistryInfo); err != nil {
		return nil, err
	}
	secret := rand.Text()
	r.backend, err = launchProcess(ctx, l, detach, log, registryName, binary, registryTimeout,
		func(int) ([]string, check, error) {
			port, err := pp.pick(0)
			if err != nil {
				return nil, nil, err
			}
			r.backendPort = port
			if err := writeRegistryConfig(l, port, secret); err != nil {
				return nil, nil, err
			}
			url := fmt.Sprintf("http://127.0.0.1:%d/v2/", port)
			return []string{"serve", l.registryConfig()}, func(ctx context.Context) error {
				_, err := httpGet(ctx, plainClient, url)
				return err
			}, nil
		})
	if err != nil {
		return nil, err
	}
	cfg := proxyConfig{
		Backend:         fmt.Sprintf("http://127.0.0.1:%d", r.backendPort),
		Htpasswd:        l.registryHtpasswd(),
		ProtectedPrefix: RegistryProtectedPrefix,
	}
	if err := r.startProxy(ctx, cfg, detach, pp); err != nil {
		return nil, err
	}
	if err := writeRegistryInfo(l, r.RegistryInfo); err != nil {
		return nil, err
	}
	log.WithField("address", r.Address).Info("Registry ready")
	return r, nil
}

// startProxy starts the auth proxy on a free port and waits until it answers through to
// docker-registry.
func (r *Registry) startProxy(ctx context.Context, cfg proxyConfig, detach bool, pp *portPicker) error {
	pick := func() error {
		port, err := pp.pick(0)
		if err != nil {
			return err
		}
		cfg.Listen = "127.0.0.1:" + strconv.Itoa(port)
		r.Address, r.proxyPort = cfg.Listen, port
		return nil
	}
	if detach {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this executable to run the registry proxy: %w", err)
		}
		r.proxyProc, err = launchProcess(ctx, r.layout, true, r.log, registryProxyName, exe, registryTimeout,
			func(int) ([]string, check, error) {
				if err := pick(); err != nil {
					return nil, nil, err
				}
				data, err := json.MarshalIndent(cfg, "", "  ")
				if err != nil {
					return nil, nil, fmt.Errorf("encoding the proxy configuration: %w", err)
				}
				if err := writeFileAtomic(r.layout.registryProxyConfig(), append(data, '\n'), 0o644); err != nil {
					return nil, nil, err
				}
				return []string{"registry-proxy", "--dir", r.layout.dir}, r.proxyHealthy, nil
			}, r.backend)
		return err
	}
	var err error
	for range launchAttempts { // another process may take the port between pick and bind
		if err = pick(); err != nil {
			return err
		}
		if r.proxy, err = serveProxy(cfg, r.layout.logFile(registryProxyName), r.log); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	return waitUntil(ctx, "the registry proxy to answer", registryTimeout, r.proxyHealthy, r.proxy, r.backend)
}

// proxyHealthy checks that the proxy challenges anonymous pings and lets the credentials
// through to docker-registry.
func (r *Registry) proxyHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := "http://" + r.Address + "/v2/"
	for _, withAuth := range []bool{false, true} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		want := http.StatusUnauthorized
		if withAuth {
			req.SetBasicAuth(r.Username, r.Password)
			want = http.StatusOK
		}
		resp, err := plainClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != want || (!withAuth && !strings.Contains(resp.Header.Get("WWW-Authenticate"), registryRealm)) {
			return fmt.Errorf("GET %s (credentials: %t): %s, want %d", url, withAuth, resp.Status, want)
		}
	}
	return nil
}

// Stop ends the proxy and docker-registry, and removes the files that announce the
// registry. It is safe to call more than once.
func (r *Registry) Stop() error {
	r.stopOnce.Do(func() {
		var errs []error
		if r.proxy != nil {
			if err := r.proxy.stop(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, fmt.Errorf("registry proxy: %w", err))
			}
		}
		for _, p := range []*process{r.proxyProc, r.backend} {
			if p != nil {
				errs = append(errs, p.stop())
			}
		}
		removeRegistryInfo(r.layout)
		r.stopErr = errors.Join(errs...)
	})
	return r.stopErr
}

// prepareRegistryDir empties the storage, and writes the htpasswd file for ri's user.
func prepareRegistryDir(l layout, ri RegistryInfo) error {
	removeRegistryInfo(l)
	if err := os.RemoveAll(l.registryStorage()); err != nil {
		return fmt.Errorf("clearing %s: %w", l.registryStorage(), err)
	}
	if err := os.MkdirAll(l.registryStorage(), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", l.registryStorage(), err)
	}
	return writeHtpasswd(l.registryHtpasswd(), ri.Username, ri.Password)
}

// writeRegistryConfig writes docker-registry's configuration (Distribution 2.x, version 0.1).
func writeRegistryConfig(l layout, port int, secret string) error {
	cfg := map[string]any{
		"version": "0.1",
		"log":     map[string]any{"level": "info", "formatter": "text"},
		"storage": map[string]any{
			"filesystem": map[string]any{"rootdirectory": l.registryStorage()},
			"delete":     map[string]any{"enabled": true},
			// No background purge of unfinished uploads: the storage lives as long as a test.
			"maintenance": map[string]any{"uploadpurging": map[string]any{"enabled": false}},
		},
		"http": map[string]any{
			"addr":    "127.0.0.1:" + strconv.Itoa(port),
			"secret":  secret,
			"headers": map[string]any{"X-Content-Type-Options": []string{"nosniff"}},
		},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding the registry configuration: %w", err)
	}
	return writeFileAtomic(l.registryConfig(), data, 0o644)
}

// writeRegistryInfo announces a running registry: its address in <dir>/registry, and the
// address with the credentials in <dir>/registry-auth.json.
func writeRegistryInfo(l layout, ri RegistryInfo) error {
	data, err := json.MarshalIndent(ri, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the registry credentials: %w", err)
	}
	if err := writeFileAtomic(l.registryAuth(), append(data, '\n'), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(l.registryAddress(), []byte(ri.Address+"\n"), 0o644)
}

// removeRegistryInfo removes what writeRegistryInfo wrote, once the registry has stopped,
// and the registry's line in <dir>/env.
func removeRegistryInfo(l layout) {
	_ = os.Remove(l.registryAddress())
	_ = os.Remove(l.registryAuth())
	if _, err := os.Stat(l.env()); err == nil {
		_ = writeFileAtomic(l.env(), []byte(EnvLines(l.dir)), 0o644)
	}
}

// registryAddressIn returns the address of the registry that runs for the cluster in dir,
// or "" when none runs.
func registryAddressIn(dir string) string {
	data, err := os.ReadFile(layout{dir: dir}.registryAddress())
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
