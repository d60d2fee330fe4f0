package dcedit

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EnvChange is the KEY=VALUE and KEY- arguments of `set env`, and the references that
// --from adds.
type EnvChange struct {
	Set    []corev1.EnvVar
	Remove []string
}

// ParseEnvArgs reads KEY=VALUE (set; the value may be empty) and KEY- (remove) arguments.
func ParseEnvArgs(args []string) (EnvChange, error) {
	var c EnvChange
	seen := map[string]bool{}
	for _, a := range args {
		var name string
		if key, value, ok := strings.Cut(a, "="); ok {
			name = key
			c.Set = append(c.Set, corev1.EnvVar{Name: key, Value: value})
		} else if key, ok := strings.CutSuffix(a, "-"); ok {
			name = key
			c.Remove = append(c.Remove, key)
		} else {
			return EnvChange{}, fmt.Errorf("%q is neither KEY=VALUE nor KEY-", a)
		}
		if err := checkEnvName(name); err != nil {
			return EnvChange{}, fmt.Errorf("%q: %w", a, err)
		}
		if seen[name] {
			return EnvChange{}, fmt.Errorf("%s is given twice", name)
		}
		seen[name] = true
	}
	return c, nil
}

// checkEnvName follows the API: 1 to 1024 printable ASCII characters other than '='.
func checkEnvName(name string) error {
	if name == "" || len(name) > 1024 {
		return fmt.Errorf("a variable name has 1 to 1024 characters")
	}
	for _, r := range name {
		if r < ' ' || r > '~' {
			return fmt.Errorf("a variable name has only printable ASCII characters")
		}
	}
	return nil
}

// Empty is true when the change does nothing at all.
func (c EnvChange) Empty() bool { return len(c.Set) == 0 && len(c.Remove) == 0 }

// Apply returns env with the change made: a set variable keeps its place when it exists
// (its valueFrom replaced by the value, or the other way round) and is appended
// otherwise; a removed one goes.
func (c EnvChange) Apply(env []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env)+len(c.Set))
	set := map[string]corev1.EnvVar{}
	for _, v := range c.Set {
		set[v.Name] = v
	}
	remove := map[string]bool{}
	for _, n := range c.Remove {
		remove[n] = true
	}
	for _, v := range env {
		if remove[v.Name] {
			continue
		}
		if nv, ok := set[v.Name]; ok {
			v = nv
			delete(set, v.Name)
		}
		out = append(out, v)
	}
	for _, v := range c.Set {
		if _, ok := set[v.Name]; ok {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

var notEnvNameChar = regexp.MustCompile(`[^A-Za-z0-9_]`)

// EnvName turns a ConfigMap or Secret key into a variable name as kubectl set env --from
// does: every character other than a letter, a digit or '_' becomes '_', and the result
// is upper-cased, after the prefix: "db.host" with prefix "APP_" is APP_DB_HOST.
func EnvName(prefix, key string) string {
	return prefix + strings.ToUpper(notEnvNameChar.ReplaceAllString(key, "_"))
}

// FromConfigMap is one variable per key of the ConfigMap (data and binaryData, sorted),
// each a configMapKeyRef.
func FromConfigMap(cm *corev1.ConfigMap, prefix string) []corev1.EnvVar {
	var keys []string
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]corev1.EnvVar, 0, len(keys))
	for _, k := range keys {
		out = append(out, corev1.EnvVar{Name: EnvName(prefix, k), ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Key: k},
		}})
	}
	return out
}

// FromSecret is one variable per key of the Secret (sorted), each a secretKeyRef.
func FromSecret(s *corev1.Secret, prefix string) []corev1.EnvVar {
	keys := make([]string, 0, len(s.Data)+len(s.StringData))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]corev1.EnvVar, 0, len(keys))
	for _, k := range keys {
		out = append(out, corev1.EnvVar{Name: EnvName(prefix, k), ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: k},
		}})
	}
	return out
}

// PrintEnv writes "# header" and then the variables: KEY=VALUE, or for a reference a
// comment that says where the value comes from, as kubectl set env --list does.
func PrintEnv(w io.Writer, header string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	fmt.Fprintf(w, "# %s\n", header)
	for _, f := range envFrom {
		switch {
		case f.ConfigMapRef != nil:
			fmt.Fprintf(w, "# every key of configmap %s%s\n", f.ConfigMapRef.Name, prefixNote(f.Prefix))
		case f.SecretRef != nil:
			fmt.Fprintf(w, "# every key of secret %s%s\n", f.SecretRef.Name, prefixNote(f.Prefix))
		}
	}
	for _, v := range env {
		fmt.Fprintln(w, envLine(v))
	}
}

func prefixNote(p string) string {
	if p == "" {
		return ""
	}
	return ", prefix " + p
}

func envLine(v corev1.EnvVar) string {
	from := v.ValueFrom
	switch {
	case from == nil:
		return v.Name + "=" + v.Value
	case from.ConfigMapKeyRef != nil:
		return fmt.Sprintf("# %s from configmap %s, key %s", v.Name, from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key)
	case from.SecretKeyRef != nil:
		return fmt.Sprintf("# %s from secret %s, key %s", v.Name, from.SecretKeyRef.Name, from.SecretKeyRef.Key)
	case from.FieldRef != nil:
		return fmt.Sprintf("# %s from field path %s", v.Name, from.FieldRef.FieldPath)
	case from.ResourceFieldRef != nil:
		return fmt.Sprintf("# %s from resource %s of container %s", v.Name, from.ResourceFieldRef.Resource, from.ResourceFieldRef.ContainerName)
	}
	return fmt.Sprintf("# %s from a source this plugin does not show", v.Name)
}
