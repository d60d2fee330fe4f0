// Package executionhook is the ExecutionHook controller: it runs a HookAction's command
// in running containers through pods/exec, all at once up to a hook's parallelism,
// retries each container with exponential back-off until the action's timeout, stops a
// command whose time ran out, records every container's outcome in the hook's status
// and deletes finished hooks after their TTL. See docs/exec-hooks.md.
package executionhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	informers "github.com/stagehand-dev/stagehand/api/client/informers/externalversions/api/v1alpha1"
	listers "github.com/stagehand-dev/stagehand/api/client/listers/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/controller/plumbing"
)

// QueueName names the controller's queue in the metrics.
const QueueName = "executionhook"

// MaxContainers bounds the containers one hook selects, so that its status stays far
// below the apiserver's object size limit (see v1alpha1.EntryTextBounds).
const MaxContainers = v1alpha1.MaxExecutionHookContainers

// Options configure the ExecutionHook controller.
type Options struct {
	// TTL deletes a finished hook this long after it finished, unless the hook sets
	// ttlSecondsAfterFinished; 0 keeps finished hooks.
	TTL time.Duration
}

// Controller runs ExecutionHooks.
type Controller struct {
	kube      kubernetes.Interface
	stagehand stagehandclient.Interface
	exec      Executor
	hooks     listers.ExecutionHookLister
	actions   listers.HookActionLister
	ttl       time.Duration
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  record.EventRecorder
	metrics   *plumbing.Metrics
	log       *logrus.Entry
	loop      *plumbing.Loop

	mu   sync.Mutex
	ctx  context.Context // the controller's: runs live as long as it
	runs map[string]*run // by namespace/name

	// syncHandler is a field so that tests can call it directly.
	syncHandler func(ctx context.Context, key string) error
}

// NewController wires the controller to the ExecutionHook and HookAction informers.
func NewController(kube kubernetes.Interface, stagehand stagehandclient.Interface, exec Executor,
	hooks informers.ExecutionHookInformer, actions informers.HookActionInformer,
	opts Options, metrics *plumbing.Metrics, log *logrus.Entry) (*Controller, error) {
	broadcaster, recorder := plumbing.NewRecorder("stagehand-executionhook-controller")
	c := &Controller{
		kube: kube, stagehand: stagehand, exec: exec,
		hooks: hooks.Lister(), actions: actions.Lister(), ttl: opts.TTL,
		queue: plumbing.NewQueue(QueueName), recorder: recorder, metrics: metrics,
		log:  log.WithField("controller", QueueName),
		runs: map[string]*run{}, ctx: context.Background(),
	}
	c.syncHandler = c.sync
	c.loop = &plumbing.Loop{
		Name: QueueName, Queue: c.queue, Log: c.log, Events: broadcaster, Kube: kube,
		Sync:   func(ctx context.Context, key string) error { return c.syncHandler(ctx, key) },
		Synced: []cache.InformerSynced{hooks.Informer().HasSynced, actions.Informer().HasSynced},
	}
	_, err := hooks.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(old, cur any) { plumbing.EnqueueIfChanged(old, cur, c.enqueue) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("adding an event handler: %w", err)
	}
	return c, nil
}

// SendEventsWith sends the controller's events through events (see controller.Options).
func (c *Controller) SendEventsWith(events kubernetes.Interface) { c.loop.Kube = events }

// Run starts the workers and blocks until ctx is done. The hooks' runs stop with it;
// their commands go on in the containers, and the next leader runs them again where an
// outcome was not recorded (at-least-once).
func (c *Controller) Run(ctx context.Context, workers int) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	c.loop.Run(ctx, workers)
}

func (c *Controller) enqueue(obj any) { plumbing.EnqueueKey(c.queue, obj) }

// sync moves one hook on: it starts a new hook (resolving the action and the
// containers), resumes a Running hook that has no run in this process, and deletes a
// finished hook once its TTL has passed.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return plumbing.Fatal(err)
	}
	hook, err := c.hooks.ExecutionHooks(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.stopRun(key)
		return nil
	}
	if err != nil {
		return err
	}
	if r := c.runOf(key); r != nil && r.snapshot().UID != hook.UID {
		c.stopRun(key) // deleted and created again under the same name
	}
	switch {
	case hook.Status.Phase.IsTerminal():
		return c.expire(ctx, hook)
	case hook.Status.Phase == v1alpha1.ExecutionHookRunning:
		if c.running(key) {
			return nil
		}
		// Resume from the apiserver's copy, never from a cache that may not yet show the
		// outcomes that the last run wrote: a container that succeeded never runs again.
		live, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if live.Status.Phase == v1alpha1.ExecutionHookRunning {
			c.ensureRun(key, live)
		}
		return nil
	}
	return c.begin(ctx, key, hook)
}

// running reports whether a run of key is in progress in this process.
func (c *Controller) running(key string) bool {
	r := c.runOf(key)
	if r == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

func (c *Controller) runOf(key string) *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[key]
}

// ensureRun starts a run of a Running hook unless one runs (or its last one ended
// before the hook's outcome was written, then it starts again from the status).
func (c *Controller) ensureRun(key string, hook *v1alpha1.ExecutionHook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.runs[key]; ok {
		select {
		case <-r.done:
		default:
			return
		}
	}
	parent := c.ctx
	r := c.start(parent, hook)
	c.runs[key] = r
	go func() {
		<-r.done
		c.mu.Lock()
		if c.runs[key] == r {
			delete(c.runs, key)
		}
		c.mu.Unlock()
		if parent.Err() == nil && r.snapshot().Status.CompletionTime == nil {
			c.queue.AddAfter(key, time.Second) // resume from what was written
		}
	}()
}

