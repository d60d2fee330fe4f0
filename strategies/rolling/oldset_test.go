package rolling

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func namedRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
}

// The old side of a rollout is every older revision that serves, From last; with no From
// the newest other plays its part, and with neither it is the first rollout.
func TestNewOldSet(t *testing.T) {
	assert.Nil(t, newOldSet(nil, nil), "the first rollout")

	o := newOldSet(namedRS("web-1", 0), []*appsv1.ReplicaSet{namedRS("web-2", 4)})
	require.NotNil(t, o)
	assert.Equal(t, "web-2+web-1", o.names(), "drained first: the frozen revision; From last")
	assert.Equal(t, int32(4), o.replicas())
	assert.Equal(t, "web-1", o.from().Name)

	o = newOldSet(nil, []*appsv1.ReplicaSet{namedRS("web-1", 1), namedRS("web-2", 2)})
	assert.Equal(t, "web-2", o.from().Name, "no Complete revision: the newest serving one")

	from := namedRS("web-1", 3)
	o = newOldSet(from, []*appsv1.ReplicaSet{from})
	assert.Equal(t, "web-1", o.names(), "From listed once")
}

func TestOldSetPlan(t *testing.T) {
	tests := []struct {
		name     string
		replicas []int32 // drain order, From last
		avail    []int32
		total    int32
		want     []int32
	}{
		{name: "unavailable replicas go first, wherever they are",
			replicas: []int32{2, 2}, avail: []int32{2, 1}, total: 3, want: []int32{2, 1}},
		{name: "then available ones, From last",
			replicas: []int32{2, 2}, avail: []int32{2, 2}, total: 3, want: []int32{1, 2}},
		{name: "down to 0",
			replicas: []int32{2, 2}, avail: []int32{1, 2}, total: 0, want: []int32{0, 0}},
		{name: "a frozen revision's pods serve until From's are gone",
			replicas: []int32{4, 0}, avail: []int32{4, 0}, total: 3, want: []int32{3, 0}},
		{name: "raising adds to From only",
			replicas: []int32{2, 0}, avail: []int32{2, 0}, total: 3, want: []int32{2, 1}},
		{name: "the same total changes nothing",
			replicas: []int32{1, 3}, avail: []int32{0, 3}, total: 4, want: []int32{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &oldSet{avail: tt.avail}
			var sum int32
			for i, n := range tt.replicas {
				o.rss = append(o.rss, namedRS("r"+string(rune('a'+i)), n))
				sum += n
			}
			got := o.plan(tt.total)
			assert.Equal(t, tt.want, got)
			var total, availableKept int32
			for i, n := range got {
				total += n
				availableKept += min(n, tt.avail[i])
				assert.GreaterOrEqual(t, n, int32(0))
			}
			assert.Equal(t, tt.total, total, "the plan's replicas add up to the total")
			if tt.total < sum {
				// Availability: lowering by k keeps at least the available pods less k
				var avail int32
				for _, a := range tt.avail {
					avail += a
				}
				assert.GreaterOrEqual(t, availableKept, avail-(sum-tt.total), "no more available pods removed than replicas")
			}
		})
	}
}
