package imagetrigger

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"
)

// RegistryWebhookPath is where the controller takes registry push notifications.
const RegistryWebhookPath = "/hooks/registry"

// maxWebhookBody bounds a notification's body.
const maxWebhookBody = 1 << 20

// poker is the part of images.Watcher that the webhook needs.
type poker interface {
	Poke(ref string) int
}

// RegistryWebhook takes push notifications from a registry and makes the pollers of the
// pushed tags check at once, instead of at their next interval. It only wakes pollers:
// a notification cannot name a digest, start a rollout or reach a tag nobody watches, so
// the worst a forged one can do is cause one check. Requests must carry the shared secret
// as "Authorization: Bearer <secret>".
//
// Two bodies are understood: the notification envelope of the Distribution registry
// ({"events": [{"action": "push", "target": {"repository", "tag"}, "request": {"host"}}]}),
// and a plain list ({"images": ["registry.example.com/team/app:stable"]}) for any other
// sender.
type RegistryWebhook struct {
	secret  []byte
	watcher poker
	log     *logrus.Entry
}

// NewRegistryWebhook returns the handler; secret must not be empty.
func NewRegistryWebhook(secret string, watcher poker, log *logrus.Entry) (*RegistryWebhook, error) {
	if secret == "" {
		return nil, fmt.Errorf("the registry webhook needs a shared secret")
	}
	return &RegistryWebhook{secret: []byte(secret), watcher: watcher, log: log.WithField("component", "registry-webhook")}, nil
}

type webhookBody struct {
	Images []string `json:"images"`
	Events []struct {
		Action string `json:"action"`
		Target struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"target"`
		Request struct {
			Host string `json:"host"`
		} `json:"request"`
	} `json:"events"`
}

// ServeHTTP answers 401 without the secret, 400 for a body it cannot read, and otherwise
// 200 with the number of pollers woken.
func (h *RegistryWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a push notification", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), h.secret) != 1 {
		http.Error(w, "missing or wrong shared secret (Authorization: Bearer ...)", http.StatusUnauthorized)
		return
	}
	var body webhookBody
	if err := json.NewDecoder(io.LimitReader(r.Body, maxWebhookBody)).Decode(&body); err != nil {
		http.Error(w, "the body is not a registry notification: "+err.Error(), http.StatusBadRequest)
		return
	}
	refs := append([]string(nil), body.Images...)
	for _, e := range body.Events {
		if e.Action == "push" && e.Target.Tag != "" && e.Target.Repository != "" && e.Request.Host != "" {
			refs = append(refs, e.Request.Host+"/"+e.Target.Repository+":"+e.Target.Tag)
		}
	}
	woken := 0
	for _, ref := range refs {
		woken += h.watcher.Poke(ref)
	}
	h.log.WithFields(logrus.Fields{"tags": refs, "woken": woken}).Debug("Registry notification")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int{"tags": len(refs), "woken": woken})
}
