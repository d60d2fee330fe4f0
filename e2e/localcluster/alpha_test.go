package localcluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAlphaAPIArgsFollowTheVersion(t *testing.T) {
	minor, err := parseMinor("Kubernetes v1.37.2\n")
	require.NoError(t, err)
	assert.Equal(t, 37, minor)
	assert.Equal(t, []string{"--feature-gates=EvictionRequestAPI=true", "--runtime-config=lifecycle.k8s.io/v1alpha1=true"}, alphaAPIArgs(minor))

	minor, err = parseMinor("Kubernetes v1.34.4")
	require.NoError(t, err)
	assert.Empty(t, alphaAPIArgs(minor), "1.34 does not know the gate")

	_, err = parseMinor("etcd Version: 3.6.8")
	assert.Error(t, err)
}
