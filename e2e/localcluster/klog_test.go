package localcluster

import (
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

func TestRouteKlog(t *testing.T) {
	first, firstHook := test.NewNullLogger()
	first.SetLevel(logrus.DebugLevel)
	second, secondHook := test.NewNullLogger()
	second.SetLevel(logrus.DebugLevel)

	restoreFirst := RouteKlog(logrus.NewEntry(first))
	defer restoreFirst()
	klog.InfoS("informer synced", "resource", "pods")
	klog.Background().WithName("reflector").Error(errors.New("boom"), "watch ended")
	klog.Flush()

	entries := firstHook.AllEntries()
	require.Len(t, entries, 2)
	assert.Equal(t, logrus.DebugLevel, entries[0].Level)
	assert.Equal(t, "informer synced", entries[0].Message)
	assert.Equal(t, "pods", entries[0].Data["resource"])
	assert.Equal(t, logrus.ErrorLevel, entries[1].Level)
	assert.Equal(t, "reflector", entries[1].Data["logger"])
	assert.EqualError(t, entries[1].Data[logrus.ErrorKey].(error), "boom")

	// A later route wins until it is restored; then the lines go back to the first.
	restoreSecond := RouteKlog(logrus.NewEntry(second))
	klog.InfoS("to the second")
	restoreSecond()
	klog.InfoS("to the first again")
	klog.Flush()
	require.Len(t, secondHook.AllEntries(), 1)
	assert.Equal(t, "to the second", secondHook.LastEntry().Message)
	assert.Equal(t, "to the first again", firstHook.LastEntry().Message)
}
