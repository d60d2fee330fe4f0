package localcluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
)

// registryRealm is the realm of the proxy's Basic challenge.
const registryRealm = "stagehand-localcluster"

// proxyConfig is what the auth proxy needs; <dir>/distribution/proxy.json holds it for
// `stagehand-localcluster registry-proxy`.
type proxyConfig struct {
	// Listen is the proxy's address, the one clients use: 127.0.0.1:<port>.
	Listen string `json:"listen"`
	// Backend is docker-registry's URL: http://127.0.0.1:<port>.
	Backend string `json:"backend"`
	// Htpasswd is a file of user:bcrypt-hash lines.
	Htpasswd string `json:"htpasswd"`
	// ProtectedPrefix is the repository prefix that needs credentials, with its slash.
	ProtectedPrefix string `json:"protectedPrefix"`
}

// authProxy sits in front of docker-registry, which has no authentication of its own here.
// Every repository is open except those under the protected prefix, which need Basic
// credentials from the htpasswd file. Distribution's own htpasswd support would protect
// the whole registry, and the tests need both kinds of repository side by side.
type authProxy struct {
	users     map[string][]byte // user: bcrypt hash
	protected string            // "/v2/" + prefix
	prefix    string
	next      http.Handler
	log       *logrus.Entry

	mu       sync.Mutex
	verified map[[sha256.Size]byte]bool // Authorization headers that passed bcrypt
}

func newAuthProxy(cfg proxyConfig, log *logrus.Entry) (*authProxy, error) {
	users, err := readHtpasswd(cfg.Htpasswd)
	if err != nil {
		return nil, err
	}
	backend, err := url.Parse(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("parsing the registry's URL %q: %w", cfg.Backend, err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(backend)
			// docker-registry builds its upload URLs from the forwarded host and scheme,
			// so clients keep talking to the proxy.
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			// The registry behind has no authentication; the header means nothing there.
			pr.Out.Header.Del("Authorization")
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.WithError(err).WithField("path", r.URL.Path).Warn("Proxying to docker-registry failed")
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return &authProxy{
		users:     users,
		prefix:    cfg.ProtectedPrefix,
		protected: "/v2/" + cfg.ProtectedPrefix,
		next:      rp,
		log:       log,
		verified:  map[[sha256.Size]byte]bool{},
	}, nil
}

// ServeHTTP answers the /v2/ ping itself when it must challenge, refuses unauthenticated
// requests for protected repositories, and passes everything else to docker-registry:
//   - wrong credentials anywhere: 401;
//   - GET /v2/ without credentials: 401 with the Basic challenge, so that clients that have
//     credentials send them (anonymous clients go on without);
//   - protected repositories (their paths, cross-repository mounts from them) and the
//     catalog, which would list them, without credentials: 401.
func (p *authProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	header := r.Header.Get("Authorization")
	authenticated := header != "" && p.valid(header)
	switch {
	case header != "" && !authenticated:
		p.challenge(w, r, "invalid username or password")
	case !authenticated && (r.URL.Path == "/v2/" || r.URL.Path == "/v2"):
		p.challenge(w, r, "authentication required")
	case !authenticated && p.needsAuth(r):
		p.challenge(w, r, "authentication required")
	default:
		p.next.ServeHTTP(w, r)
	}
}

// needsAuth reports whether a request touches a protected repository.
func (p *authProxy) needsAuth(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, p.protected) ||
		strings.HasPrefix(r.URL.Query().Get("from"), p.prefix) ||
		strings.HasPrefix(r.URL.Path, "/v2/_catalog")
}

// challenge answers 401 as a registry does: a Basic challenge and an error body.
func (p *authProxy) challenge(w http.ResponseWriter, r *http.Request, msg string) {
	h := w.Header()
	h.Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", registryRealm))
	h.Set("Docker-Distribution-API-Version", "registry/2.0")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	if r.Method != http.MethodHead {
		body := map[string]any{"errors": []map[string]any{{"code": "UNAUTHORIZED", "message": msg, "detail": nil}}}
		_ = json.NewEncoder(w).Encode(body)
	}
	p.log.WithFields(logrus.Fields{"method": r.Method, "path": r.URL.Path}).Debugf("401: %s", msg)
}

// valid checks a Basic Authorization header against the htpasswd entries. bcrypt costs
// tens of milliseconds, so headers that passed once are remembered (by their hash).
func (p *authProxy) valid(header string) bool {
	sum := sha256.Sum256([]byte(header))
	p.mu.Lock()
	ok := p.verified[sum]
	p.mu.Unlock()
	if ok {
		return true
	}
	r := http.Request{Header: http.Header{"Authorization": {header}}}
	user, password, found := r.BasicAuth()
	if !found {
		return false
	}
	hash, known := p.users[user]
	if !known || bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return false
	}
	p.mu.Lock()
	p.verified[sum] = true
	p.mu.Unlock()
	return true
}

