package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadConfigKubeAPIRateLimit(t *testing.T) {
	cfg, _, err := loadConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, float32(20), cfg.KubeAPIQPS, "not client-go's default of 5")
	assert.Equal(t, 30, cfg.KubeAPIBurst)

	t.Setenv("STAGEHAND_KUBE_API_QPS", "40")
	cfg, _, err = loadConfig([]string{"--kube-api-burst=80"})
	require.NoError(t, err)
	assert.Equal(t, float32(40), cfg.KubeAPIQPS, "from the environment")
	assert.Equal(t, 80, cfg.KubeAPIBurst, "from the flag")

	_, _, err = loadConfig([]string{"--kube-api-qps=0"})
	assert.ErrorContains(t, err, "--kube-api-qps")
}
