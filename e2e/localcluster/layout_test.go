package localcluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEnvLinesQuotes(t *testing.T) {
	assert.Equal(t, "export KUBECONFIG=/a/b/kubeconfig\n", EnvLines("/a/b"))
	assert.Equal(t, "export KUBECONFIG='/a b/it'\\''s/kubeconfig'\n", EnvLines("/a b/it's"))
}
