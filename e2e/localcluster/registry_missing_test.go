package localcluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRegistryMissingFailsClearly(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	why := RegistryMissing()
	assert.Contains(t, why, "hack/install-registry.sh")
	_, err := StartRegistry(context.Background(), RegistryOptions{Dir: t.TempDir(), Log: testLog(t)})
	assert.ErrorContains(t, err, "docker-registry is not installed")
}
