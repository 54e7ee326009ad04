package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/internal/loglevel"
	"github.com/quotagate/quotagate/pkg/gates"
)

// Releasing pinned ResourceClaims (claimpins.go says when, and why it is safe): a queue
// of claims to check, filled by events and drained by the leader.

// releaseClaim removes v1alpha1.ChargedFinalizer from the claim key (namespace/name) if no
// pod that uses it may run with it. retry asks for another try after a backoff.
func (c *Controller) releaseClaim(ctx context.Context, key string) (retry bool, err error) {
	unlock := c.pins.locks.lock(key)
	defer unlock()
	ns, name, _ := strings.Cut(key, "/")
	read := func() (*resourceapi.ResourceClaim, bool, error) {
		claim, gone, err := c.readFreshClaim(ctx, ns, name)
		switch {
		case err != nil:
			return nil, false, fmt.Errorf("reading ResourceClaim %s: %w", key, err)
		case gone:
			c.pins.settle(key)
			return nil, true, nil
		}
		if rv, ok := c.pins.unsettledAt(key); ok && rv != claim.ResourceVersion {
			c.pins.settle(key) // the earlier release applied, or never will
		}
		return claim, false, nil
	}
	if _, ok := c.pins.unsettledAt(key); ok {
		// Settle an earlier release first, even if a pod holds the claim now.
		if _, gone, err := read(); err != nil || gone {
			return err != nil, err
		}
	}
	if c.claimHeld(key) {
		return false, nil // an event of the pods that hold it checks it again
	}
	claim, gone, err := read()
	if err != nil || gone {
		return err != nil, err
	}
	i := slices.Index(claim.Finalizers, v1alpha1.ChargedFinalizer)
	if i < 0 {
		return false, nil
	}
	err = c.patchClaim(ctx, claim, releasePatch(claim, i))
	if err == nil {
		c.pins.settle(key)
		log.FromContext(ctx).V(loglevel.Events).Info("Released ResourceClaim: no pod that may run uses it any more", "resourceClaim", klog.KObj(claim))
		return false, nil
	}
	fresh, gone, ferr := c.readFreshClaim(ctx, ns, name)
	switch {
	case gone:
		c.pins.settle(key)
		return false, nil
	case ferr != nil || fresh.ResourceVersion == claim.ResourceVersion:
		// Not applied yet as far as anyone knows, and it may still be: no pin of the
		// claim until that is known.
		c.pins.unsettle(key, claim.ResourceVersion)
		return true, fmt.Errorf("releasing ResourceClaim %s: %w", key, err)
	}
	c.pins.settle(key)
	return slices.Contains(fresh.Finalizers, v1alpha1.ChargedFinalizer), nil
}

// claimHeld reports whether a pod that uses the claim key (namespace/name) may run with it.
func (c *Controller) claimHeld(key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	c.claims.mu.Lock()
	users := maps.Clone(c.claims.users[claimKey(ns, name)])
	c.claims.mu.Unlock()
	for uid, podKey := range users {
		if c.podMayRun(uid, podKey) {
			return true
		}
	}
	return false
}

// podMayRun reports whether the pod uid (namespace/name podKey) may run with its claims,
// as claimpins.go says.
func (c *Controller) podMayRun(uid types.UID, podKey string) bool {
	pinning, sent := c.pins.mark(uid)
	if pinning {
		return true
	}
	item, exists, err := c.pods.GetByKey(podKey)
	if err != nil {
		return true // not known: keep the pin
	}
	cp, ok := item.(*cachedPod)
	if !exists || !ok || cp.view.UID != uid {
		return false
	}
	switch {
	case cp.view.Terminal:
		return false
	case !gates.Contains(cp.gates, c.opts.Gate):
		return true
	}
	return sent != "" && !newerVersion(cp.view.ResourceVersion, sent)
}

// checkClaimsOf queues for a check the pinned claims of a pod that may no longer run
// with them: deleted, ended, or seen gated.
func (c *Controller) checkClaimsOf(cp *cachedPod, deleted bool) {
	if c.claims == nil || len(cp.claims) == 0 {
		return
	}
	if !deleted && !cp.view.Terminal && !gates.Contains(cp.gates, c.opts.Gate) {
		return
	}
	c.claims.mu.Lock()
	var keys []string
	for _, pc := range cp.claims {
		if k := cp.view.Namespace + "/" + pc.ClaimName; pc.ClaimName != "" && c.claims.pinned(k) {
			keys = append(keys, k)
		}
	}
	c.claims.mu.Unlock()
	for _, k := range keys {
		c.pins.check(k)
	}
}

// runClaimReleases releases claims from the queue until ctx ends; leader only. It first
// queues every pinned claim: its last pod may have ended before this leader started.
func (c *Controller) runClaimReleases(ctx context.Context) {
	q := c.pins.queue
	c.claims.mu.Lock()
	for key, e := range c.claims.claims {
		if e.pinned {
			q.Add(key)
		}
	}
	c.claims.mu.Unlock()
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	logger := log.FromContext(ctx)
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		retry, err := c.releaseClaim(ctx, key)
		if err != nil {
			logger.Error(err, "Releasing ResourceClaim; retrying", "resourceClaim", key)
		}
		if retry {
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}
