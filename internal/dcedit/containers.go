// Package dcedit holds the edits that `kubectl stagehand set` makes to a DeploymentConfig:
// pure functions on its spec, without a client, so that each edit is tested on its own.
package dcedit

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// UnknownContainerError names a container the pod template does not have, and the ones it has.
type UnknownContainerError struct {
	Name      string
	Available string
}

func (e *UnknownContainerError) Error() string {
	return fmt.Sprintf("the pod template has no container %q; its containers: %s", e.Name, e.Available)
}

// Select returns the init containers and then the containers of spec whose name matches
// pattern, a glob as in path.Match ("*" for every container), as kubectl's -c does.
func Select(spec *corev1.PodSpec, pattern string) ([]*corev1.Container, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("container pattern %q: %w", pattern, err)
	}
	var out []*corev1.Container
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if ok, _ := path.Match(pattern, list[i].Name); ok {
				out = append(out, &list[i])
			}
		}
	}
	if len(out) == 0 {
		return nil, &UnknownContainerError{Name: pattern, Available: Describe(spec)}
	}
	return out, nil
}

// Find returns the container or init container named name.
func Find(spec *corev1.PodSpec, name string) (*corev1.Container, error) {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], nil
			}
		}
	}
	return nil, &UnknownContainerError{Name: name, Available: Describe(spec)}
}

// Names are the names of the containers, and then of the init containers.
func Names(spec *corev1.PodSpec) []string {
	var out []string
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range list {
			out = append(out, c.Name)
		}
	}
	return out
}

// Describe lists the containers for an error message: "app, sidecar (init: migrate)".
func Describe(spec *corev1.PodSpec) string {
	var names, inits []string
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range spec.InitContainers {
		inits = append(inits, c.Name)
	}
	s := strings.Join(names, ", ")
	if s == "" {
		s = "none"
	}
	if len(inits) > 0 {
		s += " (init: " + strings.Join(inits, ", ") + ")"
	}
	return s
}
