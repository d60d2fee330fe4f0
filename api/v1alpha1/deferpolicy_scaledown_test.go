package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeferScaleDownRequestPatchIsTheWireFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   int32
		want string
	}{
		{name: "zero", to: 0, want: `{"metadata":{"annotations":{"stagehand.dev/defer-scale-down-to":"0"}}}`},
		{name: "some", to: 12, want: `{"metadata":{"annotations":{"stagehand.dev/defer-scale-down-to":"12"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch := DeferScaleDownRequestPatch(tc.to)
			assert.Equal(t, tc.want, string(patch))

			// Applied as a merge patch, it is the request that SetDeferScaleDownRequest
			// writes, and the controller reads it back.
			var applied struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, json.Unmarshal(patch, &applied))
			set := &metav1.ObjectMeta{}
			SetDeferScaleDownRequest(set, tc.to)
			assert.Equal(t, set.Annotations, applied.Metadata.Annotations)
			to, ok := DeferScaleDownRequestOf(&applied.Metadata)
			assert.True(t, ok)
			assert.Equal(t, tc.to, to)
		})
	}
}

func TestDeferScaleDownRequestRoundTrip(t *testing.T) {
	obj := &metav1.ObjectMeta{}
	assert.False(t, HasDeferScaleDownRequest(obj))
	assert.False(t, DeferScaleDownRequestIs(obj, 0), "no request is no request for 0")
	assert.False(t, InDeferScaleDown(obj))

	SetDeferScaleDownRequest(obj, 2)
	assert.Equal(t, map[string]string{DeferScaleDownToAnnotation: "2"}, obj.Annotations)
	to, ok := DeferScaleDownRequestOf(obj)
	assert.True(t, ok)
	assert.Equal(t, int32(2), to)
	assert.True(t, DeferScaleDownRequestIs(obj, 2))
	assert.False(t, DeferScaleDownRequestIs(obj, 1))
	assert.True(t, InDeferScaleDown(obj))

	ClearDeferScaleDownRequest(obj)
	assert.False(t, HasDeferScaleDownRequest(obj))
	assert.False(t, InDeferScaleDown(obj))
	assert.Empty(t, obj.Annotations)
	ClearDeferScaleDownRequest(&metav1.ObjectMeta{}) // nothing to clear, no panic
}

func TestDeferScaleDownRequestIsComparesTheWrittenForm(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      bool
	}{
		{name: "as written", raw: "3", want: true},
		{name: "leading zero", raw: "03"},
		{name: "plus sign", raw: "+3"},
		{name: "not a number", raw: "three"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Annotations: map[string]string{DeferScaleDownToAnnotation: tc.raw}}
			assert.Equal(t, tc.want, DeferScaleDownRequestIs(obj, 3))
			assert.True(t, HasDeferScaleDownRequest(obj), "present, valid or not")
		})
	}
}

func TestDeferScaleDownRequestOfRefusesWhatIsNoCount(t *testing.T) {
	for _, raw := range []string{"", "-1", "two", "4294967296"} {
		t.Run(raw, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Annotations: map[string]string{DeferScaleDownToAnnotation: raw}}
			_, ok := DeferScaleDownRequestOf(obj)
			assert.False(t, ok)
		})
	}
}

func TestDeferScaleDownChoiceRoundTrip(t *testing.T) {
	obj := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}
	SetDeferScaleDownChoice(obj, 1, []string{"web-c", "web-b"})
	assert.Equal(t, "1:web-c,web-b", obj.Annotations[DeferScaleDownChoiceAnnotation])
	to, pods, ok := DeferScaleDownChoiceOf(obj)
	require.True(t, ok)
	assert.Equal(t, int32(1), to)
	assert.Equal(t, []string{"web-c", "web-b"}, pods)
	assert.True(t, InDeferScaleDown(obj), "a choice without a request is still carried out")

	SetDeferScaleDownChoice(obj, 2, []string{"web-a"})
	assert.Equal(t, "2:web-a", obj.Annotations[DeferScaleDownChoiceAnnotation], "a new choice replaces the old")

	SetDeferScaleDownChoice(obj, 0, nil)
	to, pods, ok = DeferScaleDownChoiceOf(obj)
	assert.Equal(t, "0:", obj.Annotations[DeferScaleDownChoiceAnnotation])
	assert.True(t, ok)
	assert.Equal(t, int32(0), to)
	assert.Empty(t, pods)

	for _, raw := range []string{"web-a", "x:web-a", "-1:web-a"} {
		_, _, ok := DeferScaleDownChoiceOf(&metav1.ObjectMeta{Annotations: map[string]string{DeferScaleDownChoiceAnnotation: raw}})
		assert.False(t, ok, raw)
	}
}

func TestEndDeferScaleDownRequestMovesTheChoiceToRemoving(t *testing.T) {
	obj := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}
	SetDeferScaleDownRequest(obj, 1)
	SetDeferScaleDownChoice(obj, 1, []string{"web-c", "web-b"})

	EndDeferScaleDownRequest(obj, []string{"web-c", "web-b"})
	assert.Equal(t, map[string]string{"keep": "me", DeferScaleDownRemovingAnnotation: "web-c,web-b"}, obj.Annotations)
	assert.Equal(t, []string{"web-c", "web-b"}, DeferScaleDownRemovingOf(obj))
	assert.True(t, InDeferScaleDown(obj))

	ClearDeferScaleDownRemoving(obj)
	assert.Equal(t, map[string]string{"keep": "me"}, obj.Annotations)
	assert.Empty(t, DeferScaleDownRemovingOf(obj))
	assert.False(t, InDeferScaleDown(obj))
}

func TestEndDeferScaleDownRequestWithoutChosenPodsOnlyDrops(t *testing.T) {
	obj := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}}
	SetDeferScaleDownRequest(obj, 3)
	EndDeferScaleDownRequest(obj, nil)
	assert.Equal(t, map[string]string{"keep": "me"}, obj.Annotations, "no empty removing list")
}

func TestDeferScaleDownMarkRoundTrip(t *testing.T) {
	pod := &metav1.ObjectMeta{}
	assert.Equal(t, "", DeferScaleDownMarkOf(pod))
	mark := DeferScaleDownMark("web-1", 2)
	assert.Equal(t, "web-1/2", mark)
	SetDeferScaleDownMark(pod, mark)
	assert.Equal(t, map[string]string{DeferScaleDownAnnotation: "web-1/2"}, pod.Annotations)
	assert.Equal(t, mark, DeferScaleDownMarkOf(pod))
	assert.False(t, InDeferScaleDown(pod), "the pod mark is no ReplicaSet state")
}
