package openshift

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// serverSetMetadata are the metadata fields that a cluster sets. They mean nothing on
// another cluster and are dropped.
var serverSetMetadata = []string{
	"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink",
	"ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// lastAppliedAnnotation is written by kubectl apply (and oc apply); it holds the OpenShift
// object and would confuse the next kubectl apply of the converted one.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// ignoreDeployerPodAnnotation, on an OpenShift DeploymentConfig, is copied onto each new
// deployment, for which OpenShift's deployer controller then creates no deployer pod: the
// deployment stays New until whoever set the annotation runs it (OpenShift's own tests
// do). Stagehand has no such switch. The converter drops the annotation, so that the
// result does not suggest a behaviour it will not have, and says what happens instead.
const ignoreDeployerPodAnnotation = "deploy.openshift.io/deployer-pod.ignore"

// ignoreDeployerPodDropped is the warning about ignoreDeployerPodAnnotation; it describes
// the controller's deployer pods (docs/controller.md).
const ignoreDeployerPodDropped = "dropped: on OpenShift it stops the controller from creating deployer pods, so a new deployment stays New " +
	"until whoever set it runs the rollout; Stagehand has no such switch and would ignore it. " +
	"Stagehand's controller creates exactly one deployer pod for every revision (<name>-<N>-deploy, owned by the revision), " +
	"which runs the strategy and the hooks: this DeploymentConfig rolls out on its own once applied. " +
	"A deployer pod that finished is kept, with its log, until its revision is pruned; " +
	"the deployer pod of a cancelled, superseded or retried revision is deleted. " +
	"If you want no rollout yet, set spec.paused: true before applying"

// dcConverter converts one DeploymentConfig. The template is converted first: the checks
// of hooks and triggers look at its containers and volumes.
type dcConverter struct {
	opts Options
	n    *notes
	dc   *v1alpha1.DeploymentConfig
}

// convertDeploymentConfig converts obj, an OpenShift DeploymentConfig, adding its notes to n.
func convertDeploymentConfig(obj map[string]any, opts Options, n *notes) *v1alpha1.DeploymentConfig {
	c := &dcConverter{opts: opts, n: n, dc: &v1alpha1.DeploymentConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "DeploymentConfig"},
	}}
	root := object{m: obj}
	root.take("apiVersion")
	root.take("kind")
	if meta, ok := n.takeObject(root, "metadata"); ok {
		c.metadata(meta)
	} else {
		n.warn("metadata.name", "missing: set a name before applying")
	}
	if _, ok := root.take("status"); ok {
		n.note("status", "dropped: the Stagehand controller computes the status of the new object")
	}
	if spec, ok := n.takeObject(root, "spec"); ok {
		c.spec(spec)
	} else {
		n.warn("spec", "missing: Stagehand needs at least spec.template, so the result will be refused")
	}
	n.rest(root)
	return c.dc
}

func (c *dcConverter) metadata(o object) {
	m := &c.dc.ObjectMeta
	c.n.takeInto(o, "name", &m.Name)
	c.n.takeInto(o, "namespace", &m.Namespace)
	c.n.takeInto(o, "labels", &m.Labels)
	c.n.takeInto(o, "annotations", &m.Annotations)
	var dropped []string
	for _, key := range serverSetMetadata {
		if _, ok := o.m[key]; ok {
			delete(o.m, key)
			dropped = append(dropped, o.at(key))
		}
	}
	if _, ok := m.Annotations[lastAppliedAnnotation]; ok {
		delete(m.Annotations, lastAppliedAnnotation)
		if len(m.Annotations) == 0 {
			m.Annotations = nil
		}
		dropped = append(dropped, "metadata.annotations["+lastAppliedAnnotation+"]")
	}
	if len(dropped) > 0 {
		c.n.note("metadata", "dropped what the OpenShift cluster set: %s", strings.Join(dropped, ", "))
	}
	if _, ok := m.Annotations[ignoreDeployerPodAnnotation]; ok {
		delete(m.Annotations, ignoreDeployerPodAnnotation)
		if len(m.Annotations) == 0 {
			m.Annotations = nil
		}
		c.n.warn("metadata.annotations["+ignoreDeployerPodAnnotation+"]", "%s", ignoreDeployerPodDropped)
	}
	c.n.restWith(o, "not converted: only the name, namespace, labels and annotations of metadata carry over")
	switch {
	case m.Name == "":
		c.n.warn("metadata.name", "missing: set a name before applying")
	case len(m.Name) > v1alpha1.MaxNameLength:
		c.n.warn("metadata.name", "longer than %d characters, which Stagehand refuses (<name>-<N> is a label value of every revision's deployer pod): shorten it",
			v1alpha1.MaxNameLength)
	}
}

