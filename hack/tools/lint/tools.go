//go:build tools

// Package lint pins golangci-lint, which hack/verify.sh builds into bin/tools.
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
