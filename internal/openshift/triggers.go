package openshift

import (
	"fmt"
	"strings"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// triggers converts spec.triggers. A list in the input stays a list in the output, even
// when every trigger is dropped: an empty list means manual rollouts only, while a
// missing one would mean [ConfigChange].
func (c *dcConverter) triggers(path string, v any) []v1alpha1.DeploymentTriggerPolicy {
	list, ok := v.([]any)
	if !ok {
		c.n.warn(path, "not converted: want a list, got %s", describeValue(v))
		return nil
	}
	out := []v1alpha1.DeploymentTriggerPolicy{}
	configChange := false
	for i, item := range list {
		at := fmt.Sprintf("%s[%d]", path, i)
		m, ok := item.(map[string]any)
		if !ok {
			c.n.warn(at, "not converted: want an object, got %s", describeValue(item))
			continue
		}
		o := object{path: at, m: m}
		var typ string
		c.n.takeInto(o, "type", &typ)
		switch t := v1alpha1.DeploymentTriggerType(typ); t {
		case v1alpha1.DeploymentTriggerOnConfigChange:
			if configChange {
				c.n.note(at, "dropped: a second ConfigChange trigger, which Stagehand refuses and which would do the same as the first")
				break
			}
			configChange = true
			out = append(out, v1alpha1.DeploymentTriggerPolicy{Type: t})
		case v1alpha1.DeploymentTriggerOnImageChange:
			p, ok := c.n.takeObject(o, "imageChangeParams")
			if !ok {
				c.n.warn(at, "dropped: an ImageChange trigger without imageChangeParams watches nothing")
				break
			}
			if params := c.imageChange(p); params != nil {
				out = append(out, v1alpha1.DeploymentTriggerPolicy{Type: t, ImageChangeParams: params})
			}
		default:
			c.n.warn(o.at("type"), "%q is not a trigger type of Stagehand (ConfigChange, ImageChange); the trigger is dropped", typ)
			clear(o.m)
		}
		c.n.rest(o)
	}
	return out
}

// imageChange converts imageChangeParams; nil when the trigger cannot be watched.
func (c *dcConverter) imageChange(o object) *v1alpha1.DeploymentTriggerImageChangeParams {
	p := &v1alpha1.DeploymentTriggerImageChangeParams{}
	c.n.takeInto(o, "automatic", &p.Automatic)
	c.n.takeInto(o, "containerNames", &p.ContainerNames)
	var last string
	if c.n.takeInto(o, "lastTriggeredImage", &last) && last != "" {
		c.n.note(o.at("lastTriggeredImage"), "dropped: %s is what OpenShift last resolved the trigger to; Stagehand records its own once it has read the tag", last)
	}
	image, watchable := "", false
	if from, ok := c.n.takeObject(o, "from"); ok {
		image, watchable = c.fromImage(from)
	} else {
		c.n.warn(o.at("from"), "missing: the trigger watches nothing and is dropped")
	}
	c.n.rest(o)
	if watchable && len(p.ContainerNames) == 0 {
		c.n.warn(o.at("containerNames"), "missing: Stagehand needs the containers whose image follows the tag, so it will refuse the result")
	}
	for i, name := range p.ContainerNames {
		k := c.containerIndex(name)
		if k < 0 {
			if watchable {
				c.n.warn(fmt.Sprintf("%s[%d]", o.at("containerNames"), i), "%q is not a container of spec.template.spec.containers, so Stagehand will refuse the result", name)
			}
			continue
		}
		c.fillImage(k, image, watchable)
	}
	if !watchable {
		return nil
	}
	p.From.Image = image
	return p
}

// fillImage gives template container k the trigger's image where OpenShift would have
// filled it in: when it is blank, or when it points into OpenShift's internal registry.
func (c *dcConverter) fillImage(k int, image string, watchable bool) {
	if image == "" {
		return
	}
	ct := &c.dc.Spec.Template.Spec.Containers[k]
	field := fmt.Sprintf("spec.template.spec.containers[%d].image", k)
	switch {
	case strings.TrimSpace(ct.Image) == "":
		ct.Image = image
		c.n.note(field, "empty (OpenShift fills it from the ImageChange trigger); set to %s", image)
	case watchable && inOpenShiftRegistry(ct.Image):
		c.n.warn(field, "%s is in OpenShift's internal registry, which other clusters cannot pull from; replaced with the trigger's image %s", ct.Image, image)
		ct.Image = image
	}
}

// fromImage turns imageChangeParams.from into an image reference. watchable is false when
// the reference is a digest, or cannot be converted; the trigger is then dropped, but a
// digest still fills a blank container image.
func (c *dcConverter) fromImage(from object) (image string, watchable bool) {
	var kind, name, namespace string
	c.n.takeInto(from, "kind", &kind)
	c.n.takeInto(from, "name", &name)
	c.n.takeInto(from, "namespace", &namespace)
	c.n.rest(from)
	switch kind {
	case "ImageStreamTag":
		stream, tag, _ := strings.Cut(name, ":")
		if stream == "" {
			c.n.warn(from.at("name"), "%q names no ImageStream; the trigger is dropped", name)
			return "", false
		}
		if tag == "" {
			tag = "latest"
			c.n.note(from.at("name"), "%q has no tag; taken as %s:latest", name, stream)
		}
		image = c.streamRepository(stream, namespace) + ":" + tag
		c.noteRegistry(from, kind+" "+stream+":"+tag, image)
		return image, true
	case "ImageStreamImage":
		stream, digest, _ := strings.Cut(name, "@")
		if stream == "" || digest == "" {
			c.n.warn(from.at("name"), "%q is not an ImageStreamImage (stream@sha256:...); the trigger is dropped", name)
			return "", false
		}
		image = c.streamRepository(stream, namespace) + "@" + digest
		c.n.warn(from.path, "ImageStreamImage %s is a digest, which never moves, so there is nothing to watch: the trigger is dropped", name)
		return image, false
	case "DockerImage":
		switch {
		case name == "":
			c.n.warn(from.at("name"), "missing: the trigger watches nothing and is dropped")
			return "", false
		case strings.Contains(name, "@"):
			c.n.warn(from.at("name"), "%s is a digest reference, which never moves, so there is nothing to watch: the trigger is dropped", name)
			return name, false
		}
		return name, true
	case "":
		c.n.warn(from.at("kind"), "missing (want ImageStreamTag or DockerImage); the trigger is dropped")
	default:
		c.n.warn(from.at("kind"), "%q cannot be watched (Stagehand watches registry tags: ImageStreamTag and DockerImage convert); the trigger is dropped", kind)
	}
	return "", false
}

// streamRepository is the registry repository that stands for an ImageStream:
// <registry>/<namespace>/<stream>, without the namespace when neither the trigger nor
// the DeploymentConfig has one.
func (c *dcConverter) streamRepository(stream, namespace string) string {
	if namespace == "" {
		namespace = c.dc.Namespace
	}
	parts := []string{c.registry()}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	return strings.Join(append(parts, stream), "/")
}

// registry is Options.Registry without a scheme or a trailing slash, or the placeholder.
func (c *dcConverter) registry() string {
	r := strings.TrimPrefix(strings.TrimPrefix(c.opts.Registry, "https://"), "http://")
	r = strings.TrimRight(r, "/")
	if r == "" {
		return placeholderRegistry
	}
	return r
}

// noteRegistry says what became of an ImageStream reference.
func (c *dcConverter) noteRegistry(from object, what, image string) {
	if c.registry() == placeholderRegistry {
		c.n.warn(from.path, "%s became %s: Stagehand watches a tag in a registry, not an ImageStream; replace %s with the registry that holds the image, or convert again with --registry",
			what, image, placeholderRegistry)
		return
	}
	c.n.note(from.path, "%s became %s: Stagehand watches this tag in the registry, not an ImageStream, so whatever moved the ImageStream tag (a build, oc tag) must now push the tag there",
		what, image)
}

// containerIndex is the index of the template container named name, or -1.
func (c *dcConverter) containerIndex(name string) int {
	for i, ct := range c.dc.Spec.Template.Spec.Containers {
		if ct.Name == name {
			return i
		}
	}
	return -1
}
