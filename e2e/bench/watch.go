package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watchUntil watches from resourceVersion rv and hands every object to handle with the
// time its event arrived, until handle returns true; a watch the server closes is resumed
// from the last resource version seen.
func watchUntil(ctx context.Context, rv string, open func(metav1.ListOptions) (watch.Interface, error), handle func(runtime.Object, time.Time) bool) error {
	for {
		w, err := open(metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("timed out: %w", ctx.Err())
			}
			return err
		}
		for ev := range w.ResultChan() {
			at := time.Now()
			if ev.Type == watch.Error {
				w.Stop()
				return fmt.Errorf("watch error: %v", ev.Object)
			}
			if m, err := meta.Accessor(ev.Object); err == nil {
				rv = m.GetResourceVersion()
			}
			if ev.Type == watch.Bookmark || ev.Type == watch.Deleted {
				continue
			}
			if handle(ev.Object, at) {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("timed out: %w", ctx.Err())
		}
	}
}
