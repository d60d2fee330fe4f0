package plumbing

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Handler is an event handler and the informer it goes on.
type Handler struct {
	Informer cache.SharedIndexInformer
	Handler  cache.ResourceEventHandler
}

// OnAddOrUpdate calls changed with the object that was added or updated to, and
// ignores deletions.
func OnAddOrUpdate(changed func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, cur any) { changed(cur) }}
}

// AddHandlers adds each handler to its informer.
func AddHandlers(handlers ...Handler) error {
	for _, h := range handlers {
		if _, err := h.Informer.AddEventHandler(h.Handler); err != nil {
			return fmt.Errorf("adding an event handler: %w", err)
		}
	}
	return nil
}
