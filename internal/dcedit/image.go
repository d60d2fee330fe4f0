package dcedit

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// ImageSet is one CONTAINER=IMAGE argument; the container "*" is every container.
type ImageSet struct {
	Container string
	Image     string
}

func (s ImageSet) String() string { return s.Container + "=" + s.Image }

// ParseImageArgs reads CONTAINER=IMAGE arguments.
func ParseImageArgs(args []string) ([]ImageSet, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("give at least one CONTAINER=IMAGE")
	}
	var out []ImageSet
	seen := map[string]bool{}
	for _, a := range args {
		name, image, ok := strings.Cut(a, "=")
		if !ok || name == "" || image == "" {
			return nil, fmt.Errorf("%q is not CONTAINER=IMAGE", a)
		}
		if strings.ContainsAny(image, " \t\n") {
			return nil, fmt.Errorf("%q: an image reference has no spaces", a)
		}
		if seen[name] {
			return nil, fmt.Errorf("container %q is given twice", name)
		}
		seen[name] = true
		out = append(out, ImageSet{Container: name, Image: image})
	}
	return out, nil
}

// SetImages sets the images of the containers and init containers of spec. It returns the
// containers it set, as CONTAINER=IMAGE, in the order of the arguments. A container that is
// not there is an *UnknownContainerError.
func SetImages(spec *corev1.PodSpec, sets []ImageSet) ([]string, error) {
	var done []string
	for _, s := range sets {
		if s.Container == "*" {
			for _, c := range append(containerPtrs(spec.InitContainers), containerPtrs(spec.Containers)...) {
				c.Image = s.Image
				done = append(done, c.Name+"="+s.Image)
			}
			continue
		}
		c, err := Find(spec, s.Container)
		if err != nil {
			return nil, err
		}
		c.Image = s.Image
		done = append(done, s.String())
	}
	return done, nil
}

func containerPtrs(list []corev1.Container) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(list))
	for i := range list {
		out = append(out, &list[i])
	}
	return out
}

// AutomaticImageTrigger is the automatic ImageChange trigger that writes the image of
// container, or nil.
func AutomaticImageTrigger(dc *v1alpha1.DeploymentConfig, container string) *v1alpha1.DeploymentTriggerImageChangeParams {
	for _, p := range dc.ImageTriggers() {
		if !p.Automatic {
			continue
		}
		for _, n := range p.ContainerNames {
			if n == container {
				return p
			}
		}
	}
	return nil
}
