package plumbing

import (
	"context"
	"fmt"
	"strings"
)

// KindKey is the queue key "<kind>/<namespace>/<name>" of a controller whose queue holds
// objects of several kinds.
func KindKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// SplitKindKey reads a KindKey; a malformed key is Fatal.
func SplitKindKey(key string) (kind, namespace, name string, err error) {
	kind, rest, _ := strings.Cut(key, "/")
	namespace, name, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", "", Fatal(fmt.Errorf("malformed key %q", key))
	}
	return kind, namespace, name, nil
}

// KindSync syncs one object of a kind, by namespace and name.
type KindSync func(ctx context.Context, namespace, name string) error

// DispatchKindKey hands a KindKey to the sync of its kind; a malformed key, or one of a
// kind without a sync, is Fatal.
func DispatchKindKey(ctx context.Context, key string, syncs map[string]KindSync) error {
	kind, ns, name, err := SplitKindKey(key)
	if err != nil {
		return err
	}
	sync, ok := syncs[kind]
	if !ok {
		return Fatal(fmt.Errorf("unknown key kind in %q", key))
	}
	return sync(ctx, ns, name)
}
