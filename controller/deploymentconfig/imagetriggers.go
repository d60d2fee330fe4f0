package deploymentconfig

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// The DeploymentConfig controller's side of the ImageChange triggers. The trigger
// controller (trigger_controller.go) resolves the tags and writes the digests into the
// spec; this side decides when that starts a revision and with which cause.

// imagesWaiting lists the watched tags that have not resolved once yet
// (DeploymentConfig.ImageTriggersWaiting). The first rollout waits for them.
func imagesWaiting(dc *v1alpha1.DeploymentConfig) []string {
	var out []string
	for _, p := range dc.ImageTriggersWaiting() {
		out = append(out, p.From.Image)
	}
	return out
}

// firedImageTrigger returns the first automatic trigger whose lastTriggeredImage differs
// from the one in the latest revision's snapshot: the trigger controller pinned a new
// digest since that revision. nil when none did.
func firedImageTrigger(dc *v1alpha1.DeploymentConfig, latest *appsv1.ReplicaSet) *v1alpha1.DeploymentTriggerImageChangeParams {
	before := map[string]string{}
	if spec, err := revision.Snapshot(latest); err == nil {
		for _, p := range (&v1alpha1.DeploymentConfig{Spec: *spec}).ImageTriggers() {
			before[p.From.Image] = p.LastTriggeredImage
		}
	}
	for _, p := range dc.ImageTriggers() {
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
			if ts := dc.ImageTriggers(); len(ts) > 0 && ts[0].LastTriggeredImage != "" {
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
