package deployer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
	"github.com/stagehand-dev/stagehand/internal/apiretry"
	"github.com/stagehand-dev/stagehand/internal/revisions"
	"github.com/stagehand-dev/stagehand/strategies"
)

// Inputs are what a strategy works from: the revision to deploy, the one it replaces and
// the DeploymentConfig spec as it was when the revision was created, with defaults.
type Inputs struct {
	Namespace string
	// ConfigName is the DeploymentConfig's name (the stagehand.dev/config label).
	ConfigName string
	// To is the revision to deploy; Version is its number N.
	To      *appsv1.ReplicaSet
	Version int64
	// From is the newest Complete revision older than To, nil on the first rollout.
	From *appsv1.ReplicaSet
	// Older are the other revisions older than To that still have replicas, oldest first:
	// a superseded canary, a frozen revision. The built-in strategies roll from them as
	// well as from From (DESIGN §4 invariant 10).
	Older []*appsv1.ReplicaSet
	// Desired is the replicas To runs once complete (stagehand.dev/desired-replicas).
	Desired int32
	// Config holds the snapshot spec (stagehand.dev/config-snapshot) with
	// v1alpha1.SetDefaults applied, and the config's name and namespace.
	Config *v1alpha1.DeploymentConfig
}

// LoadInputs reads the revision named revision and the other revisions of its config.
// Invalid input (a missing ReplicaSet or annotation, an unparsable snapshot) is a
// *strategies.InvalidError.
func LoadInputs(ctx context.Context, client kubernetes.Interface, namespace, revision string) (*Inputs, error) {
	rsClient := client.AppsV1().ReplicaSets(namespace)
	// A revision is named <config>-<N> and labelled with its config: one list usually
	// reads it and its siblings together. A name of another shape is read on its own.
	var list *appsv1.ReplicaSetList
	var to *appsv1.ReplicaSet
	if config, _, ok := v1alpha1.ParseRevisionName(revision); ok {
		l, err := listRevisions(ctx, client, namespace, config, false)
		if err != nil {
			return nil, fmt.Errorf("listing the revisions of %s/%s: %w", namespace, config, err)
		}
		list = l
		for i := range l.Items {
			if l.Items[i].Name == revision {
				to = &l.Items[i]
			}
		}
	}
	if to == nil {
		var rs *appsv1.ReplicaSet
		err := apiretry.Do(ctx, func() (err error) {
			rs, err = rsClient.Get(ctx, revision, metav1.GetOptions{})
			return err
		})
		if apierrors.IsNotFound(err) {
			// A StatefulSet revision is a ControllerRevision (docs/statefulsets.md).
			err = apiretry.Do(ctx, func() (err error) {
				rs, err = revisions.Client{Kube: client}.Get(ctx, namespace, revision, true)
				return err
			})
		}
		if apierrors.IsNotFound(err) {
			return nil, strategies.Invalidf("the revision's ReplicaSet %s/%s does not exist: check %s and %s, or whether the revision was pruned",
				namespace, revision, v1alpha1.EnvRevision, v1alpha1.EnvNamespace)
		}
		if err != nil {
			return nil, fmt.Errorf("reading ReplicaSet %s/%s: %w", namespace, revision, err)
		}
		to, list = rs, nil
	}
	in, err := ParseRevision(to)
	if err != nil {
		return nil, err
	}
	if stateful := to.Labels[v1alpha1.WorkloadLabel] == v1alpha1.WorkloadStatefulSet; list == nil || stateful {
		if list, err = listRevisions(ctx, client, namespace, in.ConfigName, stateful); err != nil {
			return nil, fmt.Errorf("listing the revisions of %s/%s: %w", namespace, in.ConfigName, err)
		}
	}
	in.From, in.Older = SelectRevisions(to, list.Items)
	return in, nil
}

// listRevisions lists the revisions of config, ReplicaSets or (stateful) the views of
// StatefulSet revisions, again after a transient error.
func listRevisions(ctx context.Context, client kubernetes.Interface, namespace, config string, stateful bool) (*appsv1.ReplicaSetList, error) {
	list := &appsv1.ReplicaSetList{}
	err := apiretry.Do(ctx, func() (err error) {
		list.Items, err = revisions.Client{Kube: client}.List(ctx, namespace, config, stateful)
		return err
	})
	return list, err
}

// ParseRevision reads the labels and annotations of the revision to. It fills every
// field of Inputs but From and Older.
func ParseRevision(to *appsv1.ReplicaSet) (*Inputs, error) {
	name := to.Labels[v1alpha1.ConfigLabel]
	if name == "" {
		return nil, strategies.Invalidf("ReplicaSet %s has no %s label, so it is not a Stagehand revision: point %s at a revision <config>-<N>",
			to.Name, v1alpha1.ConfigLabel, v1alpha1.EnvRevision)
	}
	version, ok := revision.Number(to)
	if !ok {
		return nil, strategies.Invalidf("ReplicaSet %s has no valid %s label (want the revision number N, have %q); it was not created by Stagehand",
			to.Name, v1alpha1.RevisionLabel, to.Labels[v1alpha1.RevisionLabel])
	}
	spec, err := revision.Snapshot(to)
	if err != nil {
		return nil, strategies.Invalidf("%v; the revision is corrupt: start a new rollout with kubectl stagehand rollout latest %s", err, name)
	}
	dc := &v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: to.Namespace}, Spec: *spec}
	v1alpha1.SetDefaults(dc)
	desired, err := revision.DesiredReplicas(to)
	if err != nil {
		return nil, strategies.Invalidf("%v; the revision is corrupt: start a new rollout", err)
	}
	return &Inputs{
		Namespace: to.Namespace, ConfigName: name, To: to, Version: version,
		Desired: desired, Config: dc,
	}, nil
}

// SelectRevisions picks, among all (the ReplicaSets of the config), the revisions older
// than to that have the same controller as to. from is the newest whose phase is
// Complete (nil when none is); older are the others that still have replicas, oldest
// first.
func SelectRevisions(to *appsv1.ReplicaSet, all []appsv1.ReplicaSet) (from *appsv1.ReplicaSet, older []*appsv1.ReplicaSet) {
	toVersion, _ := revision.Number(to)
	var candidates []*appsv1.ReplicaSet
	for _, rs := range revision.Owned(revision.ControllerUID(to), revision.Pointers(all)) {
		if version, _ := revision.Number(rs); version < toVersion && rs.UID != to.UID {
			candidates = append(candidates, rs)
		}
	}
	from = revision.NewestComplete(candidates)
	for _, rs := range candidates {
		if rs != from && strategies.Replicas(rs) > 0 {
			older = append(older, rs)
		}
	}
	return from, older
}
