package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/internal/loglevel"
)

// catchUpPageSize bounds the memory of the catch-up read.
const catchUpPageSize = 500

// retryBackoff is how the manager's own writes and reads are retried until they
// succeed: 100 ms, doubling, at most 10 s.
func retryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 10 * time.Second}
}

// catchUpUntilDone retries catchUp with a backoff until it succeeds or ctx ends.
func (c *Controller) catchUpUntilDone(ctx context.Context) error {
	logger := log.FromContext(ctx)
	return wait.ExponentialBackoffWithContext(ctx, retryBackoff(), func(ctx context.Context) (bool, error) {
		start := c.opts.Clock.Now()
		n, err := c.catchUp(ctx)
		if err != nil {
			logger.Error(err, "Catching up with the API server before admitting; retrying")
			return false, nil
		}
		logger.V(loglevel.Events).Info("Caught up with the API server", "pods", n, "took", c.opts.Clock.Since(start))
		return true, nil
	})
}

// catchUp reads the pods of every namespace where the core has gated pods or that is
// opted in, fresh from the API server (a quorum list, paginated), and gives each to the
// core as the newest view of it. A pod the previous leader ungated just before it died
// is then charged even if the informer has not delivered that update yet. Views older
// than what the core has are ignored by the core, and pods deleted while the read runs
// are skipped, so a slow read never undoes the informer's newer news.
func (c *Controller) catchUp(ctx context.Context) (int, error) {
	c.mu.Lock()
	c.deleted = map[types.UID]struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.deleted = nil
		c.mu.Unlock()
	}()
	n := 0
	for _, ns := range c.core.CatchUpNamespaces() {
		opts := []client.ListOption{client.InNamespace(ns), client.Limit(catchUpPageSize)}
		for {
			list := &corev1.PodList{}
			if err := c.apiReader.List(ctx, list, opts...); err != nil {
				return n, fmt.Errorf("listing pods of namespace %s: %w", ns, err)
			}
			for i := range list.Items {
				pod := &list.Items[i]
				c.mu.Lock()
				_, gone := c.deleted[pod.UID]
				c.mu.Unlock()
				if !gone {
					c.observe(pod)
					n++
				}
			}
			if list.Continue == "" {
				break
			}
			opts = []client.ListOption{client.InNamespace(ns), client.Limit(catchUpPageSize), client.Continue(list.Continue)}
		}
	}
	return n, nil
}

// observe gives the core a pod read from the API server, as the informer would.
func (c *Controller) observe(pod *corev1.Pod) {
	c.onPod(pod, false)
}
