package localcluster

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// klog is process-wide, and so is where its lines go: klogEntry, or logrus's standard
// logger while it is nil. klog gets one logger, once, because klog.SetLogger is not safe
// while others log; RouteKlog only moves klogEntry.
var (
	klogInstall sync.Once
	klogEntry   atomic.Pointer[logrus.Entry]
)

// RouteKlog sends klog's lines, client-go's among them, to entry instead of to stderr:
// info lines at Debug, errors at Error, key/value pairs as fields. The returned function
// sends them back to where they went before, unless a later call has moved them since.
func RouteKlog(entry *logrus.Entry) (restore func()) {
	klogInstall.Do(func() { klog.SetLogger(logr.New(klogSink{})) })
	previous := klogEntry.Swap(entry)
	return func() { klogEntry.CompareAndSwap(entry, previous) }
}

// klogSink is the logr.LogSink that RouteKlog gives klog.
type klogSink struct {
	fields logrus.Fields // from WithName and WithValues
}

func (klogSink) Init(logr.RuntimeInfo) {}

func (s klogSink) Enabled(int) bool { return s.target().Logger.IsLevelEnabled(logrus.DebugLevel) }

func (s klogSink) Info(_ int, msg string, keysAndValues ...any) {
	s.with(keysAndValues).Debug(msg)
}

func (s klogSink) Error(err error, msg string, keysAndValues ...any) {
	s.with(keysAndValues).WithError(err).Error(msg)
}

func (s klogSink) WithValues(keysAndValues ...any) logr.LogSink {
	return klogSink{fields: s.add(keysAndValues)}
}

func (s klogSink) WithName(name string) logr.LogSink {
	if prefix, ok := s.fields["logger"]; ok {
		name = fmt.Sprint(prefix) + "/" + name
	}
	return klogSink{fields: s.add([]any{"logger", name})}
}

func (s klogSink) target() *logrus.Entry {
	if e := klogEntry.Load(); e != nil {
		return e
	}
	return logrus.NewEntry(logrus.StandardLogger())
}

func (s klogSink) with(keysAndValues []any) *logrus.Entry {
	return s.target().WithFields(s.add(keysAndValues))
}

// add returns the sink's fields plus keysAndValues; a key without a value is dropped.
func (s klogSink) add(keysAndValues []any) logrus.Fields {
	fields := maps.Clone(s.fields)
	if fields == nil {
		fields = logrus.Fields{}
	}
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		fields[fmt.Sprint(keysAndValues[i])] = keysAndValues[i+1]
	}
	return fields
}
