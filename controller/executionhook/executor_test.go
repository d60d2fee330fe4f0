package executionhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// testPID is the PID that the scripted commands print through the wrapper's marker.
const testPID = 4242

// neverCancelled bounds a scripted command that blocks until its context is done, so
// that an attempt that ignores its deadline fails the test instead of hanging it.
const neverCancelled = 5 * time.Second

// execCall is one call that scriptedExec received.
type execCall struct {
	pod, container string
	argv           []string
	deadline       time.Time // zero: the call's context had none
	ctxErr         error     // the context's error when the call came
}

// execReply is what scriptedExec does for one call: it writes output, then blocks until
// its context is done (and returns the context's error, as pods/exec does), or returns
// code and err.
type execReply struct {
	output string
	block  bool
	code   int
	err    error
}

// scriptedExec is an Executor that records its calls. It answers the commands with
// replies, in order (the last one repeats), and the stop command with stop.
type scriptedExec struct {
	replies []execReply
	stop    execReply

	mu    sync.Mutex
	calls []execCall
	next  int
	// started receives every call as it starts, for the tests that act while a
	// command runs; it never blocks the executor.
	started chan execCall
}

func newScriptedExec(replies ...execReply) *scriptedExec {
	return &scriptedExec{replies: replies, started: make(chan execCall, 16)}
}

func (f *scriptedExec) Exec(ctx context.Context, _, pod, container string, argv []string, out io.Writer) (int, error) {
	call := execCall{pod: pod, container: container, argv: append([]string(nil), argv...), ctxErr: ctx.Err()}
	call.deadline, _ = ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, call)
	reply := f.stop
	if !isStop(argv) {
		reply = f.replies[min(f.next, len(f.replies)-1)]
		f.next++
	}
	f.mu.Unlock()
	select {
	case f.started <- call:
	default:
	}
	_, _ = io.WriteString(out, reply.output)
	if reply.block {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(neverCancelled):
			return 0, errors.New("scriptedExec: the context of a blocking command was never cancelled")
		}
	}
	return reply.code, reply.err
}

func isStop(argv []string) bool { return len(argv) > 3 && argv[3] == "stagehand-stop" }

// commands and stops are the calls received, the stop commands apart.
func (f *scriptedExec) commands() []execCall { return f.callsWhere(false) }
func (f *scriptedExec) stops() []execCall    { return f.callsWhere(true) }

func (f *scriptedExec) callsWhere(stop bool) []execCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var calls []execCall
	for _, c := range f.calls {
		if isStop(c.argv) == stop {
			calls = append(calls, c)
		}
	}
	return calls
}

// printsPID is output as the PID-printing wrapper starts it.
func printsPID(output string) string { return fmt.Sprintf("%s%d\n%s", pidMarker, testPID, output) }

// stopArgv is the stop command that attempt must send for the command of PID p.
func stopArgv(p int) []string {
	return []string{"/bin/sh", "-c", killScript, "stagehand-stop", fmt.Sprint(p), fmt.Sprint(stopGrace)}
}

// newAttemptRun is a run of no hook over fake pods, enough for attempt and check.
func newAttemptRun(exec Executor, kube *kubefake.Clientset) *run {
	c := &Controller{kube: kube, exec: exec, recorder: record.NewFakeRecorder(10), log: logrus.NewEntry(logrus.New())}
	return &run{c: c, cancel: func() {}, done: make(chan struct{}), stopped: make(chan struct{})}
}

// assertHookError compares want's type, reason and message with got; nil wants nil.
func assertHookError(t *testing.T, want, got *v1alpha1.HookError) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got)
		return
	}
	require.NotNil(t, got)
	assert.Equal(t, want.ErrorType, got.ErrorType)
	assert.Equal(t, want.Reason, got.Reason)
	assert.Equal(t, want.Message, got.Message)
	assert.NotNil(t, got.Timestamp)
}
