package main

import (
	"context"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// BinariesResult is not measured yet: the part runs nothing and the report says so.
type BinariesResult struct{}

func measureBinaries(ctx context.Context, env *framework.Env, o options) (*BinariesResult, error) {
	logf("binaries: not measured yet")
	return nil, nil
}

func (r *BinariesResult) targets() []Target { return nil }

func (r *BinariesResult) markdown(p func(format string, args ...any)) {}
