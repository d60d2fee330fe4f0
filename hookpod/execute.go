package hookpod

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/internal/listwatch"
)

// LogTailLines is how many of a failed hook's last log lines go into its error.
const LogTailLines = 20

// logDrainTimeout bounds how long the executor waits for the log stream to end after the
// hook container has finished.
const logDrainTimeout = 5 * time.Second

// HookExecutor runs one hook pod to its end.
type HookExecutor interface {
	// Execute creates pod (or adopts the existing pod of that name), streams its logs and
	// waits until it has finished. It returns nil when the pod Succeeded, a *PodFailedError
	// when it Failed, was deleted, or is stuck (its container cannot start: see
	// podstatus.StuckContainer; the pod is then stopped and kept), and an error wrapping
	// ctx.Err() after deleting the pod when ctx is done.
	Execute(ctx context.Context, pod *corev1.Pod) error
}

// Printer receives the deployer's output: "--> " progress lines and raw lines (the hook's
// log). *strategies.Progress is one.
type Printer interface {
	Printf(format string, args ...any)
	Println(line string)
}

// PodFailedError is a hook pod that ended Failed, disappeared before it ended, or is stuck.
type PodFailedError struct {
	// Pod is the hook pod's name.
	Pod string
	// ExitCode is the hook container's exit code; -1 when it is unknown.
	ExitCode int32
	// Reason and Message are the container's (or the pod's) termination reason and message.
	Reason, Message string
	// LogTail is the last LogTailLines lines of the hook's log.
	LogTail []string
	// Stuck is true when the hook container never started: it waited in a state it
	// cannot leave by itself (a missing ConfigMap key, an image that cannot be pulled)
	// past its grace. Reason is then the waiting reason, and Message names the container
	// and carries the kubelet's message.
	Stuck bool
}

func (e *PodFailedError) Error() string {
	return e.summary() + e.tailText()
}

// summary says which pod failed, how, and with what message.
func (e *PodFailedError) summary() string {
	if e.Stuck {
		return fmt.Sprintf("hook pod %s failed: %s", e.Pod, e.Message)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hook pod %s failed", e.Pod)
	if e.ExitCode >= 0 {
		fmt.Fprintf(&b, " with exit code %d", e.ExitCode)
	}
	if e.Reason != "" && e.Reason != "Error" { // "Error" says nothing beyond the exit code
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	if msg := strings.TrimSpace(e.Message); msg != "" && !strings.Contains(strings.Join(e.LogTail, "\n"), msg) {
		fmt.Fprintf(&b, ": %s", msg)
	}
	return b.String()
}

func (e *PodFailedError) advice() string {
	if e.Stuck {
		return fmt.Sprintf("see kubectl describe pod %s, then fix what the hook's container refers to (a ConfigMap, a Secret, the image) or its failurePolicy", e.Pod)
	}
	return fmt.Sprintf("see kubectl logs %s, then fix the hook's command or its failurePolicy%s", e.Pod, e.tailText())
}

// text is how the attempt failed, for events and progress lines: "exit 1", or for a
// stuck pod the container's waiting reason and message.
func (e *PodFailedError) text() string {
	switch {
	case e.Stuck:
		return e.Message
	case e.ExitCode < 0:
		return "no exit code"
	}
	return fmt.Sprintf("exit %d", e.ExitCode)
}

// tailText is "; its log ends with:" and the tail, or "" without a log.
func (e *PodFailedError) tailText() string {
	if len(e.LogTail) == 0 {
		return ""
	}
	return "; its log ends with:\n" + strings.Join(e.LogTail, "\n")
}

// hookExecutor runs hook pods in one namespace.
type hookExecutor struct {
	pods  corev1client.PodInterface
	out   Printer
	grace podstatus.StuckGrace
	now   func() time.Time
}

var _ HookExecutor = &hookExecutor{}

// NewExecutor returns the HookExecutor over pods (one namespace). The hook's log lines go
// to out, prefixed with the stage ("pre: ...").
func NewExecutor(pods corev1client.PodInterface, out Printer) HookExecutor {
	return &hookExecutor{pods: pods, out: out, grace: podstatus.DefaultStuckGrace, now: time.Now}
}

func (e *hookExecutor) Execute(ctx context.Context, pod *corev1.Pod) error {
	var created *corev1.Pod
	err := apiretry.Do(ctx, func() (err error) {
		created, err = e.pods.Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	switch {
	case apierrors.IsAlreadyExists(err):
		// A deployer that ran before created it: watch that pod. Only a pod of the same
		// revision (its ownerReference) is adopted; a pod that merely has the name is left alone.
		existing, getErr := e.pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("reading the existing hook pod %s: %w", pod.Name, getErr)
		}
		if !sameOwner(existing, pod) {
			return fmt.Errorf("pod %s already exists and does not belong to this revision (no ownerReference to it): "+
				"Stagehand leaves it alone; rename or delete it, then roll out again", pod.Name)
		}
		created = existing
	case err != nil:
		if ctx.Err() != nil {
			return fmt.Errorf("creating hook pod %s: %w", pod.Name, ctx.Err())
		}
		return fmt.Errorf("creating hook pod %s: %w", pod.Name, err)
	}
	logs := newLogStreamer(e.pods, pod.Name, pod.Labels[v1alpha1.HookStageLabel]+": ", e.out)
	defer logs.stop()
	final, stuck, err := e.wait(ctx, pod.Name, logs)
	if err != nil {
		if ctx.Err() != nil {
			e.delete(created)
			return fmt.Errorf("waiting for hook pod %s: %w", pod.Name, ctx.Err())
		}
		return err
	}
	if stuck != nil {
		// Its container never started, so it has no log. Kept for inspection, not deleted.
		e.stop(final)
		return stuck
	}
	tail := logs.finish(logDrainTimeout)
	if final == nil {
		return &PodFailedError{Pod: pod.Name, ExitCode: -1, Reason: "Deleted",
			Message: "the hook pod was deleted before it finished", LogTail: tail}
	}
	if final.Status.Phase == corev1.PodSucceeded {
		return nil
	}
	return failure(final, tail)
}

// errDeleted ends the watch when the pod is deleted.
var errDeleted = errors.New("deleted")

// wait watches the pod until it has finished or is stuck; it returns a nil pod (and no
// error) when the pod was deleted first, and the failure of a stuck pod with the pod. It
// starts the log stream once the container has started.
//
// A stuck pod does not change, so the watch would not wake when its grace runs out: a
// timer ends the watch then, and the pod is judged again from a fresh list.
func (e *hookExecutor) wait(ctx context.Context, name string, logs *logStreamer) (final *corev1.Pod, stuck *PodFailedError, err error) {
	// e.pods tells whether its client can stream the initial list (WatchList); the fake
	// clientset cannot.
	lw := listwatch.ByName(name, e.pods.List, e.pods.Watch, e.pods)
	for {
		recheck := newRecheck(ctx, e.now)
		err = listwatch.Until(recheck.ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Name != name { // the fake clientset ignores field selectors
				return false, nil
			}
			if ev.Type == watch.Deleted {
				return false, errDeleted
			}
			if started(pod) {
				logs.start(ctx)
			}
			if podstatus.Finished(pod) {
				final = pod
				return true, nil
			}
			if reason, msg, ok := podstatus.StuckContainer(pod, e.now(), e.grace); ok {
				final, stuck = pod, &PodFailedError{Pod: name, ExitCode: -1, Reason: reason, Message: msg, Stuck: true}
				return true, nil
			}
			recheck.at(podstatus.StuckAt(pod, e.grace))
			return false, nil
		})
		fired := recheck.stop()
		switch {
		case errors.Is(err, errDeleted):
			return nil, nil, nil
		case err == nil:
			return final, stuck, nil
		case fired && ctx.Err() == nil:
			continue // a grace ran out: judge the pod again
		}
		return nil, nil, fmt.Errorf("waiting for hook pod %s: %w", name, err)
	}
}

// delete removes a hook pod whose deployer was cancelled, with a context of its own: the
// deployer's is already done. The UID precondition spares a pod created again under the
// same name meanwhile.
func (e *hookExecutor) delete(pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.pods.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))}) // best effort: the controller deletes it too
}

