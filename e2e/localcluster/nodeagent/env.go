package nodeagent

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// passedEnv are the variables of the agent's own environment that every container gets.
// Nothing else of the agent's environment reaches a container: in particular not KUBECONFIG,
// which would hand the admin's credentials to every pod. GOCOVERDIR lets binaries built with
// -cover write coverage data.
var passedEnv = []string{"PATH", "TMPDIR", "LANG", "TZ", "GOCOVERDIR"}

// envList is an ordered list of variables where setting a name again replaces its value in
// place, as the kubelet's environment building does.
type envList struct {
	names  []string
	values map[string]string
}

func newEnvList() *envList { return &envList{values: map[string]string{}} }

func (e *envList) set(name, value string) {
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *envList) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// environ returns the list as "NAME=value" strings for exec.Cmd.
func (e *envList) environ() []string {
	out := make([]string, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, n+"="+e.values[n])
	}
	return out
}

// baseEnv is the environment every container starts from, before the pod's own variables.
func baseEnv(pod *corev1.Pod, podDir string, extra []string) *envList {
	env := newEnvList()
	for _, name := range passedEnv {
		if v, ok := os.LookupEnv(name); ok {
			env.set(name, v)
		}
	}
	if _, ok := env.lookup("PATH"); !ok {
		env.set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	env.set("HOME", podDir)
	env.set("HOSTNAME", pod.Name)
	for _, kv := range extra {
		if name, value, ok := strings.Cut(kv, "="); ok && name != "" {
			env.set(name, value)
		}
	}
	return env
}

// envResolver reads the Secrets and ConfigMaps that a container's environment refers to.
// It remembers what it read, so one resolution reads each object once.
type envResolver struct {
	client      kubernetes.Interface
	pod         *corev1.Pod
	hostIP      string
	podIP       string
	allocatable corev1.ResourceList
	secrets     map[string]*corev1.Secret
	configMaps  map[string]*corev1.ConfigMap
}

// resolve adds envFrom and env of c to env, in that order, as the kubelet does: envFrom
// values are taken literally, env values expand $(VAR) references to variables defined
// before them. The error says which reference could not be resolved, in the kubelet's
// words.
func (r *envResolver) resolve(ctx context.Context, c *corev1.Container, env *envList) error {
	for _, from := range c.EnvFrom {
		if err := r.addEnvFrom(ctx, from, env); err != nil {
			return err
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.set(v.Name, expandVars(v.Value, env.lookup))
			continue
		}
		value, ok, err := r.valueFrom(ctx, c, v.ValueFrom)
		if err != nil {
			// Unwrapped, as the kubelet reports it: the waiting message of a
			// CreateContainerConfigError is "couldn't find key k in ConfigMap ns/cm".
			return err
		}
		if ok {
			env.set(v.Name, value)
		}
	}
	return nil
}

func (r *envResolver) addEnvFrom(ctx context.Context, from corev1.EnvFromSource, env *envList) error {
	var data map[string]string
	switch {
	case from.ConfigMapRef != nil:
		cm, err := r.configMap(ctx, from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		if err != nil || cm == nil {
			return err
		}
		data = cm.Data
	case from.SecretRef != nil:
		s, err := r.secret(ctx, from.SecretRef.Name, from.SecretRef.Optional)
		if err != nil || s == nil {
			return err
		}
		data = map[string]string{}
		for k, v := range s.Data {
			data[k] = string(v)
		}
	default:
		return nil
	}
	for k, v := range data {
		name := from.Prefix + k
		if name == "" || strings.Contains(name, "=") {
			continue // the kubelet skips keys that are not valid variable names
		}
		env.set(name, v)
	}
	return nil
}

// valueFrom resolves one valueFrom; ok is false for a missing optional key.
func (r *envResolver) valueFrom(ctx context.Context, c *corev1.Container, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := podFieldValue(r.pod, src.FieldRef.FieldPath, r.hostIP, r.podIP)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := r.resourceValue(c, src.ResourceFieldRef)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := r.configMap(ctx, ref.Name, ref.Optional)
		if err != nil || cm == nil {
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if isOptional(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := r.secret(ctx, ref.Name, ref.Optional)
		if err != nil || s == nil {
			return "", false, err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if isOptional(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	}
	return "", false, nil
}

func isOptional(b *bool) bool { return b != nil && *b }

// configMap returns the named ConfigMap, or nil for a missing optional one.
func (r *envResolver) configMap(ctx context.Context, name string, optional *bool) (*corev1.ConfigMap, error) {
	if cm, ok := r.configMaps[name]; ok {
		return cm, nil
	}
	cm, err := r.client.CoreV1().ConfigMaps(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if isOptional(optional) {
			return nil, nil
		}
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("getting configmap %q: %w", name, err)
	}
	if r.configMaps == nil {
		r.configMaps = map[string]*corev1.ConfigMap{}
	}
	r.configMaps[name] = cm
	return cm, nil
}

// secret returns the named Secret, or nil for a missing optional one.
func (r *envResolver) secret(ctx context.Context, name string, optional *bool) (*corev1.Secret, error) {
	if s, ok := r.secrets[name]; ok {
		return s, nil
	}
	s, err := r.client.CoreV1().Secrets(r.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if isOptional(optional) {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("getting secret %q: %w", name, err)
	}
	if r.secrets == nil {
		r.secrets = map[string]*corev1.Secret{}
	}
	r.secrets[name] = s
	return s, nil
}

// podFieldValue resolves a downward-API field path. The pod's IP is the host's IP: every pod
// shares the host's network.
func podFieldValue(pod *corev1.Pod, path, hostIP, podIP string) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses "prefix['key']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// resourceValue resolves a resourceFieldRef. A limit that is not set is the node's
// allocatable amount, as in the kubelet; values are rounded up to whole divisors.
func (r *envResolver) resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		target = findContainer(r.pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	res := corev1.ResourceName(name)
	var q resource.Quantity
	if kind == "limits" {
		if v, ok := target.Resources.Limits[res]; ok {
			q = v
		} else {
			q = r.allocatable[res]
		}
	} else {
		q = target.Resources.Requests[res]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if res == corev1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// expandVars replaces $(NAME) with the value of NAME when lookup knows it, as the kubelet
// does for env values, command and args: "$$" is a literal "$", and a reference to an
// unknown variable is kept as written.
func expandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(list []string, lookup func(string) (string, bool)) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expandVars(s, lookup)
	}
	return out
}
