package nodeagent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The termination message of a container is read from a per-container file instead of its
// terminationMessagePath (default /dev/termination-log), which a host process cannot
// write: <poddir>/<container>/termination-log. The process learns the path from
// EnvTerminationMessagePath. At most maxTerminationMessage bytes are reported.
const (
	EnvTerminationMessagePath = "STAGEHAND_TERMINATION_MESSAGE_PATH"
	maxTerminationMessage     = 4096
	fallbackLogLines          = 80
	fallbackLogBytes          = 2048
	configRetryPeriod         = 2 * time.Second
	logDrainTimeout           = 2 * time.Second
)

// Container state reasons, as the kubelet reports them.
const (
	reasonCompleted        = "Completed"
	reasonError            = "Error"
	reasonStartError       = "StartError"
	reasonCrashLoopBackOff = "CrashLoopBackOff"
	reasonCreating         = "ContainerCreating"
	reasonPodInitializing  = "PodInitializing"
	reasonConfigError      = "CreateContainerConfigError"
)

// ctr is one container of a pod. Its fields are guarded by the pod worker's mutex.
type ctr struct {
	spec          *corev1.Container
	init, sidecar bool
	status        corev1.ContainerStatus
	proc          *proc   // the running process, if any
	run           *ctrRun // the current or last run; nil before the first start
	backoff       restartBackoff
}

func newCtr(spec *corev1.Container, init, sidecar bool, base, maxDelay time.Duration) *ctr {
	reason := reasonCreating
	if !init {
		reason = reasonPodInitializing
	}
	return &ctr{
		spec: spec, init: init, sidecar: sidecar,
		backoff: restartBackoff{base: base, max: maxDelay},
		status: corev1.ContainerStatus{
			Name:    spec.Name,
			Image:   spec.Image,
			ImageID: imageID(spec.Image),
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
		},
	}
}

func (w *podWorker) logPath(c *ctr) string { return filepath.Join(w.dir, c.spec.Name+".log") }
func (w *podWorker) previousLogPath(c *ctr) string {
	return filepath.Join(w.dir, c.spec.Name+".previous.log")
}
func (w *podWorker) terminationPath(c *ctr) string {
	return filepath.Join(w.dir, c.spec.Name, "termination-log")
}

// runContainers runs the init containers in order, then starts every container.
func (w *podWorker) runContainers(ctx context.Context) {
	policy := w.latest().Spec.RestartPolicy
	for _, c := range w.ctrs {
		if !c.init {
			w.goLoop(ctx, c, policy)
			continue
		}
		if c.sidecar {
			w.goLoop(ctx, c, corev1.RestartPolicyAlways)
			continue
		}
		for {
			code, ran := w.runOnce(ctx, c)
			if ctx.Err() != nil {
				return
			}
			if ran && code == 0 {
				break
			}
			if policy == corev1.RestartPolicyNever {
				return // the pod failed; its phase says so
			}
			if !w.waitBackoff(ctx, c) {
				return
			}
		}
		w.markDirty()
	}
}

func (w *podWorker) goLoop(ctx context.Context, c *ctr, policy corev1.RestartPolicy) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			code, _ := w.runOnce(ctx, c)
			if ctx.Err() != nil {
				return
			}
			if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && code == 0) {
				return
			}
			if !w.waitBackoff(ctx, c) {
				return
			}
		}
	}()
}

// waitBackoff waits before a restart, with the container waiting in CrashLoopBackOff.
func (w *podWorker) waitBackoff(ctx context.Context, c *ctr) bool {
	w.mu.Lock()
	ran := time.Duration(0)
	if t := c.status.State.Terminated; t != nil {
		ran = t.FinishedAt.Sub(t.StartedAt.Time)
	}
	delay := c.backoff.next(ran)
	pod := w.pod
	c.status.LastTerminationState = c.status.State
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason:  reasonCrashLoopBackOff,
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.spec.Name, pod.Name, pod.Namespace, pod.UID),
	}}
	w.mu.Unlock()
	w.markDirty()
	select {
	case <-ctx.Done():
		return false
	case <-time.After(delay):
		return true
	}
}

func (w *podWorker) terminateLocked(c *ctr, code int32, reason, msg string, started metav1.Time) {
	c.status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode:    code,
		Reason:      reason,
		Message:     msg,
		StartedAt:   started,
		FinishedAt:  nowSecond(),
		ContainerID: c.status.ContainerID,
	}}
	c.status.Started = ptrTo(false)
	c.status.Ready = c.init && !c.sidecar && code == 0
}

func (w *podWorker) setWaiting(c *ctr, reason, msg string) {
	w.mu.Lock()
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	w.mu.Unlock()
	w.markDirty()
}

// startProcess starts a process container, through the shim, with its output going to sink.
func (w *podWorker) startProcess(run *ctrRun, sink *logSink) (*proc, error) {
	cmd, err := newCommand(run.argv, run.dir, run.env)
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p, err := w.a.spawner.startContainer(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	sink.follow(outR, "stdout")
	sink.follow(errR, "stderr")
	return p, nil
}

// terminationMessage reads the message a finished container left, falling back to the end
// of its log when its policy says so.
func (w *podWorker) terminationMessage(c *ctr, code int32) string {
	var msg string
	if f, err := os.Open(w.terminationPath(c)); err == nil {
		buf := make([]byte, maxTerminationMessage)
		n, _ := f.Read(buf)
		f.Close()
		msg = string(buf[:n])
	}
	if msg == "" && code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = logTail(w.logPath(c), fallbackLogLines, fallbackLogBytes)
	}
	return msg
}

// configErrorReason is the waiting reason for a container that cannot be prepared.
func configErrorReason(err error) string {
	var ce *containerCreatingError
	if errors.As(err, &ce) {
		return reasonCreating
	}
	return reasonConfigError
}

// containerCreatingError marks a preparation failure the kubelet would report as
// ContainerCreating (the pod's token could not be minted), not as a config error.
type containerCreatingError struct{ err error }

func (e *containerCreatingError) Error() string { return e.err.Error() }
func (e *containerCreatingError) Unwrap() error { return e.err }

// imageID makes up a stable, digest-shaped image ID for an image reference:
// "<repository>@sha256:<sha256 of the reference>".
func imageID(image string) string {
	repo := image
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	} else if hasTagOrDigest(repo) {
		repo = repo[:strings.LastIndex(repo, ":")]
	}
	sum := sha256.Sum256([]byte(image))
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ptrTo[T any](v T) *T { return &v }
