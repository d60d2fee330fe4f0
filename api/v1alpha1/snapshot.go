package v1alpha1

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// RevisionSnapshot decodes the spec a revision ran, from its config-snapshot annotation.
func RevisionSnapshot(rs *appsv1.ReplicaSet) (*DeploymentConfigSpec, error) {
	raw, ok := rs.Annotations[ConfigSnapshotAnnotation]
	if !ok {
		return nil, fmt.Errorf("revision %s has no %s annotation, so its spec is unknown", rs.Name, ConfigSnapshotAnnotation)
	}
	spec := &DeploymentConfigSpec{}
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		return nil, fmt.Errorf("decoding the config snapshot of revision %s: %w", rs.Name, err)
	}
	return spec, nil
}