// writeHtpasswd writes one user with a bcrypt hash of password, as htpasswd -B would.
func writeHtpasswd(path, user, password string) error {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("hashing the registry password: %w", err)
	}
	return writeFileAtomic(path, []byte(user+":"+string(hash)+"\n"), 0o600)
}

// readHtpasswd reads user:hash lines; only bcrypt hashes are accepted.
func readHtpasswd(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the htpasswd file: %w", err)
	}
	defer f.Close()
	users := map[string][]byte{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(hash, "$2") {
			return nil, fmt.Errorf("%s: want user:bcrypt-hash lines, got %q", path, user)
		}
		users[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%s holds no user", path)
	}
	return users, nil
}

// proxyServer is the auth proxy serving on one listener, in this process.
type proxyServer struct {
	srv     *http.Server
	done    chan struct{}
	err     error
	logPath string
	logOut  *os.File
}

// serveProxy listens on cfg.Listen and serves the proxy until stop. The log goes to logPath
// when it is set, else to log.
func serveProxy(cfg proxyConfig, logPath string, log *logrus.Entry) (*proxyServer, error) {
	s := &proxyServer{done: make(chan struct{}), logPath: logPath}
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening the registry proxy log: %w", err)
		}
		logger := logrus.New()
		logger.SetOutput(f)
		logger.SetLevel(log.Logger.GetLevel())
		logger.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
		s.logOut, log = f, logrus.NewEntry(logger)
	}
	h, err := newAuthProxy(cfg, log)
	if err == nil {
		var ln net.Listener
		if ln, err = net.Listen("tcp", cfg.Listen); err == nil {
			s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
			log.WithFields(logrus.Fields{"listen": cfg.Listen, "backend": cfg.Backend}).Info("Registry proxy serving")
			go func() {
				defer close(s.done)
				s.err = s.srv.Serve(ln)
			}()
			return s, nil
		}
	}
	if s.logOut != nil {
		s.logOut.Close()
	}
	return nil, fmt.Errorf("starting the registry proxy on %s: %w", cfg.Listen, err)
}

func (s *proxyServer) exitErr() error {
	select {
	case <-s.done:
		return stoppedError("the registry proxy", s.err, s.logPath)
	default:
		return nil
	}
}

func (s *proxyServer) logFile() string { return s.logPath }

// stop closes the listener and every connection, and waits for Serve to return.
func (s *proxyServer) stop() error {
	err := s.srv.Close()
	<-s.done
	if s.logOut != nil {
		s.logOut.Close()
	}
	return err
}

// RunRegistryProxy serves the auth proxy of the registry in dir until ctx ends. It is the
// body of `stagehand-localcluster registry-proxy`, which `up --registry` starts in the
// background.
func RunRegistryProxy(ctx context.Context, dir string, log *logrus.Entry) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", dir, err)
	}
	l := layout{dir: abs}
	data, err := os.ReadFile(l.registryProxyConfig())
	if err != nil {
		return fmt.Errorf("reading the registry proxy's configuration: %w", err)
	}
	var cfg proxyConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("parsing %s: %w", l.registryProxyConfig(), err)
	}
	s, err := serveProxy(cfg, "", log)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return s.stop()
	case <-s.done:
		if errors.Is(s.err, http.ErrServerClosed) {
			return nil
		}
		return s.err
	}
}