// sameOwner reports whether existing has the ownerReference of the hook pod want: the
// same revision's ReplicaSet.
func sameOwner(existing, want *corev1.Pod) bool {
	for _, w := range want.OwnerReferences {
		for _, ref := range existing.OwnerReferences {
			if ref.UID == w.UID {
				return true
			}
		}
	}
	return false
}

func started(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == ContainerName && (c.State.Running != nil || c.State.Terminated != nil) {
			return true
		}
	}
	return podstatus.Finished(pod)
}

// failure describes a Failed hook pod.
func failure(pod *corev1.Pod, tail []string) *PodFailedError {
	f := &PodFailedError{Pod: pod.Name, ExitCode: -1, Reason: pod.Status.Reason, Message: pod.Status.Message, LogTail: tail}
	if t := podstatus.Terminated(pod, ContainerName); t != nil {
		f.ExitCode, f.Reason = t.ExitCode, t.Reason
		if t.Message != "" {
			f.Message = t.Message
		}
	}
	return f
}

// logStreamer follows the hook container's log into the Printer and keeps its tail.
type logStreamer struct {
	pods   corev1client.PodInterface
	name   string
	prefix string
	out    Printer

	once   sync.Once
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	tail   []string
}

func newLogStreamer(pods corev1client.PodInterface, name, prefix string, out Printer) *logStreamer {
	return &logStreamer{pods: pods, name: name, prefix: prefix, out: out, cancel: func() {}}
}

// start begins following the log, once.
func (l *logStreamer) start(ctx context.Context) {
	l.once.Do(func() {
		ctx, l.cancel = context.WithCancel(ctx)
		l.done = make(chan struct{})
		go l.follow(ctx)
	})
}

func (l *logStreamer) follow(ctx context.Context) {
	defer close(l.done)
	stream, err := l.pods.GetLogs(l.name, &corev1.PodLogOptions{Container: ContainerName, Follow: true}).Stream(ctx)
	if err != nil {
		l.add(fmt.Sprintf("(the log of %s cannot be read: %v)", l.name, err), false)
		return
	}
	defer stream.Close() //nolint:errcheck // read-only stream
	scanner := bufio.NewScanner(stream)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		l.add(scanner.Text(), true)
	}
}

func (l *logStreamer) add(line string, print bool) {
	l.mu.Lock()
	l.tail = append(l.tail, line)
	if len(l.tail) > LogTailLines {
		l.tail = l.tail[len(l.tail)-LogTailLines:]
	}
	l.mu.Unlock()
	if print && l.out != nil {
		l.out.Println(l.prefix + line)
	}
}

// finish waits up to timeout for the stream to end (the container has finished), then
// returns the tail. A stream that never started is read now, without following.
func (l *logStreamer) finish(timeout time.Duration) []string {
	l.start(context.Background())
	select {
	case <-l.done:
	case <-time.After(timeout):
		l.cancel()
		<-l.done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.tail...)
}

func (l *logStreamer) stop() {
	l.cancel()
	if l.done != nil {
		<-l.done
	}
}
