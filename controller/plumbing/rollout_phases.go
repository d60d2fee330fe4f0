package plumbing

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// RolloutPhases are the non-terminal phases that stagehand_rollouts counts, in order.
var RolloutPhases = []v1alpha1.RevisionPhase{
	v1alpha1.RevisionPhaseNew, v1alpha1.RevisionPhasePending, v1alpha1.RevisionPhaseRunning,
}

// rolloutPhases is the stagehand_rollouts{phase} gauge, computed at each scrape from the
// revisions in the informer cache: no state to keep right across restarts and leader
// changes, and one series per phase whatever the number of DeploymentConfigs.
type rolloutPhases struct {
	desc      *prometheus.Desc
	revisions appslisters.ReplicaSetLister
	synced    func() bool
}

var _ prometheus.Collector = &rolloutPhases{}

// NewRolloutPhases returns the collector of stagehand_rollouts over the revision cache.
// It reports nothing until synced says the caches have synced: a standby, whose informers
// never start, and a new leader still listing report no series rather than wrong counts.
func NewRolloutPhases(revisions appslisters.ReplicaSetLister, synced func() bool) prometheus.Collector {
	return &rolloutPhases{
		desc: prometheus.NewDesc("stagehand_rollouts",
			"Revisions in each non-terminal phase (New, Pending, Running), from the leader's informer cache; absent until its caches have synced.",
			[]string{"phase"}, nil),
		revisions: revisions,
		synced:    synced,
	}
}

func (c *rolloutPhases) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *rolloutPhases) Collect(ch chan<- prometheus.Metric) {
	if !c.synced() {
		return
	}
	all, err := c.revisions.List(labels.Everything())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	counts := map[v1alpha1.RevisionPhase]int{}
	for _, rs := range all {
		if _, ok := revision.Number(rs); ok && revision.OwnerConfig(rs) != "" {
			counts[revision.Phase(rs)]++
		}
	}
	for _, p := range RolloutPhases {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
}
