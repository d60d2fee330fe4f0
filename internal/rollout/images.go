package rollout

import (
	"fmt"
	"strings"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// lastSeenWaitingForImages is what Follow reports, on a timeout, about a DeploymentConfig
// whose first rollout waits for its ImageChange triggers.
const lastSeenWaitingForImages = "waiting for image triggers"

// imageWait is one ImageChange trigger that holds back the first rollout.
type imageWait struct {
	From string // the watched tag
	Line string // what rollout status prints about it
}

// imagesWaiting lists the ImageChange triggers that hold back the first rollout of dc
// (DeploymentConfig.ImageTriggersWaiting, the controller's rule), each with a line that
// names the containers, the tag and what the trigger's status says.
func imagesWaiting(dc *v1alpha1.DeploymentConfig) []imageWait {
	var out []imageWait
	for _, p := range dc.ImageTriggersWaiting() {
		st := dc.TriggerImage(p.From.Image)
		why := "the tag has not been checked yet"
		switch {
		case st == nil:
		case st.Error != "":
			why = st.Error
		case st.Image != "": // automatic, resolved, not pinned yet
			why = fmt.Sprintf("resolved to %s; the controller has not pinned it in the template yet", st.Image)
		}
		out = append(out, imageWait{From: p.From.Image, Line: fmt.Sprintf("Waiting for the ImageChange trigger of %s (%s) to resolve an image: %s",
			containersText(p.ContainerNames), p.From.Image, why)})
	}
	return out
}

// containersText is "container app" or "containers app, sidecar".
func containersText(names []string) string {
	if len(names) == 1 {
		return "container " + names[0]
	}
	return "containers " + strings.Join(names, ", ")
}
