// Package rollout is the one place where the kubectl plugin decides what a rollout
// operation does: a manual rollout, cancel, retry, rollback, pause and resume, and the
// history and progress it reads.
//
// It never creates or restarts a revision itself. The controller is the only writer of
// revisions; an operation that needs one writes a rollout request (the annotation
// stagehand.dev/rollout-request, v1alpha1.RolloutRequest) in one Update of the
// DeploymentConfig that carries the resourceVersion it read, together with any spec
// change (a rollback). A client that read a stale DeploymentConfig gets a conflict, reads
// again and checks again, so two clients never act on different views. docs/cli.md tells
// the whole protocol.
package rollout

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	stagehandclient "github.com/stagehand-dev/stagehand/api/client/clientset/versioned"
	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/revisions"
)

// Client runs rollout operations on the DeploymentConfigs of one namespace.
type Client struct {
	Kube      kubernetes.Interface
	Stagehand stagehandclient.Interface
	Namespace string
	// NewID makes request IDs; nil means random UUIDs.
	NewID func() string
}

func (c *Client) newID() string {
	if c.NewID != nil {
		return c.NewID()
	}
	return uuid.NewString()
}

// State is a DeploymentConfig with its revisions, read from the apiserver.
type State struct {
	DC *v1alpha1.DeploymentConfig
	// Revisions are the DC's ReplicaSets, oldest first.
	Revisions []*appsv1.ReplicaSet
}

// Get reads a DeploymentConfig and its revisions.
func (c *Client) Get(ctx context.Context, name string) (*State, error) {
	dc, err := c.Stagehand.StagehandV1alpha1().DeploymentConfigs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deploymentconfig %q not found in namespace %q", name, c.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading deploymentconfig %s: %w", name, err)
	}
	items, err := revisions.Client{Kube: c.Kube}.List(ctx, c.Namespace, name, dc.Spec.StatefulSet != nil)
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of %s: %w", name, err)
	}
	st := &State{DC: dc, Revisions: revision.Owned(dc.UID, revision.Pointers(items))}
	return st, nil
}

// Revision returns revision n, or nil when it does not exist (not yet, or pruned).
func (s *State) Revision(n int64) *appsv1.ReplicaSet {
	return revision.Find(s.Revisions, n)
}

// Latest is the revision status.latestVersion names, or nil.
func (s *State) Latest() *appsv1.ReplicaSet { return s.Revision(s.DC.Status.LatestVersion) }

// Name is "deploymentconfig/<name>", the way kubectl names objects.
func (s *State) Name() string { return "deploymentconfig/" + s.DC.Name }

// pendingRequest is the DC's rollout request when the controller has not acted on it yet.
func (s *State) pendingRequest() *v1alpha1.RolloutRequest {
	req, err := v1alpha1.ParseRolloutRequest(s.DC)
	if err != nil || !revision.RequestPending(req, s.DC, s.Latest()) {
		return nil
	}
	return req
}

// inFlight explains why a rollout is in progress, or returns "".
func (s *State) inFlight() string {
	if req := s.pendingRequest(); req != nil {
		return fmt.Sprintf("a %s request is waiting for the controller (revision %d)", req.Action, s.DC.Status.LatestVersion+1)
	}
	if s.DC.Status.LatestVersion == 0 {
		return ""
	}
	latest := s.Latest()
	if latest == nil {
		return fmt.Sprintf("revision %d is being created", s.DC.Status.LatestVersion)
	}
	if p := revision.Phase(latest); !p.IsTerminal() {
		return fmt.Sprintf("revision %s is %s", latest.Name, p)
	}
	return ""
}

// Refused is an operation that the state does not allow; the message says why and what to do.
type Refused struct{ Message string }

func (e *Refused) Error() string { return e.Message }

func refused(format string, args ...any) error {
	return &Refused{Message: fmt.Sprintf(format, args...)}
}
