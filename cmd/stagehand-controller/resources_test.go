package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadConfigDeployerResources(t *testing.T) {
	cfg, _, err := loadConfig(nil)
	require.NoError(t, err)
	res := cfg.DeployerResources
	assert.Equal(t, "10m", res.Requests.Cpu().String(), "small defaults, so that a quota that requires them admits the pod")
	assert.Equal(t, "32Mi", res.Requests.Memory().String())
	assert.Equal(t, "1", res.Limits.Cpu().String())
	assert.Equal(t, "256Mi", res.Limits.Memory().String())

	t.Setenv("STAGEHAND_DEPLOYER_LIMITS", "memory=1Gi")
	cfg, _, err = loadConfig([]string{"--deployer-requests=cpu=50m, memory=64Mi"})
	require.NoError(t, err)
	assert.Equal(t, "cpu=50m,memory=64Mi", cfg.DeployerRequests.String(), "from the flag")
	assert.Equal(t, "memory=1Gi", cfg.DeployerLimits.String(), "from the environment")

	cfg, _, err = loadConfig([]string{"--deployer-requests=", "--deployer-limits="})
	require.NoError(t, err)
	assert.Empty(t, cfg.DeployerResources.Requests, "empty sets none")

	for args, want := range map[string]string{
		"--deployer-requests=cpu":        `"cpu" is not NAME=QUANTITY`,
		"--deployer-requests=cpu=lots":   "cpu=lots",
		"--deployer-requests=memory=2Gi": "--deployer-requests memory=2Gi is above --deployer-limits memory=1Gi",
		"--deployer-limits=memory=-1":    "must not be negative",
	} {
		_, _, err = loadConfig([]string{args})
		assert.ErrorContains(t, err, want, args)
	}
}
