package deferstep

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/podstatus"
)

// Stop deletes those of steps (a pod's step pods, found with Selector) that still run,
// and names them. A step pod that has finished is kept for its log, and one already being
// deleted is left to it. Each delete gives 1 s of grace: the run is over, and a step that
// ignores SIGTERM (a shell as PID 1) must not hold the node's volume. It is guarded by the
// pod's UID, so a new pod of the same name is never hit, and a pod that is gone already,
// or replaced, is passed over. A failed delete does not stop the others: their errors come
// back together.
func Stop(ctx context.Context, pods corev1client.PodsGetter, steps []*corev1.Pod) (stopped []string, err error) {
	var errs []error
	for _, sp := range steps {
		if podstatus.Finished(sp) || sp.DeletionTimestamp != nil {
			continue
		}
		err := pods.Pods(sp.Namespace).Delete(ctx, sp.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](1),
			Preconditions:      &metav1.Preconditions{UID: &sp.UID},
		})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			continue // gone already, or a new pod of that name
		case err != nil:
			errs = append(errs, fmt.Errorf("stopping step pod %s: %w", sp.Name, err))
			continue
		}
		stopped = append(stopped, sp.Name)
	}
	return stopped, errors.Join(errs...)
}
