package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// -w: the commands list what they show, print it, then watch from the list's
// resourceVersion, as kubectl get -w does: every change after the list arrives once,
// and nothing is polled. A watch the API server closes is reopened from the last
// version seen (client-go's RetryWatcher); one whose version has expired (410 Gone)
// ends the command with an error, as kubectl's does.

// watchFrom watches the objects of list's kind that opts select, from resourceVersion
// rv.
func watchFrom(ctx context.Context, c client.WithWatch, list client.ObjectList, rv string, opts ...client.ListOption) (watch.Interface, error) {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, raw metav1.ListOptions) (watch.Interface, error) {
		lo := &client.ListOptions{Raw: &raw}
		lo.ApplyOptions(opts)
		return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), lo)
	}}
	// The RetryWatcher logs a refused watch before it reports it as an event; the
	// command reports it once, as an error.
	ctx = klog.NewContext(ctx, logr.Discard())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return nil, fmt.Errorf("watching: %w", err)
	}
	return w, nil
}

// errWatchEnded says that a watch ended while the command still wanted its events.
var errWatchEnded = errors.New("the watch ended")

// nextEvent waits for the next event of either watch (either may be nil) that is an
// add, an update or a delete. It returns false when ctx is done; an error event or a
// closed watch is an error.
func nextEvent(ctx context.Context, a, b watch.Interface) (watch.Event, bool, error) {
	events := func(w watch.Interface) <-chan watch.Event {
		if w == nil {
			return nil
		}
		return w.ResultChan()
	}
	ac, bc := events(a), events(b)
	for {
		var ev watch.Event
		var open bool
		select {
		case <-ctx.Done():
			return watch.Event{}, false, nil
		case ev, open = <-ac:
		case ev, open = <-bc:
		}
		switch {
		case !open && ctx.Err() != nil:
			return watch.Event{}, false, nil
		case !open:
			return watch.Event{}, false, errWatchEnded
		case ev.Type == watch.Error:
			return watch.Event{}, false, fmt.Errorf("watching: %w", apierrors.FromObject(ev.Object))
		case ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted:
			return ev, true, nil
		}
	}
}
