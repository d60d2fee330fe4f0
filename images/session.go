package images

import (
	"reflect"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// sessionIdle is how long an unused session is kept.
const sessionIdle = time.Hour

// sessions caches a remote.Puller per keychain and repository. A Puller remembers what
// the registry answered to the version check and the bearer token, so that a check costs
// one request instead of two or three. A session is dropped when a check through it
// fails, and when it has not been used for idle.
type sessions struct {
	idle time.Duration

	mu        sync.Mutex
	byKey     map[sessionKey]*session
	lastSweep time.Time
}

// sessionKey identifies a session. The keychain is compared by identity: the watcher
// hands the same keychain to every check of a poller.
type sessionKey struct {
	keychain   authn.Keychain // nil means anonymous
	repository string
}

type session struct {
	puller *remote.Puller
	used   time.Time
}

// get returns the session of key, creating it with opts. A keychain that is not a
// pointer cannot be compared safely, so it gets a new, uncached session every time.
func (s *sessions) get(key sessionKey, opts []remote.Option) (*remote.Puller, error) {
	if key.keychain != nil && reflect.ValueOf(key.keychain).Kind() != reflect.Pointer {
		return remote.NewPuller(opts...)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastSweep) > s.idle/4 {
		for k, e := range s.byKey {
			if now.Sub(e.used) > s.idle {
				delete(s.byKey, k)
			}
		}
		s.lastSweep = now
	}
	if e, ok := s.byKey[key]; ok {
		e.used = now
		return e.puller, nil
	}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	s.byKey[key] = &session{puller: p, used: now}
	return p, nil
}

// forget drops the session of key, if it is still p.
func (s *sessions) forget(key sessionKey, p *remote.Puller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byKey[key]; ok && e.puller == p {
		delete(s.byKey, key)
	}
}
