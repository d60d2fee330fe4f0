package plumbing

import (
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
