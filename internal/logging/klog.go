// Package logging bridges the logging of Kubernetes libraries into logrus. client-go logs
// through klog, which writes to stderr in its own format unless it is given a logr.Logger;
// NewLogger is such a logger over a logrus entry, and RouteKlog installs one in klog.
package logging

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// Fields that the sink adds to the logrus entry.
const (
	// NameField holds the logr name (WithName), e.g. "reflector"; nested names are joined
	// with "/".
	NameField = "logger"
	// missingValue stands in for the value of a key that has none, as in klog.
	missingValue = "(MISSING)"
)

// NewLogger returns a logr.Logger that writes to entry. Info lines at V(0) become Debug
// and those at V(1) and above Trace: Kubernetes libraries log chatty progress at info.
// Errors become Error, with the error in logrus's error field. Key/value pairs become
// fields.
func NewLogger(entry *logrus.Entry) logr.Logger {
	return logr.New(&sink{target: func() *logrus.Entry { return entry }})
}

// sink is a logr.LogSink over logrus. target is read for every line, so that RouteKlog can
// switch where klog's lines go without installing a new logger in klog.
type sink struct {
	target func() *logrus.Entry
	name   string
	values []any // from WithValues
}

var _ logr.LogSink = &sink{}

func (s *sink) Init(logr.RuntimeInfo) {}

func (s *sink) Enabled(level int) bool {
	return s.target().Logger.IsLevelEnabled(infoLevel(level))
}

func (s *sink) Info(level int, msg string, keysAndValues ...any) {
	s.entry(keysAndValues).Log(infoLevel(level), msg)
}

func (s *sink) Error(err error, msg string, keysAndValues ...any) {
	e := s.entry(keysAndValues)
	if err != nil {
		e = e.WithError(err)
	}
	e.Error(msg)
}

func (s *sink) WithValues(keysAndValues ...any) logr.LogSink {
	c := *s
	c.values = append(slices.Clip(s.values), keysAndValues...)
	return &c
}

func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}

// infoLevel maps a logr verbosity to a logrus level.
func infoLevel(v int) logrus.Level {
	if v <= 0 {
		return logrus.DebugLevel
	}
	return logrus.TraceLevel
}

// entry is the target entry with the sink's name and values and keysAndValues as fields.
func (s *sink) entry(keysAndValues []any) *logrus.Entry {
	e := s.target()
	if s.name == "" && len(s.values) == 0 && len(keysAndValues) == 0 {
		return e
	}
	fields := logrus.Fields{}
	if s.name != "" {
		fields[NameField] = s.name
	}
	addPairs(fields, s.values)
	addPairs(fields, keysAndValues)
	return e.WithFields(fields)
}

// addPairs adds key/value pairs to fields. A key that is not a string is formatted with
// %v; a trailing key without a value gets missingValue.
func addPairs(fields logrus.Fields, kv []any) {
	for i := 0; i < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			key = fmt.Sprint(kv[i])
		}
		if i+1 < len(kv) {
			fields[key] = kv[i+1]
		} else {
			fields[key] = missingValue
		}
	}
}

// klog is global, so where its lines go is too: the newest RouteKlog whose restore has not
// run yet.
var (
	klogOnce   sync.Once
	klogMu     sync.Mutex
	klogRoutes []*route // in the order of the RouteKlog calls
	klogTarget atomic.Pointer[logrus.Entry]
)

type route struct{ entry *logrus.Entry }

// RouteKlog sends klog's lines, and with them client-go's, to entry through NewLogger's
// mapping instead of to stderr. The latest call wins. The returned function undoes the
// call: klog's lines go back to the entry of the latest call that is still in force, or,
// when none is, to logrus's standard logger. Call it before the entry's output goes away
// (a test's t.Output(), say), since libraries may log at any time.
func RouteKlog(entry *logrus.Entry) (restore func()) {
	r := &route{entry: entry}
	klogMu.Lock()
	klogRoutes = append(klogRoutes, r)
	klogTarget.Store(entry)
	klogMu.Unlock()
	// klog.SetLogger is not safe while others log, so klog gets one logger, once; later
	// calls only move its target.
	klogOnce.Do(func() { klog.SetLogger(logr.New(&sink{target: currentKlogTarget})) })

	var once sync.Once
	return func() {
		once.Do(func() {
			klogMu.Lock()
			defer klogMu.Unlock()
			klogRoutes = slices.DeleteFunc(klogRoutes, func(x *route) bool { return x == r })
			if n := len(klogRoutes); n > 0 {
				klogTarget.Store(klogRoutes[n-1].entry)
			} else {
				klogTarget.Store(nil)
			}
		})
	}
}

func currentKlogTarget() *logrus.Entry {
	if e := klogTarget.Load(); e != nil {
		return e
	}
	return logrus.NewEntry(logrus.StandardLogger())
}
