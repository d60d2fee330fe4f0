package localcluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DockerConfigJSON renders the credentials as a .dockerconfigjson document:
// {"auths": {"<address>": {"username": ..., "password": ..., "auth": base64(user:password)}}}.
func (ri RegistryInfo) DockerConfigJSON() ([]byte, error) {
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	auth := base64.StdEncoding.EncodeToString([]byte(ri.Username + ":" + ri.Password))
	doc := map[string]map[string]entry{
		"auths": {ri.Address: {Username: ri.Username, Password: ri.Password, Auth: auth}},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the registry credentials: %w", err)
	}
	return data, nil
}

// PullSecret returns a kubernetes.io/dockerconfigjson Secret with the credentials, ready to
// create and to name in a pod's (or ServiceAccount's) imagePullSecrets.
func (ri RegistryInfo) PullSecret(namespace, name string) (*corev1.Secret, error) {
	data, err := ri.DockerConfigJSON()
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: data},
	}, nil
}
