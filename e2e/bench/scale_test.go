package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestScalePlan(t *testing.T) {
	tests := []struct {
		name        string
		n, per      int
		sizes       []int
		checkpoints []int
	}{
		{name: "the default: 20 namespaces, a checkpoint at 5,000", n: 10000, per: 500,
			sizes:       []int{500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500},
			checkpoints: []int{5000, 10000}},
		{name: "a half below a namespace", n: 600, per: 500, sizes: []int{300, 300}, checkpoints: []int{300, 600}},
		{name: "a half that is not a multiple", n: 1300, per: 500, sizes: []int{500, 150, 500, 150}, checkpoints: []int{650, 1300}},
		{name: "odd: the second half is the bigger", n: 7, per: 500, sizes: []int{3, 4}, checkpoints: []int{3, 7}},
		{name: "one: no half to measure", n: 1, per: 500, sizes: []int{1}, checkpoints: []int{1}},
		{name: "none", n: 0, per: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sizes, checkpoints := scalePlan(tt.n, tt.per)
			assert.Equal(t, tt.sizes, sizes)
			assert.Equal(t, tt.checkpoints, checkpoints)
			// Every checkpoint falls on a namespace boundary, and the sizes add up to n.
			sum, boundaries := 0, map[int]bool{}
			for _, s := range sizes {
				assert.LessOrEqual(t, s, tt.per)
				sum += s
				boundaries[sum] = true
			}
			assert.Equal(t, tt.n, sum)
			for _, c := range checkpoints {
				assert.True(t, boundaries[c], "checkpoint %d is not a namespace boundary", c)
			}
		})
	}
}

func TestPickUnchanged(t *testing.T) {
	var all []types.NamespacedName
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		all = append(all, types.NamespacedName{Namespace: "ns", Name: name})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	taken := map[types.NamespacedName]bool{}
	first := pickUnchanged(rng, all, taken, 3)
	second := pickUnchanged(rng, all, taken, 3)
	assert.Len(t, first, 3)
	assert.Len(t, second, 2, "only two were left")
	for _, p := range second {
		assert.NotContains(t, first, p, "a DC is never picked twice")
	}
	assert.Empty(t, pickUnchanged(rng, all, taken, 1))
}

func TestPointAtLeast(t *testing.T) {
	points := []ScalePoint{{DeploymentConfigs: 5000}, {DeploymentConfigs: 10000}}
	assert.Equal(t, 5000, pointAtLeast(points, 5000).DeploymentConfigs)
	assert.Equal(t, 10000, pointAtLeast(points, 5001).DeploymentConfigs)
	assert.Equal(t, 5000, pointAtLeast(points, 10).DeploymentConfigs, "the fewest DCs that reach the count")
	assert.Nil(t, pointAtLeast(points, 10001))
	assert.Nil(t, pointAtLeast(nil, 1))
}

func TestRestartProgress(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		synced bool
		depth  float64
		adds   float64
	}{
		{name: "before the sync", text: "# HELP workqueue_depth x\nworkqueue_depth{name=\"deploymentconfig\"} 0\nworkqueue_depth{name=\"deployerpod\"} 0\n"},
		{name: "synced, still working", text: "stagehand_rollouts{phase=\"New\"} 0\nworkqueue_depth{name=\"deploymentconfig\"} 812\nworkqueue_depth{name=\"deployerpod\"} 3\n" +
			"workqueue_adds_total{name=\"deploymentconfig\"} 9188\nworkqueue_adds_total{name=\"deployerpod\"} 10000\n",
			synced: true, depth: 815, adds: 9188},
		{name: "drained", text: "stagehand_rollouts{phase=\"New\"} 0\nworkqueue_depth{name=\"deploymentconfig\"} 0\nworkqueue_adds_total{name=\"deploymentconfig\"} 10003\n",
			synced: true, adds: 10003},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synced, depth, adds := restartProgress(tt.text)
			assert.Equal(t, tt.synced, synced)
			assert.Equal(t, tt.depth, depth)
			assert.Equal(t, tt.adds, adds)
		})
	}
}

func TestPhaseCounts(t *testing.T) {
	assert.Equal(t, "none", phaseCounts(nil))
	assert.Equal(t, "9990 Succeeded, 10 Failed", phaseCounts(map[string]int{"Failed": 10, "Succeeded": 9990}))
}
