package listwatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/stagehand-dev/stagehand/internal/listwatch"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
}

// recorded returns the options of the client's list and watch requests.
func recorded(client *fake.Clientset) (lists, watches []metav1.ListOptions) {
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			lists = append(lists, metav1.ListOptions{
				LabelSelector: a.ListRestrictions.Labels.String(), FieldSelector: a.ListRestrictions.Fields.String()})
		case k8stesting.WatchActionImpl:
			watches = append(watches, metav1.ListOptions{
				LabelSelector: a.WatchRestrictions.Labels.String(), FieldSelector: a.WatchRestrictions.Fields.String()})
		}
	}
	return lists, watches
}

func TestNarrowing(t *testing.T) {
	tests := []struct {
		name string
		lw   func(*fake.Clientset) cache.ListerWatcher
		want metav1.ListOptions
	}{
		{
			name: "by name",
			lw: func(c *fake.Clientset) cache.ListerWatcher {
				pods := c.CoreV1().Pods("ns")
				return listwatch.ByName("web-1", pods.List, pods.Watch, nil)
			},
			want: metav1.ListOptions{FieldSelector: "metadata.name=web-1"},
		},
		{
			name: "by labels",
			lw: func(c *fake.Clientset) cache.ListerWatcher {
				pods := c.CoreV1().Pods("ns")
				return listwatch.ByLabels("app=web", pods.List, pods.Watch, nil)
			},
			want: metav1.ListOptions{LabelSelector: "app=web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			lw := cache.ToListerWatcherWithContext(tt.lw(client))
			_, err := lw.ListWithContext(context.Background(), metav1.ListOptions{FieldSelector: "x=y", LabelSelector: "x=y"})
			require.NoError(t, err)
			w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			w.Stop()
			lists, watches := recorded(client)
			require.Len(t, lists, 1)
			require.Len(t, watches, 1)
			for _, got := range []metav1.ListOptions{lists[0], watches[0]} {
				if tt.want.FieldSelector != "" {
					assert.Equal(t, tt.want.FieldSelector, got.FieldSelector)
				}
				if tt.want.LabelSelector != "" {
					assert.Equal(t, tt.want.LabelSelector, got.LabelSelector)
				}
			}
		})
	}
}

func TestWatchListSemantics(t *testing.T) {
	client := fake.NewClientset()
	pods := client.CoreV1().Pods("ns")
	assert.True(t, watchlist.DoesClientNotSupportWatchListSemantics(listwatch.ByName("p", pods.List, pods.Watch, client)),
		"a client that says it cannot stream the initial list is heard")
	assert.True(t, watchlist.DoesClientNotSupportWatchListSemantics(listwatch.ByLabels("a=b", pods.List, pods.Watch, client)))
	assert.False(t, watchlist.DoesClientNotSupportWatchListSemantics(listwatch.ByName("p", pods.List, pods.Watch, nil)),
		"without a client, the feature gate decides")
	assert.IsType(t, &cache.ListWatch{}, listwatch.ByName("p", pods.List, pods.Watch, nil))
}

func TestUntil(t *testing.T) {
	errBoom := errors.New("boom")
	named := func(name string) func(obj runtime.Object) bool {
		return func(obj runtime.Object) bool { p, ok := obj.(*corev1.Pod); return ok && p.Name == name }
	}
	tests := []struct {
		name    string
		objects []runtime.Object
		pre     func(cache.Store) (bool, error)
		cond    func(watch.Event) (bool, error)
		timeout time.Duration
		want    error
	}{
		{
			name:    "the precondition judges the first list",
			objects: []runtime.Object{pod("web-1", nil)},
			pre: func(s cache.Store) (bool, error) {
				_, exists, err := s.GetByKey("ns/web-1")
				return exists, err
			},
			cond:    func(watch.Event) (bool, error) { return false, nil },
			timeout: 10 * time.Second,
		},
		{
			name:    "the condition ends the wait",
			objects: []runtime.Object{pod("web-1", nil)},
			cond:    func(ev watch.Event) (bool, error) { return named("web-1")(ev.Object), nil },
			timeout: 10 * time.Second,
		},
		{
			name:    "a condition's error is returned as it is",
			objects: []runtime.Object{pod("web-1", nil)},
			cond:    func(watch.Event) (bool, error) { return false, errBoom },
			timeout: 10 * time.Second,
			want:    errBoom,
		},
		{
			name:    "an interrupted wait is ctx.Err()",
			cond:    func(watch.Event) (bool, error) { return false, nil },
			timeout: 50 * time.Millisecond,
			want:    context.DeadlineExceeded,
		},
		{
			name:    "an interrupted wait is ctx.Err(), with a precondition too",
			pre:     func(cache.Store) (bool, error) { return false, nil },
			cond:    func(watch.Event) (bool, error) { return false, nil },
			timeout: 50 * time.Millisecond,
			want:    context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objects...)
			pods := client.CoreV1().Pods("ns")
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			err := listwatch.Until(ctx, listwatch.ByName("web-1", pods.List, pods.Watch, client), &corev1.Pod{}, tt.pre, tt.cond)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tt.want, err) // the error itself, not one that wraps it
		})
	}
}
