package logging

import (
	"errors"
	"flag"
	"testing"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

// captured is what a test compares of a logrus entry.
type captured struct {
	level  logrus.Level
	msg    string
	fields logrus.Fields
}

func capture(hook *test.Hook) []captured {
	var got []captured
	for _, e := range hook.AllEntries() {
		fields := e.Data
		if len(fields) == 0 {
			fields = nil
		}
		got = append(got, captured{level: e.Level, msg: e.Message, fields: fields})
	}
	return got
}

func newCapture(level logrus.Level) (*logrus.Entry, *test.Hook) {
	logger, hook := test.NewNullLogger()
	logger.SetLevel(level)
	return logrus.NewEntry(logger), hook
}

func TestNewLogger(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		level logrus.Level // of the logrus logger; Trace when zero
		log   func(logr.Logger)
		want  []captured
	}{
		{
			name: "info at V(0) is Debug",
			log:  func(l logr.Logger) { l.Info("Waiting for caches to sync", "controller", "pods") },
			want: []captured{{logrus.DebugLevel, "Waiting for caches to sync", logrus.Fields{"controller": "pods"}}},
		},
		{
			name: "info at V(2) is Trace",
			log:  func(l logr.Logger) { l.V(2).Info("GET /api", "status", 200) },
			want: []captured{{logrus.TraceLevel, "GET /api", logrus.Fields{"status": 200}}},
		},
		{
			name:  "info is dropped above the logger's level",
			level: logrus.InfoLevel,
			log:   func(l logr.Logger) { l.Info("chatty"); l.V(1).Info("chattier") },
		},
		{
			name:  "V(1) is dropped at Debug",
			level: logrus.DebugLevel,
			log:   func(l logr.Logger) { l.Info("kept"); l.V(1).Info("dropped") },
			want:  []captured{{logrus.DebugLevel, "kept", nil}},
		},
		{
			name:  "errors are Error with the error as a field",
			level: logrus.InfoLevel,
			log:   func(l logr.Logger) { l.Error(boom, "sync failed", "key", "ns/x") },
			want:  []captured{{logrus.ErrorLevel, "sync failed", logrus.Fields{"key": "ns/x", logrus.ErrorKey: boom}}},
		},
		{
			name: "an error without an error value",
			log:  func(l logr.Logger) { l.Error(nil, "watch ended") },
			want: []captured{{logrus.ErrorLevel, "watch ended", nil}},
		},
		{
			name: "names and values become fields",
			log: func(l logr.Logger) {
				l.WithName("reflector").WithName("pods").WithValues("a", 1).Info("listed", "b", 2)
			},
			want: []captured{{logrus.DebugLevel, "listed", logrus.Fields{NameField: "reflector/pods", "a": 1, "b": 2}}},
		},
		{
			name: "odd and non-string keys",
			log:  func(l logr.Logger) { l.Info("odd", 42, "answer", "dangling") },
			want: []captured{{logrus.DebugLevel, "odd", logrus.Fields{"42": "answer", "dangling": missingValue}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			level := tt.level
			if level == 0 {
				level = logrus.TraceLevel
			}
			entry, hook := newCapture(level)
			tt.log(NewLogger(entry))
			assert.Equal(t, tt.want, capture(hook))
		})
	}
}

// klog's own calls, as client-go makes them, arrive in logrus.
func TestRouteKlog(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	require.NoError(t, fs.Set("v", "2")) // klog filters V() itself before the sink sees it
	defer func() { _ = fs.Set("v", "0") }()
	boom := errors.New("boom")
	tests := []struct {
		name string
		log  func()
		want []captured
	}{
		{
			name: "InfoS",
			log:  func() { klog.InfoS("Waiting for caches to sync", "controller", "pods") },
			want: []captured{{logrus.DebugLevel, "Waiting for caches to sync", logrus.Fields{"controller": "pods"}}},
		},
		{
			name: "Infof",
			log:  func() { klog.Infof("watch of %s ended", "pods") },
			want: []captured{{logrus.DebugLevel, "watch of pods ended", nil}},
		},
		{
			name: "V(2).Info",
			log:  func() { klog.V(2).Info("round trip") },
			want: []captured{{logrus.TraceLevel, "round trip", nil}},
		},
		{
			name: "V(3) is filtered by klog",
			log:  func() { klog.V(3).Info("too chatty") },
		},
		{
			// klog hands printf-style warnings to the logger as info.
			name: "Warning",
			log:  func() { klog.Warning("deprecated") },
			want: []captured{{logrus.DebugLevel, "deprecated", nil}},
		},
		{
			name: "ErrorS",
			log:  func() { klog.ErrorS(boom, "sync failed", "key", "ns/x") },
			want: []captured{{logrus.ErrorLevel, "sync failed", logrus.Fields{"key": "ns/x", logrus.ErrorKey: boom}}},
		},
		{
			name: "Errorf",
			log:  func() { klog.Errorf("failed to list %s", "pods") },
			want: []captured{{logrus.ErrorLevel, "failed to list pods", nil}},
		},
		{
			name: "a contextual logger from klog",
			log:  func() { klog.Background().WithName("informer").Info("synced") },
			want: []captured{{logrus.DebugLevel, "synced", logrus.Fields{NameField: "informer"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry, hook := newCapture(logrus.TraceLevel)
			restore := RouteKlog(entry)
			defer restore()
			tt.log()
			assert.Equal(t, tt.want, capture(hook))
		})
	}
}

// The latest route wins, and undoing one falls back to the latest still in force.
func TestRouteKlogRestore(t *testing.T) {
	first, firstHook := newCapture(logrus.TraceLevel)
	second, secondHook := newCapture(logrus.TraceLevel)
	restoreFirst := RouteKlog(first)
	restoreSecond := RouteKlog(second)
	klog.InfoS("to second")
	restoreFirst() // out of order: second stays in force
	klog.InfoS("still to second")
	restoreSecond()
	restoreSecond() // twice is harmless
	standard, standardHook := newCapture(logrus.TraceLevel)
	restoreStandard := RouteKlog(standard)
	klog.InfoS("to standard")
	restoreStandard()

	assert.Empty(t, firstHook.AllEntries())
	assert.Equal(t, []captured{{logrus.DebugLevel, "to second", nil}, {logrus.DebugLevel, "still to second", nil}},
		capture(secondHook))
	assert.Len(t, standardHook.AllEntries(), 1)
	assert.Nil(t, klogTarget.Load(), "with no route left, klog goes to logrus's standard logger")
}
