package plumbing

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/stagehand-dev/stagehand/api/revision"
	"github.com/stagehand-dev/stagehand/api/v1alpha1"
)

// revisionRS is revision n of DC dc in phase p ("" leaves the annotation out: New).
func revisionRS(namespace, dc string, n int, p v1alpha1.RevisionPhase) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: v1alpha1.RevisionName(dc, int64(n)), UID: types.UID(dc + "-uid"),
		Labels:      map[string]string{v1alpha1.ConfigLabel: dc, v1alpha1.RevisionLabel: strconv.Itoa(n)},
		Annotations: map[string]string{},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: revision.ConfigKind.GroupVersion().String(), Kind: revision.ConfigKind.Kind,
			Name: dc, UID: types.UID(dc + "-uid"), Controller: ptr.To(true),
		}},
	}}
	if p != "" {
		rs.Annotations[v1alpha1.PhaseAnnotation] = string(p)
	}
	return rs
}

func revisionLister(t *testing.T, revs ...*appsv1.ReplicaSet) appslisters.ReplicaSetLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, rs := range revs {
		require.NoError(t, idx.Add(rs))
	}
	return appslisters.NewReplicaSetLister(idx)
}

func TestRolloutPhases(t *testing.T) {
	orphan := revisionRS("shop", "gone", 1, v1alpha1.RevisionPhaseRunning)
	orphan.OwnerReferences = nil // ejected: no longer a revision of a DC
	notRevision := revisionRS("shop", "web", 0, v1alpha1.RevisionPhaseRunning)
	lister := revisionLister(t,
		revisionRS("shop", "web", 1, v1alpha1.RevisionPhaseComplete),
		revisionRS("shop", "web", 2, v1alpha1.RevisionPhaseFailed),
		revisionRS("shop", "web", 3, v1alpha1.RevisionPhaseRunning),
		revisionRS("shop", "api", 1, ""), // no phase annotation: New
		revisionRS("shop", "api", 2, v1alpha1.RevisionPhaseNew),
		revisionRS("blog", "web", 7, v1alpha1.RevisionPhasePending),
		revisionRS("blog", "db", 4, v1alpha1.RevisionPhaseRunning),
		orphan, notRevision,
	)
	synced := false
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewRolloutPhases(lister, func() bool { return synced }))

	n, err := testutil.GatherAndCount(reg, "stagehand_rollouts")
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing before the caches synced (a standby never syncs)")

	synced = true
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP stagehand_rollouts Revisions in each non-terminal phase (New, Pending, Running), from the leader's informer cache; absent until its caches have synced.
# TYPE stagehand_rollouts gauge
stagehand_rollouts{phase="New"} 2
stagehand_rollouts{phase="Pending"} 1
stagehand_rollouts{phase="Running"} 2
`), "stagehand_rollouts"))
}
