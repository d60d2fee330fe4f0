package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestApiserverCPUTarget(t *testing.T) {
	r := &ManyResult{FirstCount: 300,
		FirstCPUByBinary:           map[string]float64{"kube-apiserver": 33.0},
		FirstDeploymentCPUByBinary: map[string]float64{"kube-apiserver": 11.0}}
	got := r.apiserverCPUTarget()
	assert.Equal(t, "missed", got.Status)
	assert.InDelta(t, 3.0, got.Measured, 1e-9)
	assert.Equal(t, "110.0 ms against 36.7 ms", got.Note)

	r.FirstCPUByBinary["kube-apiserver"] = 16.5
	assert.Equal(t, "met", r.apiserverCPUTarget().Status, "1.5× is within the bound")

	assert.Equal(t, "not measured", (&ManyResult{FirstCount: 300}).apiserverCPUTarget().Status)
}
