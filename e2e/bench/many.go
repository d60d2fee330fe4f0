package main

import (
	"context"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// ManyResult is not measured yet: the part runs nothing and the report says so.
type ManyResult struct{}

func measureMany(ctx context.Context, env *framework.Env, o options) (*ManyResult, error) {
	logf("many: not measured yet")
	return nil, nil
}

func (r *ManyResult) targets() []Target { return nil }

func (r *ManyResult) markdown(p func(format string, args ...any)) {}
