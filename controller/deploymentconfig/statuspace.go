package deploymentconfig

import (
	"sync"
	"time"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// DefaultStatusInterval is the least time between two status writes of one DC while its
// latest revision rolls out (see statusPace).
const DefaultStatusInterval = 5 * time.Second

// statusPace spaces the status writes of a DC whose latest revision is rolling out. A
// rollout moves its revision through New, Pending and Running while its pods come up, and
// each step used to be a status write of its own; every such write costs the apiserver
// the DC's CEL validation rules, which it evaluates on /status updates as well. Between
// two writes of one DC at least interval passes, and the write that waits carries the
// newest status (the queue brings the DC back when the interval is over). A status that
// says something final is written at once: a Complete or Failed phase, a Freeze, a new
// latestVersion. So the status lags by at most interval mid-rollout, and never at its end.
//
// It is kept in memory: a restarted controller writes its first status at once.
type statusPace struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	last map[string]time.Time // by DC key: this process's last status write
}

func newStatusPace(interval time.Duration) *statusPace {
	return &statusPace{interval: interval, now: time.Now, last: map[string]time.Time{}}
}

// wait is how long the write of status cur over old must wait; 0: write it now.
func (p *statusPace) wait(key string, old, cur *v1alpha1.DeploymentConfigStatus) time.Duration {
	if p == nil || p.interval <= 0 || final(old, cur) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(p.interval).Sub(p.now()))
}

// wrote records a status write of key.
func (p *statusPace) wrote(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = p.now()
}

// forget drops a deleted DC.
func (p *statusPace) forget(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// final reports whether cur says something that must not wait: the latest revision ended
// (or the DC has none rolling), it froze, or a new revision was numbered.
func final(old, cur *v1alpha1.DeploymentConfigStatus) bool {
	switch cur.Phase {
	case v1alpha1.RevisionPhaseNew, v1alpha1.RevisionPhasePending, v1alpha1.RevisionPhaseRunning:
	default:
		return true
	}
	return cur.Frozen != old.Frozen || cur.LatestVersion != old.LatestVersion
}
