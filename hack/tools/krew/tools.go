//go:build tools

// Package tools pins krew and its manifest validator, which the release test uses: the
// manifest make release writes must pass krew's own validation and install from its
// archive with no index.
package tools

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
