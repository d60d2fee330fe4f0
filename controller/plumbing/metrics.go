package plumbing

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's rollout metrics. A nil *Metrics records nothing, for tests.
type Metrics struct {
	started   *prometheus.CounterVec
	completed *prometheus.CounterVec
	failed    *prometheus.CounterVec
	duration  *prometheus.HistogramVec

	execs        *prometheus.CounterVec
	execDuration *prometheus.HistogramVec

	deferRuns     *prometheus.CounterVec
	deferDuration *prometheus.HistogramVec
}

// NewMetrics creates the rollout metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_rollouts_started_total",
			Help: "Revisions created, by strategy type.",
		}, []string{"strategy"}),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_rollouts_completed_total",
			Help: "Revisions that reached Complete, by strategy type.",
		}, []string{"strategy"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_rollouts_failed_total",
			Help: "Revisions that reached Failed, by strategy type and reason (HookFailed, Superseded, DeployerPodGone, ...).",
		}, []string{"strategy", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_rollout_duration_seconds",
			Help:    "Time from a revision's creation to its terminal phase, by strategy type and result (Complete or Failed).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600, 7200, 21600},
		}, []string{"strategy", "result"}),
		execs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_executionhook_executions_total",
			Help: "Attempts of ExecutionHook commands in one container, by result (Succeeded or Failed) and error type (Error, Timeout, PodGone, ...; empty on success).",
		}, []string{"result", "error_type"}),
		execDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_executionhook_execution_duration_seconds",
			Help:    "Duration of one attempt of an ExecutionHook command in one container, by result.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"result"}),
		deferRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_defer_runs_total",
			Help: "DeferPolicy runs for one pod, by when (AfterTermination or BeforeScaleDown) and outcome (Completed, Failed, TimedOut, Skipped).",
		}, []string{"when", "outcome"}),
		deferDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_defer_run_duration_seconds",
			Help:    "Time from a DeferPolicy run's first step to its outcome, by when and outcome; runs whose steps never started are not observed.",
			Buckets: []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"when", "outcome"}),
	}
	reg.MustRegister(m.started, m.completed, m.failed, m.duration, m.execs, m.execDuration, m.deferRuns, m.deferDuration)
	return m
}

// ExecFinished records one attempt of an ExecutionHook command that took d; errorType
// is empty for a success.
func (m *Metrics) ExecFinished(errorType string, d time.Duration) {
	if m == nil {
		return
	}
	result := "Succeeded"
	if errorType != "" {
		result = "Failed"
	}
	m.execs.WithLabelValues(result, errorType).Inc()
	m.execDuration.WithLabelValues(result).Observe(d.Seconds())
}

// DeferFinished records a DeferPolicy run's outcome; started is nil when no step ran.
func (m *Metrics) DeferFinished(when, outcome string, started *time.Time) {
	if m == nil {
		return
	}
	m.deferRuns.WithLabelValues(when, outcome).Inc()
	if started != nil {
		m.deferDuration.WithLabelValues(when, outcome).Observe(time.Since(*started).Seconds())
	}
}

// RolloutStarted records a revision created with the strategy type.
func (m *Metrics) RolloutStarted(strategy string) {
	if m == nil {
		return
	}
	m.started.WithLabelValues(strategy).Inc()
}

// RolloutFinished records a revision that reached a terminal phase after d.
func (m *Metrics) RolloutFinished(strategy, phase, reason string, d time.Duration) {
	if m == nil {
		return
	}
	if phase == "Complete" {
		m.completed.WithLabelValues(strategy).Inc()
	} else {
		m.failed.WithLabelValues(strategy, reason).Inc()
	}
	m.duration.WithLabelValues(strategy, phase).Observe(d.Seconds())
}