func (c *dcConverter) spec(o object) {
	s := &c.dc.Spec
	c.n.takeInto(o, "replicas", &s.Replicas)
	c.n.takeInto(o, "minReadySeconds", &s.MinReadySeconds)
	c.n.takeInto(o, "revisionHistoryLimit", &s.RevisionHistoryLimit)
	c.n.takeInto(o, "paused", &s.Paused)
	c.n.takeInto(o, "test", &s.Test)
	if t, ok := c.n.takeObject(o, "template"); ok {
		c.n.decode(t.path, t.m, &s.Template)
	} else {
		c.n.warn("spec.template", "missing: Stagehand needs a pod template, so the result will be refused")
	}
	c.selector(o)
	if st, ok := c.n.takeObject(o, "strategy"); ok {
		s.Strategy = c.strategy(st)
	}
	if v, ok := o.take("triggers"); ok {
		s.Triggers = c.triggers(o.at("triggers"), v)
	}
	c.n.rest(o)
	c.checkTemplate()
}

// selector turns OpenShift's map selector into matchLabels.
func (c *dcConverter) selector(o object) {
	var labels map[string]string
	if !c.n.takeInto(o, "selector", &labels) {
		return
	}
	if len(labels) == 0 {
		c.n.note("spec.selector", "empty; left out, so Stagehand selects the template's labels")
		return
	}
	c.dc.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	template := c.dc.Spec.Template.Labels
	if len(template) == 0 {
		return // checkTemplate warns about the missing labels
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := template[k]; !ok || v != labels[k] {
			c.n.warn("spec.selector", "%s=%s is not a label of spec.template.metadata.labels: Stagehand refuses a selector that misses the template's own pods; add the label to the template or remove it from the selector",
				k, labels[k])
		}
	}
}

// checkTemplate warns about what Stagehand will refuse or cannot run in the template.
func (c *dcConverter) checkTemplate() {
	t := &c.dc.Spec.Template
	if len(t.Labels) == 0 {
		c.n.warn("spec.template.metadata.labels", "missing: Stagehand needs labels on the template (they select the pods), so the result will be refused; add some, such as app: %s",
			c.dc.Name)
	}
	check := func(kind string, containers []corev1.Container) {
		for i, ct := range containers {
			if inOpenShiftRegistry(ct.Image) {
				c.n.warn(fmt.Sprintf("spec.template.spec.%s[%d].image", kind, i),
					"%s is in OpenShift's internal registry, which other clusters cannot pull from: push the image to a registry this cluster can reach and change the image", ct.Image)
			}
		}
	}
	check("initContainers", t.Spec.InitContainers)
	check("containers", t.Spec.Containers)
}

// inOpenShiftRegistry reports whether image lives in the internal registry of an OpenShift
// cluster (image-registry.openshift-image-registry.svc:5000 on OpenShift 4,
// docker-registry.default.svc:5000 on OpenShift 3).
func inOpenShiftRegistry(image string) bool {
	host, _, ok := strings.Cut(image, "/")
	if !ok {
		return false
	}
	return strings.Contains(host, "openshift-image-registry") || strings.HasPrefix(host, "docker-registry.default.svc")
}

// hasVolume reports whether the template has a volume named name.
func (c *dcConverter) hasVolume(name string) bool {
	for _, v := range c.dc.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}
