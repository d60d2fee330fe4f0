package rollout

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// Logs copies the log of a revision's deployer pod to out; it carries the hooks' logs
// too. A revision whose failure hook ran gets its runner pod's log after it. revision 0 means the latest. With follow it waits for a deployer pod that is not
// running yet and streams until the pod ends (or ctx does).
func (c *Client) Logs(ctx context.Context, name string, number int64, follow bool, out io.Writer) error {
	st, err := c.Get(ctx, name)
	if err != nil {
		return err
	}
	if number == 0 {
		number = st.DC.Status.LatestVersion
	}
	if number == 0 {
		return refused("%s has no revision yet", st.Name())
	}
	rs := st.Revision(number)
	if rs == nil {
		return refused("revision %d of %s does not exist (kept: %s)", number, st.Name(), st.summary())
	}
	pod := v1alpha1.DeployerPodName(rs.Name)
	if follow && !revision.Phase(rs).IsTerminal() {
		if err := c.waitStarted(ctx, pod); err != nil {
			return err
		}
	}
	if p, err := c.Kube.CoreV1().Pods(c.Namespace).Get(ctx, pod, metav1.GetOptions{}); err == nil && !revision.IsDeployerPodOf(rs, p) {
		return refused("pod %s is not the deployer pod of revision %s (it has no ownerReference to it), so its log is not shown", pod, rs.Name)
	}
	deployerErr := c.copyLog(ctx, pod, follow, out)
	if apierrors.IsNotFound(deployerErr) {
		deployerErr = refused("the deployer pod %s of revision %s is gone: a deployer pod is deleted when its revision is cancelled, superseded, retried or pruned", pod, rs.Name)
	}
	if state, _ := v1alpha1.FailureHookStateOf(rs); state == "" {
		return deployerErr
	}
	// The failure hook's runner pod comes after the deployer pod (docs/hooks.md).
	if deployerErr != nil {
		fmt.Fprintf(out, "(%v)\n", deployerErr)
	}
	runner := v1alpha1.FailureHookRunnerName(rs.Name)
	fmt.Fprintf(out, "--- failed hook of %s (pod %s) ---\n", rs.Name, runner)
	if err := c.copyLog(ctx, runner, follow, out); apierrors.IsNotFound(err) {
		fmt.Fprintf(out, "(the runner pod %s is gone)\n", runner)
	} else if err != nil {
		return err
	}
	return nil
}

// copyLog copies the log of pod to out; a NotFound error is returned as is.
func (c *Client) copyLog(ctx context.Context, pod string, follow bool, out io.Writer) error {
	stream, err := c.Kube.CoreV1().Pods(c.Namespace).GetLogs(pod, &corev1.PodLogOptions{Follow: follow}).Stream(ctx)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reading the log of %s: %w", pod, err)
	}
	defer stream.Close()
	_, err = io.Copy(out, stream)
	return err
}

// waitStarted waits until the deployer pod exists and is past Pending.
func (c *Client) waitStarted(ctx context.Context, pod string) error {
	err := c.waitPod(ctx, pod, func(p *corev1.Pod) bool { return p != nil && p.Status.Phase != corev1.PodPending })
	if err != nil {
		return fmt.Errorf("waiting for the deployer pod %s to start: %w", pod, err)
	}
	return nil
}
