package nodeagent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{in: "plain", want: "plain"},
		{in: "$(A)", want: "a"},
		{in: "x-$(A)-$(A)", want: "x-a-a"},
		{in: "$(MISSING)", want: "$(MISSING)"},
		{in: "$(EMPTY)!", want: "!"},
		{in: "$$(A)", want: "$(A)"},
		{in: "$$", want: "$"},
		{in: "$A $", want: "$A $"},
		{in: "$(A", want: "$(A"},
		{in: "$()", want: "$()"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, expandVars(tt.in, lookup))
		})
	}
}

func TestEnvResolve(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "ns", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"note": "hi"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa"},
	}
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"K1": "v1", "bad=key": "x"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "ns"}, Data: map[string][]byte{"password": []byte("s3cret")}},
	)
	optional := true
	c := &corev1.Container{
		Name: "main",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "none"}, Optional: &optional}},
		},
		Env: []corev1.EnvVar{
			{Name: "LITERAL", Value: "x"},
			{Name: "EXPANDED", Value: "$(LITERAL)-$(K1)"},
			{Name: "K1", Value: "override"},
			{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "NOTE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
			{Name: "CMV", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "K1"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "nope", Optional: &optional}}},
			{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100M")}},
	}
	r := &envResolver{client: client, pod: pod, hostIP: "127.0.0.1", podIP: "127.0.0.1", allocatable: nodeAllocatable}
	env := newEnvList()
	require.NoError(t, r.resolve(context.Background(), c, env))
	want := map[string]string{
		"K1": "override", "S_password": "s3cret", "LITERAL": "x", "EXPANDED": "x-v1",
		"NAME": "web-1", "UID": "uid-1", "APP": "web", "NOTE": "hi", "NODE": "node-1", "SA": "sa",
		"POD_IP": "127.0.0.1", "PW": "s3cret", "CMV": "v1", "CPU": "32", "MEM_MI": "96",
	}
	for k, v := range want {
		got, ok := env.lookup(k)
		assert.True(t, ok, k)
		assert.Equal(t, v, got, k)
	}
	for _, k := range []string{"OPT", "bad=key"} {
		_, ok := env.lookup(k)
		assert.False(t, ok, k)
	}
	// K1 keeps its first position although env set it again.
	assert.Equal(t, "K1=override", env.environ()[0])
}

func TestEnvResolveErrors(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "ns"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"present": "1"}})
	// The messages are the kubelet's, word for word: they are the waiting message of a
	// CreateContainerConfigError, which Stagehand copies into a failed hook's message.
	tests := []struct {
		name string
		env  corev1.EnvVar
		from []corev1.EnvFromSource
		want string
	}{
		{name: "missing secret", want: `secret "other" not found`,
			env: corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "k"}}}},
		{name: "missing key", want: "couldn't find key k in Secret ns/sec",
			env: corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "k"}}}},
		{name: "missing configmap key", want: "couldn't find key missing in ConfigMap ns/cfg",
			env: corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "missing"}}}},
		{name: "missing configmap", want: `configmap "other" not found`,
			env: corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "k"}}}},
		{name: "missing secret in envFrom", want: `secret "gone" not found`,
			from: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}}},
		{name: "missing configmap in envFrom", want: `configmap "cm" not found`,
			from: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}},
		{name: "unsupported field", want: `unsupported fieldRef "spec.hostname"`,
			env: corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.hostname"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &corev1.Container{Name: "c", EnvFrom: tt.from}
			if tt.env.Name != "" {
				c.Env = []corev1.EnvVar{tt.env}
			}
			r := &envResolver{client: client, pod: pod}
			err := r.resolve(context.Background(), c, newEnvList())
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestBaseEnvDoesNotLeakAgentEnvironment(t *testing.T) {
	t.Setenv("KUBECONFIG", "/admin.kubeconfig")
	t.Setenv("GOCOVERDIR", "/cover")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	env := baseEnv(pod, "/pods/p", []string{"EXTRA=1", "HOME=/override"})
	_, ok := env.lookup("KUBECONFIG")
	assert.False(t, ok)
	for k, v := range map[string]string{"GOCOVERDIR": "/cover", "EXTRA": "1", "HOME": "/override", "HOSTNAME": "p"} {
		got, _ := env.lookup(k)
		assert.Equal(t, v, got, k)
	}
	_, ok = env.lookup("PATH")
	assert.True(t, ok)
}
