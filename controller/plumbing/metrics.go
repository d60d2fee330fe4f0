package plumbing

import (
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
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

	hooks        *prometheus.CounterVec
	hookDuration *prometheus.HistogramVec

	notifications *prometheus.CounterVec
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
		hooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_hooks_total",
			Help: "Lifecycle hooks that finished, by stage (pre, mid, post, step, failed, other) and result (Succeeded, Failed, Ignored, TimedOut, Unknown).",
		}, []string{"stage", "result"}),
		hookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stagehand_hook_duration_seconds",
			Help:    "Time from a lifecycle hook's first attempt to its end, retries included, by stage and result.",
			Buckets: []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"stage", "result"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stagehand_notifications_total",
			Help: "Attempts of RolloutNotifier deliveries, by result: delivered (a 2xx answer), retried (no 2xx yet) and failed (given up at the deadline, or unsendable).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.started, m.completed, m.failed, m.duration, m.execs, m.execDuration, m.deferRuns, m.deferDuration,
		m.hooks, m.hookDuration, m.notifications)
	return m
}

// HookFinished records a lifecycle hook that ended with result after seconds; a negative
// seconds (unknown) counts the hook without observing a duration. stage and result are
// bounded here (HookStage, HookResult): they may come from a custom image's termination
// message.
func (m *Metrics) HookFinished(stage, result string, seconds float64) {
	if m == nil {
		return
	}
	stage, result = HookStage(stage), HookResult(result)
	m.hooks.WithLabelValues(stage, result).Inc()
	if seconds >= 0 && !math.IsInf(seconds, 0) {
		m.hookDuration.WithLabelValues(stage, result).Observe(seconds)
	}
}

// HookStages are the values of the stage label of the hook metrics.
var HookStages = []string{"pre", "mid", "post", "step", v1alpha1.FailureHookStage, "other"}

// HookStage is the stage label of a hook at stage: pre, mid, post and failed as they are,
// step for every step-N, other for a custom flow's own stage names.
func HookStage(stage string) string {
	switch {
	case stage == "pre", stage == "mid", stage == "post", stage == v1alpha1.FailureHookStage:
		return stage
	case isStepStage(stage):
		return "step"
	}
	return "other"
}

// isStepStage reports whether stage is step-N (v1alpha1.StepStage).
func isStepStage(stage string) bool {
	n, ok := strings.CutPrefix(stage, "step-")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// HookResults are the values of the result label of the hook metrics.
var HookResults = []string{
	string(v1alpha1.HookResultSucceeded), string(v1alpha1.HookResultFailed),
	string(v1alpha1.HookResultIgnored), string(v1alpha1.HookResultTimedOut), string(v1alpha1.HookResultNotRun), "Unknown",
}

// HookResult is the result label of a hook result: one of the v1alpha1.HookResult values,
// else Unknown.
func HookResult(result string) string {
	switch v1alpha1.HookResult(result) {
	case v1alpha1.HookResultSucceeded, v1alpha1.HookResultFailed, v1alpha1.HookResultIgnored, v1alpha1.HookResultTimedOut,
		v1alpha1.HookResultNotRun:
		return result
	}
	return "Unknown"
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

// NotificationFinished records one attempt of a RolloutNotifier's delivery: delivered,
// retried (no 2xx yet) or failed (given up).
func (m *Metrics) NotificationFinished(result string) {
	if m == nil {
		return
	}
	m.notifications.WithLabelValues(result).Inc()
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
