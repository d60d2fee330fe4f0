package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestLoadConfigKubeAPIRateLimit(t *testing.T) {
	cfg, _, err := loadConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, float32(0), cfg.KubeAPIQPS, "0: decided at start from the apiserver (ratelimit.go)")
	assert.Equal(t, 0, cfg.KubeAPIBurst)

	t.Setenv("STAGEHAND_KUBE_API_QPS", "40")
	cfg, _, err = loadConfig([]string{"--kube-api-burst=80"})
	require.NoError(t, err)
	assert.Equal(t, float32(40), cfg.KubeAPIQPS, "from the environment")
	assert.Equal(t, 80, cfg.KubeAPIBurst, "from the flag")

	cfg, _, err = loadConfig([]string{"--kube-api-qps=-1"})
	require.NoError(t, err)
	assert.Equal(t, float32(-1), cfg.KubeAPIQPS, "below 0 turns the limit off")

	_, _, err = loadConfig([]string{"--kube-api-burst=-5"})
	assert.ErrorContains(t, err, "--kube-api-burst")
}

func TestLoadConfigWorkers(t *testing.T) {
	tests := []struct {
		name                string
		env                 map[string]string
		args                []string
		dcs, pods, triggers int
		err                 string
	}{
		{name: "defaults", dcs: 16, pods: 16, triggers: 2},
		{name: "one controller", args: []string{"--deployer-pod-workers=3"}, dcs: 16, pods: 3, triggers: 2},
		{name: "--workers sets every controller", args: []string{"--workers=4"}, dcs: 4, pods: 4, triggers: 4},
		{name: "a controller's own flag wins over --workers", args: []string{"--workers=4", "--dc-workers=16"}, dcs: 16, pods: 4, triggers: 4},
		{name: "a controller's own variable wins over --workers", env: map[string]string{"STAGEHAND_IMAGE_TRIGGER_WORKERS": "1"},
			args: []string{"--workers=4"}, dcs: 4, pods: 4, triggers: 1},
		{name: "STAGEHAND_WORKERS", env: map[string]string{"STAGEHAND_WORKERS": "5"}, dcs: 5, pods: 5, triggers: 5},
		{name: "zero", args: []string{"--dc-workers=0"}, err: "--dc-workers"},
		{name: "negative", args: []string{"--workers=-1"}, err: "--workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, _, err := loadConfig(tt.args)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.dcs, cfg.DCWorkers, "DeploymentConfig workers")
			assert.Equal(t, tt.pods, cfg.DeployerPodWorkers, "deployer-pod workers")
			assert.Equal(t, tt.triggers, cfg.ImageTriggerWorkers, "image-trigger workers")
		})
	}
}

func TestLoadConfigDeferStepResources(t *testing.T) {
	cfg, _, err := loadConfig(nil)
	require.NoError(t, err)
	r := cfg.DeferStepResources
	assert.Equal(t, "10m", r.Requests.Cpu().String())
	assert.Equal(t, "100m", r.Limits.Cpu().String())
	assert.Equal(t, "16Mi", r.Requests.Memory().String())
	assert.Equal(t, "64Mi", r.Limits.Memory().String())

	cfg, _, err = loadConfig([]string{"--defer-step-limits=memory=64Mi", "--defer-step-requests=cpu=10m,memory=32Mi"})
	require.NoError(t, err)
	assert.NotContains(t, cfg.DeferStepResources.Limits, corev1.ResourceCPU, "a resource left out has no default")
	assert.Equal(t, "32Mi", cfg.DeferStepResources.Requests.Memory().String())

	_, _, err = loadConfig([]string{"--defer-step-requests=memory=1Gi"})
	assert.ErrorContains(t, err, "--defer-step-requests memory=1Gi is above --defer-step-limits memory=64Mi")
	_, _, err = loadConfig([]string{"--defer-step-requests=cpu=lots"})
	assert.ErrorContains(t, err, "cpu=lots")
}
