package plumbing

import "sync"

// OwnWrites remembers, per object key, the resourceVersion that the controller's last
// successful write replaced. While the cache still holds exactly that version, it is
// behind the controller's own write: acting on it would either repeat the write (a
// conflict, a wasted request and a back-off) or decide from an old state. A sync that
// finds its object stale this way stops and waits for the watch event of its own write,
// which enqueues the key again; nothing is lost, since a successful write always produces
// that event (or a newer one, or a deletion).
type OwnWrites struct{ m sync.Map }

// Wrote records that a write turned version replaced of key into version written. A
// write that changed nothing (the apiserver returns the same version, and sends no watch
// event) or an empty version (an object that never came from an apiserver, as in the fake
// clientsets) leaves nothing to wait for.
func (w *OwnWrites) Wrote(key, replaced, written string) {
	if replaced == "" || written == replaced {
		w.m.Delete(key)
		return
	}
	w.m.Store(key, replaced)
}

// Stale reports whether cached, the version of key in the cache, is the one the last
// write replaced.
func (w *OwnWrites) Stale(key, cached string) bool {
	if cached == "" {
		return false
	}
	v, ok := w.m.Load(key)
	return ok && v.(string) == cached
}

// Forget drops what is known of key (deleted, or the cache has moved past the write).
func (w *OwnWrites) Forget(key string) { w.m.Delete(key) }
