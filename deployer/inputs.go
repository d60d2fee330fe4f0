package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-dev/stagehand/api/v1alpha1"
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
	// Older are the other revisions older than To that still have replicas. The driver
	// scales them to 0 before the strategy runs.
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
	to, err := rsClient.Get(ctx, revision, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, strategies.Invalidf("the revision's ReplicaSet %s/%s does not exist: check %s and %s, or whether the revision was pruned",
			namespace, revision, v1alpha1.EnvRevision, v1alpha1.EnvNamespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ReplicaSet %s/%s: %w", namespace, revision, err)
	}
	in, err := ParseRevision(to)
	if err != nil {
		return nil, err
	}
	list, err := rsClient.List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.ConfigLabel + "=" + in.ConfigName})
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of %s/%s: %w", namespace, in.ConfigName, err)
	}
	in.From, in.Older = SelectRevisions(to, list.Items)
	return in, nil
}

// ParseRevision reads the labels and annotations of the revision to. It fills every
// field of Inputs but From and Older.
func ParseRevision(to *appsv1.ReplicaSet) (*Inputs, error) {
	name := to.Labels[v1alpha1.ConfigLabel]
	if name == "" {
		return nil, strategies.Invalidf("ReplicaSet %s has no %s label, so it is not a Stagehand revision: point %s at a revision <config>-<N>",
			to.Name, v1alpha1.ConfigLabel, v1alpha1.EnvRevision)
	}
	version, ok := revisionNumber(to)
	if !ok {
		return nil, strategies.Invalidf("ReplicaSet %s has no valid %s label (want the revision number N, have %q); it was not created by Stagehand",
			to.Name, v1alpha1.RevisionLabel, to.Labels[v1alpha1.RevisionLabel])
	}
	snapshot, ok := to.Annotations[v1alpha1.ConfigSnapshotAnnotation]
	if !ok || snapshot == "" {
		return nil, strategies.Invalidf("ReplicaSet %s has no %s annotation, so there is nothing to deploy; retry the rollout with kubectl stagehand rollout latest %s",
			to.Name, v1alpha1.ConfigSnapshotAnnotation, name)
	}
	dc := &v1alpha1.DeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: to.Namespace}}
	if err := json.Unmarshal([]byte(snapshot), &dc.Spec); err != nil {
		return nil, strategies.Invalidf("the %s annotation of ReplicaSet %s is not a DeploymentConfig spec in JSON (%v); the revision is corrupt: start a new rollout",
			v1alpha1.ConfigSnapshotAnnotation, to.Name, err)
	}
	v1alpha1.SetDefaults(dc)
	desired, err := strconv.ParseInt(to.Annotations[v1alpha1.DesiredReplicasAnnotation], 10, 32)
	if err != nil || desired < 0 {
		return nil, strategies.Invalidf("ReplicaSet %s has no valid %s annotation (have %q, want a number ≥ 0); the revision is corrupt: start a new rollout",
			to.Name, v1alpha1.DesiredReplicasAnnotation, to.Annotations[v1alpha1.DesiredReplicasAnnotation])
	}
	return &Inputs{
		Namespace: to.Namespace, ConfigName: name, To: to, Version: version,
		Desired: int32(desired), Config: dc,
	}, nil
}

// SelectRevisions picks, among all (the ReplicaSets of the config), the revisions older
// than to that have the same controller as to. from is the newest whose phase is
// Complete (nil when none is); older are the others that still have replicas, oldest
// first.
func SelectRevisions(to *appsv1.ReplicaSet, all []appsv1.ReplicaSet) (from *appsv1.ReplicaSet, older []*appsv1.ReplicaSet) {
	toVersion, _ := revisionNumber(to)
	owner := controllerUID(to)
	var candidates []*appsv1.ReplicaSet
	for i := range all {
		rs := &all[i]
		version, ok := revisionNumber(rs)
		if !ok || version >= toVersion || rs.UID == to.UID || controllerUID(rs) != owner {
			continue
		}
		candidates = append(candidates, rs)
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, _ := revisionNumber(candidates[i])
		b, _ := revisionNumber(candidates[j])
		return a < b
	})
	for i := len(candidates) - 1; i >= 0; i-- {
		if v1alpha1.RevisionPhase(candidates[i].Annotations[v1alpha1.PhaseAnnotation]) == v1alpha1.RevisionPhaseComplete {
			from = candidates[i]
			break
		}
	}
	for _, rs := range candidates {
		if rs != from && strategies.Replicas(rs) > 0 {
			older = append(older, rs)
		}
	}
	return from, older
}

func revisionNumber(rs *appsv1.ReplicaSet) (int64, bool) {
	n, err := strconv.ParseInt(rs.Labels[v1alpha1.RevisionLabel], 10, 64)
	return n, err == nil && n > 0
}

func controllerUID(rs *appsv1.ReplicaSet) types.UID {
	if ref := metav1.GetControllerOf(rs); ref != nil {
		return ref.UID
	}
	return ""
}
