package openshift

import (
	"fmt"
	"strings"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// strategy converts spec.strategy. Its parameters are converted whatever the type; the
// parameters Stagehand refuses with the type are then dropped with a warning.
func (c *dcConverter) strategy(o object) v1alpha1.DeploymentStrategy {
	var s v1alpha1.DeploymentStrategy
	var typ string
	if c.n.takeInto(o, "type", &typ) {
		switch t := v1alpha1.DeploymentStrategyType(typ); t {
		case v1alpha1.DeploymentStrategyTypeRecreate, v1alpha1.DeploymentStrategyTypeRolling, v1alpha1.DeploymentStrategyTypeCustom:
			s.Type = t
		default:
			c.n.warn(o.at("type"), "%q is not a strategy type (want Recreate, Rolling or Custom); not converted, so Stagehand uses Rolling", typ)
		}
	}
	effective := s.Type
	if effective == "" {
		effective = v1alpha1.DeploymentStrategyTypeRolling
	}
	c.n.takeInto(o, "resources", &s.Resources)
	c.n.takeInto(o, "labels", &s.Labels)
	c.n.takeInto(o, "annotations", &s.Annotations)
	c.n.takeInto(o, "activeDeadlineSeconds", &s.ActiveDeadlineSeconds)
	if p, ok := c.n.takeObject(o, "recreateParams"); ok {
		params := c.recreateParams(p)
		if effective == v1alpha1.DeploymentStrategyTypeRolling {
			c.n.warn(p.path, "dropped: Stagehand refuses recreateParams with type Rolling; move what you need (hooks, timeoutSeconds) to rollingParams")
		} else {
			s.RecreateParams = params
		}
	}
	if p, ok := c.n.takeObject(o, "rollingParams"); ok {
		params := c.rollingParams(p)
		if effective == v1alpha1.DeploymentStrategyTypeRecreate {
			c.n.warn(p.path, "dropped: Stagehand refuses rollingParams with type Recreate; move what you need (hooks, timeoutSeconds) to recreateParams")
		} else {
			s.RollingParams = params
		}
	}
	if p, ok := c.n.takeObject(o, "customParams"); ok {
		s.CustomParams = c.customParams(p, effective)
	}
	c.n.rest(o)
	if s.ActiveDeadlineSeconds != nil {
		typed := s
		typed.Type = effective
		if timeout := v1alpha1.StrategyTimeoutSeconds(&typed); *s.ActiveDeadlineSeconds <= timeout {
			c.n.warn(o.at("activeDeadlineSeconds"), "%d is not above the strategy's timeoutSeconds (%d), so Stagehand will refuse the result; raise it",
				*s.ActiveDeadlineSeconds, timeout)
		}
	}
	if effective == v1alpha1.DeploymentStrategyTypeCustom && (s.CustomParams == nil || s.CustomParams.Image == "") {
		c.n.warn(o.at("customParams.image"), "missing: type Custom runs this image as the deployer, so Stagehand will refuse the result; set it, or use type Rolling or Recreate")
	}
	return s
}

func (c *dcConverter) recreateParams(o object) *v1alpha1.RecreateDeploymentStrategyParams {
	p := &v1alpha1.RecreateDeploymentStrategyParams{}
	c.n.takeInto(o, "timeoutSeconds", &p.TimeoutSeconds)
	p.Pre = c.takeHook(o, "pre")
	p.Mid = c.takeHook(o, "mid")
	p.Post = c.takeHook(o, "post")
	c.n.rest(o)
	return p
}

// openShiftPacing is OpenShift's default updatePeriodSeconds and intervalSeconds. An
// exported DeploymentConfig carries it explicitly, so the converter drops it: Stagehand's
// default is event-driven.
const openShiftPacing = 1

func (c *dcConverter) rollingParams(o object) *v1alpha1.RollingDeploymentStrategyParams {
	p := &v1alpha1.RollingDeploymentStrategyParams{}
	for _, f := range []struct {
		key   string
		field **int64
	}{{"updatePeriodSeconds", &p.UpdatePeriodSeconds}, {"intervalSeconds", &p.IntervalSeconds}} {
		key := f.key
		if c.n.takeInto(o, key, f.field) && *f.field != nil && **f.field == openShiftPacing {
			*f.field = nil
			c.n.note(o.at(key), "1 (OpenShift's default) dropped: it pauses every step of the rollout for 1 s; Stagehand's default is event-driven, "+
				"as the Deployment controller is. Set %s: 1 again to keep OpenShift's pacing", key)
		}
	}
	c.n.takeInto(o, "timeoutSeconds", &p.TimeoutSeconds)
	c.n.takeInto(o, "maxUnavailable", &p.MaxUnavailable)
	c.n.takeInto(o, "maxSurge", &p.MaxSurge)
	if v, ok := o.take("updatePercent"); ok {
		c.n.warn(o.at("updatePercent"), "%v: not converted (deprecated in OpenShift, and Stagehand does not have it); set maxSurge and maxUnavailable instead", v)
	}
	p.Pre = c.takeHook(o, "pre")
	p.Post = c.takeHook(o, "post")
	c.n.rest(o)
	return p
}

// takeHook takes the lifecycle hook key from o; nil when there is none or when nothing of
// it can run on Stagehand.
func (c *dcConverter) takeHook(o object, key string) *v1alpha1.LifecycleHook {
	h, ok := c.n.takeObject(o, key)
	if !ok {
		return nil
	}
	return c.hook(h)
}

func (c *dcConverter) hook(o object) *v1alpha1.LifecycleHook {
	h := &v1alpha1.LifecycleHook{}
	var policy string
	c.n.takeInto(o, "failurePolicy", &policy)
	if e, ok := c.n.takeObject(o, "execNewPod"); ok {
		h.ExecNewPod = c.execNewPod(e)
	}
	_, tagImages := o.take("tagImages")
	c.n.rest(o)
	const noImageStreams = "tagImages tags images into ImageStreams, which Stagehand does not have"
	switch {
	case tagImages && h.ExecNewPod == nil:
		c.n.warn(o.at("tagImages"), "dropped, and the whole hook with it (it had no other action): %s; tag the image in your pipeline, or in an execNewPod hook that runs a registry tool", noImageStreams)
		return nil
	case tagImages:
		c.n.warn(o.at("tagImages"), "dropped: %s; the hook's execNewPod action is kept", noImageStreams)
	case h.ExecNewPod == nil:
		c.n.warn(o.path, "dropped: the hook has no execNewPod action, the only action a Stagehand hook has")
		return nil
	}
	switch p := v1alpha1.LifecycleHookFailurePolicy(policy); p {
	case v1alpha1.LifecycleHookFailurePolicyAbort, v1alpha1.LifecycleHookFailurePolicyIgnore:
		h.FailurePolicy = p
	case v1alpha1.LifecycleHookFailurePolicyRetry:
		h.FailurePolicy = p
		c.n.note(o.at("failurePolicy"), "Retry: OpenShift retries a failing hook forever; Stagehand stops after retry.maxAttempts attempts (default %d, waiting %ds doubling up to %ds between them) and then fails the rollout as Abort does; set %s to change that",
			v1alpha1.DefaultRetryMaxAttempts, v1alpha1.DefaultRetryInitialDelay, v1alpha1.DefaultRetryMaxDelay, o.at("retry"))
	case "":
		c.n.warn(o.at("failurePolicy"), "missing: Stagehand needs Abort, Retry or Ignore, so it will refuse the result")
	default:
		c.n.warn(o.at("failurePolicy"), "%q is not a failure policy (want Abort, Retry or Ignore); not converted, so Stagehand will refuse the result", policy)
	}
	return h
}

func (c *dcConverter) execNewPod(o object) *v1alpha1.ExecNewPodHook {
	e := &v1alpha1.ExecNewPodHook{}
	c.n.takeInto(o, "command", &e.Command)
	if _, ok := o.take("args"); ok {
		c.n.warn(o.at("args"), "%s", execNewPodArgs)
	}
	c.n.takeInto(o, "env", &e.Env)
	c.n.takeInto(o, "containerName", &e.ContainerName)
	c.n.takeInto(o, "volumes", &e.Volumes)
	c.n.rest(o)
	if len(e.Command) == 0 {
		c.n.warn(o.at("command"), "missing: Stagehand needs the hook's command, so it will refuse the result")
	}
	switch {
	case e.ContainerName == "":
		c.n.warn(o.at("containerName"), "missing: Stagehand needs the template container that the hook pod is made from, so it will refuse the result")
	case c.containerIndex(e.ContainerName) < 0:
		c.n.warn(o.at("containerName"), "%q is not a container of spec.template.spec.containers, so Stagehand will refuse the result", e.ContainerName)
	}
	for i, v := range e.Volumes {
		if !c.hasVolume(v) {
			c.n.warn(fmt.Sprintf("%s[%d]", o.at("volumes"), i), "%q is not a volume of spec.template.spec.volumes, so Stagehand will refuse the result", v)
		}
	}
	return e
}

// execNewPodArgs is the warning about execNewPod.args. Stagehand's execNewPod has args;
// OpenShift's has not, so OpenShift never ran them: its apiserver drops the unknown field
// (or refuses the object under strict field validation). Carrying them over would make
// the converted hook run differently from the one that ran on OpenShift.
const execNewPodArgs = "not converted: OpenShift's execNewPod has no args field (its command carries the arguments), " +
	"so OpenShift's apiserver drops it, or refuses the object under strict field validation: on OpenShift the hook never ran with these arguments. " +
	"Stagehand's execNewPod has args, but carrying them over would change what the hook runs; " +
	"if the hook needs them, add them to command (or to execNewPod.args) of the result"

// customParams converts customParams. OpenShift runs customParams.image as the deployer
// whatever the strategy type; Stagehand allows the image only with type Custom, and runs
// customParams.command in its built-in deployer image with Recreate and Rolling.
func (c *dcConverter) customParams(o object, typ v1alpha1.DeploymentStrategyType) *v1alpha1.CustomDeploymentStrategyParams {
	p := &v1alpha1.CustomDeploymentStrategyParams{}
	c.n.takeInto(o, "image", &p.Image)
	c.n.takeInto(o, "command", &p.Command)
	c.n.takeInto(o, "environment", &p.Environment)
	c.n.rest(o)
	if p.Image == "" {
		return p
	}
	field := o.at("image")
	deployer := c.opts.DeployerImage
	if deployer == "" {
		deployer = DefaultDeployerImage
	}
	openshiftDeployer := isOpenShiftDeployer(p.Image)
	switch {
	case typ == v1alpha1.DeploymentStrategyTypeCustom && openshiftDeployer:
		c.n.note(field, "%s is OpenShift's deployer; replaced with Stagehand's, %s, which also answers to the name openshift-deploy (so scripts such as openshift-deploy --until=50%% keep working)",
			p.Image, deployer)
		p.Image = deployer
		if strings.Contains(strings.Join(p.Command, " "), "openshift-deploy") {
			c.n.warn(o.at("command"), "runs openshift-deploy with type Custom, which that deployer refuses, on OpenShift as on Stagehand: it runs only the Recreate and Rolling strategies; set spec.strategy.type to Rolling or Recreate and remove customParams.image, and the command runs in the built-in deployer around that strategy")
		}
	case typ == v1alpha1.DeploymentStrategyTypeCustom:
		c.n.warn(field, "%s is kept as the deployer: a deployer image written for OpenShift works on ReplicationControllers and OpenShift's annotations, while Stagehand gives it ReplicaSets and its own deployer pod contract (docs/deployer-contract.md); check that the image supports Stagehand",
			p.Image)
	case openshiftDeployer:
		c.n.note(field, "%s is OpenShift's deployer; dropped: with type %s, Stagehand runs customParams.command in its own deployer image, which also answers to the name openshift-deploy",
			p.Image, typ)
		p.Image = ""
	default:
		c.n.warn(field, "%s dropped: Stagehand allows customParams.image only with type Custom; with type %s it runs customParams.command in its own deployer image, which has a shell, stagehand-deployer and openshift-deploy but not the tools of %s",
			p.Image, typ, p.Image)
		p.Image = ""
	}
	return p
}

// isOpenShiftDeployer reports whether image is OpenShift's deployer image: its
// repository's last path element is origin-deployer or ose-deployer, in any registry,
// with any tag or digest.
func isOpenShiftDeployer(image string) bool {
	repo, _, _ := strings.Cut(image, "@")
	name := repo[strings.LastIndex(repo, "/")+1:]
	name, _, _ = strings.Cut(name, ":")
	return name == "origin-deployer" || name == "ose-deployer"
}
