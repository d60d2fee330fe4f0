package dcedit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// TriggerEdit is what `set triggers` asks for, as `oc set triggers` does. FromConfig and
// FromImage select triggers; with neither, Manual and Auto apply to every trigger.
type TriggerEdit struct {
	FromConfig bool
	FromImage  string
	Containers []string
	Manual     bool
	Auto       bool
	Remove     bool
	RemoveAll  bool
}

// Validate checks the flags against each other.
func (e TriggerEdit) Validate() error {
	switch {
	case e.Manual && e.Auto:
		return fmt.Errorf("--manual and --auto exclude each other")
	case e.RemoveAll && (e.Remove || e.FromConfig || e.FromImage != "" || e.Manual || e.Auto):
		return fmt.Errorf("--remove-all takes no other trigger flag")
	case e.Remove && (e.Manual || e.Auto):
		return fmt.Errorf("--remove takes --from-config or --from-image, not --manual or --auto")
	case e.Remove && !e.FromConfig && e.FromImage == "":
		return fmt.Errorf("--remove needs --from-config or --from-image (or use --remove-all)")
	case len(e.Containers) > 0 && e.FromImage == "":
		return fmt.Errorf("--containers goes with --from-image")
	case strings.Contains(e.FromImage, "@"):
		return fmt.Errorf("--from-image %s is a digest: an ImageChange trigger watches a tag (REPO:TAG), and a digest never moves", e.FromImage)
	}
	return nil
}

// Changes is true when the edit changes anything; without a change flag, `set triggers` lists.
func (e TriggerEdit) Changes() bool {
	return e.FromConfig || e.FromImage != "" || e.Manual || e.Auto || e.Remove || e.RemoveAll
}

// Apply makes the edit on dc's triggers. A ConfigChange trigger has no automatic flag:
// "manual" for config changes means that the trigger is removed, and "auto" adds it back.
func (e TriggerEdit) Apply(dc *v1alpha1.DeploymentConfig) error {
	if e.RemoveAll {
		// An empty list, not nil: a nil list is null in JSON, and the API defaults a
		// missing list to [ConfigChange].
		dc.Spec.Triggers = []v1alpha1.DeploymentTriggerPolicy{}
		return nil
	}
	all := !e.FromConfig && e.FromImage == ""
	if e.FromConfig || (all && (e.Manual || e.Auto)) {
		setConfigChange(dc, !e.Remove && !e.Manual)
	}
	if all {
		for _, p := range dc.ImageTriggers() {
			p.Automatic = e.Auto
		}
		return nil
	}
	if e.FromImage == "" {
		return nil
	}
	i := imageTriggerIndex(dc, e.FromImage)
	if e.Remove {
		if i >= 0 {
			dc.Spec.Triggers = slices.Delete(slices.Clone(dc.Spec.Triggers), i, i+1)
		}
		return nil
	}
	if i < 0 && len(e.Containers) == 0 {
		return fmt.Errorf("there is no ImageChange trigger on %s yet: name its containers with -c", e.FromImage)
	}
	for _, c := range e.Containers {
		if slices.Contains(initNames(dc), c) {
			return fmt.Errorf("%s is an init container: an ImageChange trigger updates containers only", c)
		}
		if !slices.Contains(Names(&dc.Spec.Template.Spec), c) {
			return &UnknownContainerError{Name: c, Available: Describe(&dc.Spec.Template.Spec)}
		}
		if j := containerTrigger(dc, c); j >= 0 && j != i {
			return fmt.Errorf("container %s already follows %s: remove that trigger first (--remove --from-image=%s)",
				c, dc.Spec.Triggers[j].ImageChangeParams.From.Image, dc.Spec.Triggers[j].ImageChangeParams.From.Image)
		}
	}
	if i < 0 {
		dc.Spec.Triggers = append(dc.Spec.Triggers, v1alpha1.DeploymentTriggerPolicy{
			Type:              v1alpha1.DeploymentTriggerOnImageChange,
			ImageChangeParams: &v1alpha1.DeploymentTriggerImageChangeParams{From: v1alpha1.ImageReference{Image: e.FromImage}},
		})
		i = len(dc.Spec.Triggers) - 1
	}
	p := dc.Spec.Triggers[i].ImageChangeParams
	if len(e.Containers) > 0 {
		p.ContainerNames = slices.Clone(e.Containers)
	}
	p.Automatic = !e.Manual
	return nil
}

func initNames(dc *v1alpha1.DeploymentConfig) []string {
	var out []string
	for _, c := range dc.Spec.Template.Spec.InitContainers {
		out = append(out, c.Name)
	}
	return out
}

// setConfigChange adds the ConfigChange trigger (first) or removes it.
func setConfigChange(dc *v1alpha1.DeploymentConfig, on bool) {
	has := slices.IndexFunc(dc.Spec.Triggers, func(t v1alpha1.DeploymentTriggerPolicy) bool {
		return t.Type == v1alpha1.DeploymentTriggerOnConfigChange
	})
	switch {
	case on && has < 0:
		dc.Spec.Triggers = append([]v1alpha1.DeploymentTriggerPolicy{{Type: v1alpha1.DeploymentTriggerOnConfigChange}}, dc.Spec.Triggers...)
	case !on && has >= 0:
		dc.Spec.Triggers = slices.Delete(slices.Clone(dc.Spec.Triggers), has, has+1)
	}
}

func imageTriggerIndex(dc *v1alpha1.DeploymentConfig, from string) int {
	return slices.IndexFunc(dc.Spec.Triggers, func(t v1alpha1.DeploymentTriggerPolicy) bool {
		return t.ImageChangeParams != nil && t.ImageChangeParams.From.Image == from
	})
}

func containerTrigger(dc *v1alpha1.DeploymentConfig, container string) int {
	return slices.IndexFunc(dc.Spec.Triggers, func(t v1alpha1.DeploymentTriggerPolicy) bool {
		return t.ImageChangeParams != nil && slices.Contains(t.ImageChangeParams.ContainerNames, container)
	})
}

// TriggerRow is one line of the trigger list: TYPE is config or image, VALUE the watched
// tag with its containers, AUTO whether it starts rollouts by itself.
type TriggerRow struct {
	Type  string `json:"type"`
	Value string `json:"value"`
	Auto  bool   `json:"auto"`
}

// Rows lists the triggers as `oc set triggers` does: a config row always (AUTO false when
// there is no ConfigChange trigger: template changes roll out only by hand), and one row
// per ImageChange trigger.
func Rows(dc *v1alpha1.DeploymentConfig) []TriggerRow {
	config := slices.ContainsFunc(dc.Spec.Triggers, func(t v1alpha1.DeploymentTriggerPolicy) bool {
		return t.Type == v1alpha1.DeploymentTriggerOnConfigChange
	})
	rows := []TriggerRow{{Type: "config", Auto: config}}
	for _, p := range dc.ImageTriggers() {
		rows = append(rows, TriggerRow{Type: "image", Value: fmt.Sprintf("%s (%s)", p.From.Image, strings.Join(p.ContainerNames, ", ")), Auto: p.Automatic})
	}
	return rows
}