// stopRun stops the run of a deleted hook, and its commands.
func (c *Controller) stopRun(key string) {
	c.mu.Lock()
	r := c.runs[key]
	delete(c.runs, key)
	c.mu.Unlock()
	if r != nil {
		r.stop()
	}
}

// begin resolves a new hook's action and containers and writes them, with the deadline,
// into its status; a hook that cannot start fails at once with the reason.
func (c *Controller) begin(ctx context.Context, key string, hook *v1alpha1.ExecutionHook) error {
	hook = hook.DeepCopy()
	st := &hook.Status
	action, err := c.actions.HookActions(hook.Namespace).Get(hook.Spec.ActionName)
	if apierrors.IsNotFound(err) {
		// The deployer and users create the action and then the hook at once: the hook's
		// event may come before the action's. Only the apiserver can say it is missing.
		action, err = c.stagehand.StagehandV1alpha1().HookActions(hook.Namespace).Get(ctx, hook.Spec.ActionName, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return c.failHook(ctx, hook, hookError(v1alpha1.HookErrorActionNotFound, "ActionNotFound",
			fmt.Sprintf("HookAction %s does not exist in namespace %s: create it, then create this hook again",
				hook.Spec.ActionName, hook.Namespace)))
	case err != nil:
		return err
	case action.Action.Exec == nil || len(action.Action.Exec.Command) == 0:
		return c.failHook(ctx, hook, hookError(v1alpha1.HookErrorError, "ActionInvalid",
			fmt.Sprintf("HookAction %s has no exec command", action.Name)))
	}
	if rev, ok := hook.Labels[v1alpha1.ExecHookOfLabel]; ok {
		herr, err := c.verifyExecHook(ctx, hook, action, rev)
		if err != nil {
			return err
		}
		if herr != nil {
			return c.failHook(ctx, hook, herr)
		}
	}
	entries, herr, err := c.selectContainers(ctx, hook)
	if err != nil {
		return err
	}
	if herr != nil {
		return c.failHook(ctx, hook, herr)
	}
	timeout := int64(v1alpha1.DefaultActionTimeoutSeconds)
	if action.ActionTimeoutSeconds != nil {
		timeout = min(max(*action.ActionTimeoutSeconds, 1), v1alpha1.MaxActionTimeoutSeconds)
	}
	start := metav1.Now()
	deadline := metav1.NewTime(start.Add(time.Duration(timeout) * time.Second))
	st.Phase = v1alpha1.ExecutionHookRunning
	st.Command = append([]string(nil), action.Action.Exec.Command...)
	st.StartTime, st.Deadline = &start, &deadline
	st.HookStatuses = entries
	setSummary(st)
	written, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace).UpdateStatus(ctx, hook, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.recorder.Eventf(written, corev1.EventTypeNormal, v1alpha1.EventExecutionHookStarted, v1alpha1.MsgExecutionHookStarted,
		action.Name, len(entries))
	c.ensureRun(key, written)
	return nil
}

// failHook ends a hook that could not start.
func (c *Controller) failHook(ctx context.Context, hook *v1alpha1.ExecutionHook, herr *v1alpha1.HookError) error {
	st := &hook.Status
	st.Error = herr
	st.CompletionTime = now()
	setSummary(st)
	setOutcome(st, v1alpha1.ExecutionHookFailed, herr.Reason, herr.Message)
	written, err := c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace).UpdateStatus(ctx, hook, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	c.eventFinished(written)
	return nil
}

// expire deletes a finished hook whose TTL has passed, or comes back when it will have.
func (c *Controller) expire(ctx context.Context, hook *v1alpha1.ExecutionHook) error {
	ttl := c.ttl
	if hook.Spec.TTLSecondsAfterFinished != nil {
		ttl = time.Duration(*hook.Spec.TTLSecondsAfterFinished) * time.Second
	} else if ttl <= 0 {
		return nil
	}
	end := hook.CreationTimestamp.Time
	if hook.Status.CompletionTime != nil {
		end = hook.Status.CompletionTime.Time
	}
	if left := time.Until(end.Add(ttl)); left > 0 {
		return plumbing.RequeueAfter(left, "the hook's TTL has not passed")
	}
	uid := hook.UID
	err := c.stagehand.StagehandV1alpha1().ExecutionHooks(hook.Namespace).Delete(ctx, hook.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	c.log.WithField("executionHook", hook.Namespace+"/"+hook.Name).Debug("Deleted a finished hook after its TTL")
	return nil
}

func (c *Controller) eventContainerFailed(hook *v1alpha1.ExecutionHook, pod, container string, herr *v1alpha1.HookError, output string) {
	last := ""
	if l := lastLine(output); l != "" {
		last = "; last output: " + l
	}
	c.recorder.Eventf(hook, corev1.EventTypeWarning, v1alpha1.EventExecutionHookContainerFailed, v1alpha1.MsgExecutionHookContainerFailed,
		pod, container, herr.ErrorType, herr.Message, last)
}

func (c *Controller) eventFinished(hook *v1alpha1.ExecutionHook) {
	msg := "the hook finished"
	for _, cond := range hook.Status.Conditions {
		if cond.Status == metav1.ConditionTrue {
			msg = cond.Message
		}
	}
	if hook.Status.Phase == v1alpha1.ExecutionHookComplete {
		c.recorder.Event(hook, corev1.EventTypeNormal, v1alpha1.EventExecutionHookCompleted, msg)
	} else {
		c.recorder.Event(hook, corev1.EventTypeWarning, v1alpha1.EventExecutionHookFailed, msg)
	}
}
