package plumbing

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// LeaderStatus is this replica's part in leader election: the stagehand_leader gauge, and
// what /readyz says. The leader-election callbacks move it; without leader election the
// replica always leads. A nil *LeaderStatus records nothing, for tests.
type LeaderStatus struct {
	gauge prometheus.Gauge

	mu      sync.Mutex
	leading bool
	leader  string        // the identity that holds the Lease, as last observed; "" when unknown
	current func() string // the elector's own record of the holder, once Follow is called
}

// NewLeaderStatus creates the stagehand_leader gauge, at 0 (a standby), and registers it
// with reg.
func NewLeaderStatus(reg prometheus.Registerer) *LeaderStatus {
	l := &LeaderStatus{gauge: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "stagehand_leader",
		Help: "1 while this replica holds the leader Lease and runs the controllers (always 1 without leader election), else 0.",
	})}
	reg.MustRegister(l.gauge)
	return l
}

// Started records that this replica leads and runs the controllers.
func (l *LeaderStatus) Started() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = true
	l.gauge.Set(1)
}

// Stopped records that this replica no longer runs the controllers.
func (l *LeaderStatus) Stopped() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = false
	l.gauge.Set(0)
}

// Observed records identity as the current holder of the Lease.
func (l *LeaderStatus) Observed(identity string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leader = identity
}

// Follow makes the leader's identity come from current from then on: the elector's own
// record of the Lease's holder (client-go's LeaderElector.GetLeader). The elector reports
// each new leader from a goroutine of its own, so two reports close together (a Lease
// released, holder "", then taken by another replica) may arrive out of order and leave a
// standby saying that no leader is known for as long as the leader lasts; the elector's
// record is always the last one it read.
func (l *LeaderStatus) Follow(current func() string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.current = current
}

// Leading reports whether this replica leads, and the identity of the leader last
// observed ("" when none was observed yet).
func (l *LeaderStatus) Leading() (leading bool, leader string) {
	if l == nil {
		return false, ""
	}
	l.mu.Lock()
	leading, leader, current := l.leading, l.leader, l.current
	l.mu.Unlock()
	if current != nil {
		leader = current()
	}
	return leading, leader
}

// Readiness is the body of /readyz with leader election: "ok: leader" on the leader,
// "ok: standby, the leader is <identity>" on a standby. A standby is ready (the
// PodDisruptionBudget and rolling updates count on it): leadership is not readiness.
func (l *LeaderStatus) Readiness() string {
	leading, leader := l.Leading()
	switch {
	case leading:
		return "ok: leader"
	case leader == "":
		return "ok: standby, no leader observed yet"
	}
	return "ok: standby, the leader is " + leader
}
