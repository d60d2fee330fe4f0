package hookpod

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/stagehand-dev/stagehand/api/revision"
)

// EventComponent is the source component of the deployer's events.
const EventComponent = "stagehand-deployer"

// EventRecorder records an event on the DeploymentConfig of a revision. The reasons and
// messages of hook events are v1alpha1.EventHook* and v1alpha1.MsgHook*, in the API, so
// that readers of the events do not link this package.
type EventRecorder interface {
	Eventf(eventType, reason, messageFormat string, args ...any)
}

// eventWriter writes events synchronously through the core/v1 Events API: the deployer
// exits right after its last hook, and an asynchronous broadcaster could lose the event.
type eventWriter struct {
	events corev1client.EventInterface
	ref    corev1.ObjectReference
	log    *logrus.Entry
}

// NewEventRecorder records events on the controller (the DeploymentConfig) of revision,
// taken from its controller ownerReference, so that no GET of the DeploymentConfig is
// needed; on the revision itself when it has no controller. A failed write is logged,
// never fatal.
func NewEventRecorder(events corev1client.EventInterface, revision *appsv1.ReplicaSet, log *logrus.Entry) EventRecorder {
	return &eventWriter{events: events, ref: InvolvedObject(revision), log: log}
}

// InvolvedObject is the object a revision's hook events are about: its DeploymentConfig.
func InvolvedObject(rs *appsv1.ReplicaSet) corev1.ObjectReference {
	if owner := metav1.GetControllerOf(rs); owner != nil {
		return corev1.ObjectReference{APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, Namespace: rs.Namespace}
	}
	kind := revision.Kind(rs)
	return corev1.ObjectReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: rs.Name, UID: rs.UID, Namespace: rs.Namespace}
}

func (w *eventWriter) Eventf(eventType, reason, messageFormat string, args ...any) {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// The name scheme of client-go's recorder: unique per object and moment.
			Name:      fmt.Sprintf("%s.%x", w.ref.Name, now.UnixNano()),
			Namespace: w.ref.Namespace,
		},
		InvolvedObject:      w.ref,
		Reason:              reason,
		Message:             fmt.Sprintf(messageFormat, args...),
		Type:                eventType,
		Source:              corev1.EventSource{Component: EventComponent},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: "stagehand.dev/deployer",
		ReportingInstance:   EventComponent,
	}
	// Its own context: a failure event must be written even while the deployer stops.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		w.log.WithError(err).WithField("reason", reason).Warn("recording an event on the DeploymentConfig")
	}
}
