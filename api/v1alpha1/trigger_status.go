package v1alpha1

// ImageTriggers returns the parameters of the DeploymentConfig's ImageChange triggers, in
// the order of spec.triggers.
func (dc *DeploymentConfig) ImageTriggers() []*DeploymentTriggerImageChangeParams {
	var out []*DeploymentTriggerImageChangeParams
	for i := range dc.Spec.Triggers {
		t := &dc.Spec.Triggers[i]
		if t.Type == DeploymentTriggerOnImageChange && t.ImageChangeParams != nil {
			out = append(out, t.ImageChangeParams)
		}
	}
	return out
}

// TriggerImage is the status.triggerImages entry of the watched tag from, or nil.
func (dc *DeploymentConfig) TriggerImage(from string) *TriggerImageStatus {
	for i := range dc.Status.TriggerImages {
		if dc.Status.TriggerImages[i].From == from {
			return &dc.Status.TriggerImages[i]
		}
	}
	return nil
}

// ImageTriggersWaiting lists the ImageChange triggers that have not resolved their tag
// once yet, in the order of spec.triggers: an automatic trigger until the controller
// pinned a digest in lastTriggeredImage, another one until status.triggerImages records a
// digest for its tag. The first rollout waits for them.
func (dc *DeploymentConfig) ImageTriggersWaiting() []*DeploymentTriggerImageChangeParams {
	var out []*DeploymentTriggerImageChangeParams
	for _, p := range dc.ImageTriggers() {
		if p.Automatic {
			if p.LastTriggeredImage == "" {
				out = append(out, p)
			}
			continue
		}
		if s := dc.TriggerImage(p.From.Image); s == nil || s.Image == "" {
			out = append(out, p)
		}
	}
	return out
}
