package controller

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The DeploymentConfig controller's side of the ImageChange triggers. The trigger
// controller (trigger_controller.go) resolves the tags and writes the digests into the
// spec; this side decides when that starts a revision and with which cause.

// imageTriggers returns the parameters of the DC's ImageChange triggers.
func imageTriggers(dc *v1alpha1.DeploymentConfig) []*v1alpha1.DeploymentTriggerImageChangeParams {
	var out []*v1alpha1.DeploymentTriggerImageChangeParams
	for i := range dc.Spec.Triggers {
		t := &dc.Spec.Triggers[i]
		if t.Type == v1alpha1.DeploymentTriggerOnImageChange && t.ImageChangeParams != nil {
			out = append(out, t.ImageChangeParams)
		}
	}
	return out
}

// triggerImage is the status entry of a watched tag, or nil.
func triggerImage(dc *v1alpha1.DeploymentConfig, from string) *v1alpha1.TriggerImageStatus {
	for i := range dc.Status.TriggerImages {
		if dc.Status.TriggerImages[i].From == from {
			return &dc.Status.TriggerImages[i]
		}
	}
	return nil
}

// imagesWaiting lists the watched tags that have not resolved once yet: an automatic
// trigger without lastTriggeredImage, or another one without a resolved status entry.
// The first rollout waits for them.
func imagesWaiting(dc *v1alpha1.DeploymentConfig) []string {
	var out []string
	for _, p := range imageTriggers(dc) {
		if p.Automatic {
			if p.LastTriggeredImage == "" {
				out = append(out, p.From.Image)
			}
			continue
		}
		if s := triggerImage(dc, p.From.Image); s == nil || s.Image == "" {
			out = append(out, p.From.Image)
		}
	}
	return out
}

// firedImageTrigger returns the first automatic trigger whose lastTriggeredImage differs
// from the one in the latest revision's snapshot: the trigger controller pinned a new
// digest since that revision. nil when none did.
func firedImageTrigger(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) *v1alpha1.DeploymentTriggerImageChangeParams {
	before := map[string]string{}
	if spec, err := snapshotSpec(latest); err == nil {
		for _, p := range imageTriggers(&v1alpha1.DeploymentConfig{Spec: *spec}) {
			before[p.From.Image] = p.LastTriggeredImage
		}
	}
	for _, p := range imageTriggers(dc) {
		if p.Automatic && p.LastTriggeredImage != "" && p.LastTriggeredImage != before[p.From.Image] {
			return p
		}
	}
	return nil
}

// imageChange is the cause of a revision that an image trigger started.
func imageChange(p *v1alpha1.DeploymentTriggerImageChangeParams) revisionCause {
	return revisionCause{
		Type:      v1alpha1.DeploymentCauseImageChange,
		ImageFrom: p.From.Image,
		ImageTo:   p.LastTriggeredImage,
		Message:   fmt.Sprintf("image change: %s is now %s", p.From.Image, p.LastTriggeredImage),
	}
}

// automaticCause is why a revision that no request asked for starts: the first rollout,
// an image change, or a config change.
func automaticCause(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet, next int64) revisionCause {
	if latest == nil {
		if !hasConfigChangeTrigger(dc) {
			if ts := imageTriggers(dc); len(ts) > 0 && ts[0].LastTriggeredImage != "" {
				return imageChange(ts[0])
			}
		}
		return configChange(next)
	}
	if p := firedImageTrigger(dc, latest); p != nil {
		return imageChange(p)
	}
	return configChange(next)
}

// waitingForImagesMessage explains a first rollout that waits for its image triggers.
func waitingForImagesMessage(waiting []string) string {
	return fmt.Sprintf("the first rollout waits until every ImageChange trigger has resolved once; waiting for %s (see the ImagesResolved condition)",
		strings.Join(waiting, ", "))
}
