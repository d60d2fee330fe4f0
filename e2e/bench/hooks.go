package main

import (
	"context"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// HooksResult is not measured yet: the part runs nothing and the report says so.
type HooksResult struct{}

func measureHooks(ctx context.Context, env *framework.Env, o options) (*HooksResult, error) {
	logf("hooks: not measured yet")
	return nil, nil
}

func (r *HooksResult) targets() []Target { return nil }

func (r *HooksResult) markdown(p func(format string, args ...any)) {}
