package main

import (
	"context"

	"github.com/stagehand-dev/stagehand/e2e/framework"
)

// ReactionResult is not measured yet: the part runs nothing and the report says so.
type ReactionResult struct{}

func measureReaction(ctx context.Context, env *framework.Env, o options) (*ReactionResult, error) {
	logf("reaction: not measured yet")
	return nil, nil
}

func (r *ReactionResult) targets() []Target { return nil }

func (r *ReactionResult) markdown(p func(format string, args ...any)) {}
