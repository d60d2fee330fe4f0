package executionhook

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/podstatus"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

func (c *Controller) eventContainerFailed(hook *v1alpha1.ExecutionHook, pod, container string, herr *v1alpha1.HookError, output string) {
	last := ""
	if l := podstatus.LastLine(output); l != "" {
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
