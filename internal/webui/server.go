// Package webui is the dashboard that kubectl stagehand dashboard serves (docs/dashboard.md):
// a list of DeploymentConfigs, one DC's revisions, pods and logs, a "why is it waiting"
// line, and the rollout verbs, live from one set of watches, under the user's own rights.
package webui

import (
	"crypto/subtle"
	"embed"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
)

//go:embed assets
var assets embed.FS

// CookieName holds the token in the browser once the URL's token was seen.
const CookieName = "stagehand-dashboard"

// contentSecurityPolicy allows the dashboard's own files and nothing else: no inline
// script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server serves the dashboard.
type Server struct {
	Kube      kubernetes.Interface
	Stagehand stagehandclient.Interface
	Model     *Model
	// Token is the secret of the URL; every request must carry it (as the cookie).
	Token string
	// Hosts are the Host headers accepted (the listen address and its loopback names);
	// empty accepts any, for a non-loopback --address.
	Hosts []string
	// Stats reports the process's memory and watches for /api/stats.
	Stats func() Stats
}

// Handler is the dashboard's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // a constant directory: never fails
	files := http.FileServerFS(static)
	mux.Handle("GET /", files)
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("GET /api/logs", s.logs)
	mux.HandleFunc("GET /api/diff", s.diff)
	mux.HandleFunc("GET /api/stats", s.stats)
	mux.HandleFunc("POST /api/action", s.action)
	return s.guard(mux)
}

// guard checks every request before the mux: the Host (against DNS rebinding), the token,
// and for writes the Origin (no cross-origin request). It sets the security headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "refused: unknown Host "+r.Host+" (open the URL that kubectl stagehand dashboard printed)", http.StatusForbidden)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && s.tokenIs(t) {
			// The token moves from the URL into a cookie that only this origin sends, and
			// the URL loses it (history, screenshots).
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			clean := *r.URL
			q := clean.Query()
			q.Del("token")
			clean.RawQuery = q.Encode()
			http.Redirect(w, r, clean.RequestURI(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(CookieName)
		if err != nil || !s.tokenIs(c.Value) {
			http.Error(w, "refused: missing or wrong token; open the URL that kubectl stagehand dashboard printed", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && !sameOrigin(r) {
			http.Error(w, "refused: a cross-origin request", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenIs(t string) bool {
	return s.Token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) == 1
}

func (s *Server) hostAllowed(host string) bool {
	if len(s.Hosts) == 0 {
		return true
	}
	for _, h := range s.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether a write comes from a page of this server: its Origin is this
// Host, and the browser does not call it cross-site.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// LoopbackHosts are the Host headers that reach a server listening on addr: the address
// itself, and localhost, 127.0.0.1 and [::1] when it is a loopback address.
func LoopbackHosts(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []string{addr}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil
	}
	return []string{addr, "localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}
}
