package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// MaxDerivedNameLength is the longest name Stagehand gives a hook pod. It is the length of
// a DNS label, so the name also fits a label value and a pod's hostname.
const MaxDerivedNameLength = 63

// MaxNameLength is the longest name a DeploymentConfig may have (the CRD's CEL rule at
// creation): the revision name <name>-<N> is a label value of its deployer pod, and 52
// leaves room for "-" and a revision number of ten digits.
const MaxNameLength = 52

// RevisionName is the name of revision n of a DeploymentConfig: its ReplicaSet.
func RevisionName(config string, n int64) string {
	return config + "-" + strconv.FormatInt(n, 10)
}

// ParseRevisionName splits a revision name made by RevisionName into the config's name
// and the revision number. ok is false for a name of another shape. The name alone proves
// nothing: the revision's labels say which config it belongs to.
func ParseRevisionName(name string) (config string, n int64, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], n, true
}

// DeployerPodName is the name of a revision's deployer pod. It is part of the public
// deployer-pod contract and is never shortened: a pod name may be up to 253 characters.
func DeployerPodName(revision string) string {
	return revision + "-deploy"
}

// HookPodName is the name of a hook pod: <revision>-hook-<stage>, with -<attempt> for
// attempts after the first. A name over MaxDerivedNameLength is shortened with a stable
// hash, see ShortenName.
func HookPodName(revision, stage string, attempt int) string {
	name := revision + "-hook-" + stage
	if attempt > 1 {
		name += "-" + strconv.Itoa(attempt)
	}
	return ShortenName(name)
}

// ShortenName returns name unchanged when it fits in MaxDerivedNameLength. Otherwise it
// keeps a prefix and appends "-" and ten hex characters of the SHA-256 of the whole name,
// so the result is stable (the same input always gives the same name) and distinct
// inputs stay distinct in practice.
func ShortenName(name string) string {
	if len(name) <= MaxDerivedNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:10]
	prefix := name[:MaxDerivedNameLength-len(suffix)-1]
	// A name must not end in '-' or '.' before the separator.
	for len(prefix) > 0 && (prefix[len(prefix)-1] == '-' || prefix[len(prefix)-1] == '.') {
		prefix = prefix[:len(prefix)-1]
	}
	return prefix + "-" + suffix
}
