package dcedit

import (
	"fmt"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Stage is where a lifecycle hook runs: pre, mid, post, or failed (once the revision
// has Failed, before the rollback).
type Stage string

// The stages of a rollout that take a hook.
const (
	Pre    Stage = "pre"
	Mid    Stage = "mid"
	Post   Stage = "post"
	Failed Stage = v1alpha1.FailureHookStage
)

// ParseStage reads pre, mid, post or failed.
func ParseStage(s string) (Stage, error) {
	switch Stage(s) {
	case Pre, Mid, Post, Failed:
		return Stage(s), nil
	}
	return "", fmt.Errorf("%q is not a hook stage: use pre, mid, post or failed", s)
}

// strategyType is the strategy's type, Rolling when it is left out (the API's default).
func strategyType(s *v1alpha1.DeploymentStrategy) v1alpha1.DeploymentStrategyType {
	if s.Type == "" {
		return v1alpha1.DeploymentStrategyTypeRolling
	}
	return s.Type
}

// slot is where the stage's hook lives in the strategy's params: recreateParams for
// Recreate, rollingParams for Rolling. With create, missing params are added.
func slot(s *v1alpha1.DeploymentStrategy, stage Stage, create bool) (**v1alpha1.LifecycleHook, error) {
	switch t := strategyType(s); t {
	case v1alpha1.DeploymentStrategyTypeRecreate:
		if s.RecreateParams == nil {
			if !create {
				return nil, nil
			}
			s.RecreateParams = &v1alpha1.RecreateDeploymentStrategyParams{}
		}
		p := s.RecreateParams
		return map[Stage]**v1alpha1.LifecycleHook{Pre: &p.Pre, Mid: &p.Mid, Post: &p.Post, Failed: &p.Failed}[stage], nil
	case v1alpha1.DeploymentStrategyTypeRolling:
		if stage == Mid {
			return nil, fmt.Errorf("the Rolling strategy has no mid hook (it never has all old pods gone and no new pod started): use --pre or --post, or set spec.strategy.type to Recreate")
		}
		if s.RollingParams == nil {
			if !create {
				return nil, nil
			}
			s.RollingParams = &v1alpha1.RollingDeploymentStrategyParams{}
		}
		p := s.RollingParams
		return map[Stage]**v1alpha1.LifecycleHook{Pre: &p.Pre, Post: &p.Post, Failed: &p.Failed}[stage], nil
	default:
		return nil, fmt.Errorf("the %s strategy has no lifecycle hooks: its own deployer image runs the rollout", t)
	}
}

// Hook is the strategy's hook at stage, or nil when there is none.
func Hook(s *v1alpha1.DeploymentStrategy, stage Stage) (*v1alpha1.LifecycleHook, error) {
	p, err := slot(s, stage, false)
	if err != nil || p == nil {
		return nil, err
	}
	return *p, nil
}

// SetHook puts h as the strategy's hook at stage; nil removes it.
func SetHook(s *v1alpha1.DeploymentStrategy, stage Stage, h *v1alpha1.LifecycleHook) error {
	p, err := slot(s, stage, h != nil)
	if err != nil || p == nil {
		return err
	}
	*p = h
	return nil
}

// NoHookError says that the strategy has no hook at a stage.
type NoHookError struct {
	Stage    Stage
	Strategy v1alpha1.DeploymentStrategyType
}

func (e *NoHookError) Error() string {
	return fmt.Sprintf("the %s strategy has no %s hook: add one with kubectl stagehand set deployment-hook --%s", e.Strategy, e.Stage, e.Stage)
}

// ExecNewPodHook is the execNewPod action of the hook at stage, which set env edits.
func ExecNewPodHook(s *v1alpha1.DeploymentStrategy, stage Stage) (*v1alpha1.ExecNewPodHook, error) {
	h, err := Hook(s, stage)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, &NoHookError{Stage: stage, Strategy: strategyType(s)}
	}
	if h.ExecNewPod == nil {
		return nil, fmt.Errorf("the %s hook is an exec hook, which runs in the revision's pods with their environment: it has no environment of its own", stage)
	}
	return h.ExecNewPod, nil
}
