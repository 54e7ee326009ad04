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

// Releasing pinned ResourceClaims (claimPins says when, and why it is safe): a queue
// of claims to check, filled by events and drained by the leader.

// release removes v1alpha1.ChargedFinalizer from the claim key (namespace/name) if no
// pod that uses it may run with it. retry asks for another try after a backoff.
func (p *claimPins) release(ctx context.Context, key string) (retry bool, err error) {
	unlock := p.locks.lock(key)
	defer unlock()
	ns, name, _ := strings.Cut(key, "/")
	read := func() (*resourceapi.ResourceClaim, bool, error) {
		claim, gone, err := p.readFresh(ctx, ns, name)
		switch {
		case err != nil:
			return nil, false, fmt.Errorf("reading ResourceClaim %s: %w", key, err)
		case gone:
			p.settle(key)
			return nil, true, nil
		}
		if rv, ok := p.unsettledAt(key); ok && rv != claim.ResourceVersion {
			p.settle(key) // the earlier release applied, or never will
		}
		return claim, false, nil
	}
	if _, ok := p.unsettledAt(key); ok {
		// Settle an earlier release first, even if a pod holds the claim now.
		if _, gone, err := read(); err != nil || gone {
			return err != nil, err
		}
	}
	if p.held(key) {
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
	err = p.patch(ctx, claim, releasePatch(claim, i))
	if err == nil {
		p.settle(key)
		log.FromContext(ctx).V(loglevel.Events).Info("Released ResourceClaim: no pod that may run uses it any more", "resourceClaim", klog.KObj(claim))
		return false, nil
	}
	fresh, gone, ferr := p.readFresh(ctx, ns, name)
	switch {
	case gone:
		p.settle(key)
		return false, nil
	case ferr != nil || fresh.ResourceVersion == claim.ResourceVersion:
		// Not applied yet as far as anyone knows, and it may still be: no pin of the
		// claim until that is known.
		p.unsettle(key, claim.ResourceVersion)
		return true, fmt.Errorf("releasing ResourceClaim %s: %w", key, err)
	}
	p.settle(key)
	return slices.Contains(fresh.Finalizers, v1alpha1.ChargedFinalizer), nil
}

// held reports whether a pod that uses the claim key (namespace/name) may run with it.
func (p *claimPins) held(key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	p.index.mu.Lock()
	users := maps.Clone(p.index.users[claimKey(ns, name)])
	p.index.mu.Unlock()
	for uid, podKey := range users {
		if p.podMayRun(uid, podKey) {
			return true
		}
	}
	return false
}

// podMayRun reports whether the pod uid (namespace/name podKey) may run with its claims,
// as claimPins says.
func (p *claimPins) podMayRun(uid types.UID, podKey string) bool {
	pinning, sent := p.mark(uid)
	if pinning {
		return true
	}
	item, exists, err := p.pods.GetByKey(podKey)
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
	case !gates.Contains(cp.gates, p.gate):
		return true
	}
	return sent != "" && !newerVersion(cp.view.ResourceVersion, sent)
}

// checkClaimsOf queues for a check the pinned claims of a pod that may no longer run
// with them: deleted, ended, or seen gated. Safe on a nil claimPins (no DRA).
func (p *claimPins) checkClaimsOf(cp *cachedPod, deleted bool) {
	if p == nil || len(cp.claims) == 0 {
		return
	}
	if !deleted && !cp.view.Terminal && !gates.Contains(cp.gates, p.gate) {
		return
	}
	p.index.mu.Lock()
	var keys []string
	for _, pc := range cp.claims {
		if k := cp.view.Namespace + "/" + pc.ClaimName; pc.ClaimName != "" && p.index.pinned(k) {
			keys = append(keys, k)
		}
	}
	p.index.mu.Unlock()
	for _, k := range keys {
		p.check(k)
	}
}

// run releases claims from the queue until ctx ends; leader only. It first
// queues every pinned claim: its last pod may have ended before this leader started.
func (p *claimPins) run(ctx context.Context) {
	q := p.queue
	p.index.mu.Lock()
	for key, e := range p.index.claims {
		if e.pinned {
			q.Add(key)
		}
	}
	p.index.mu.Unlock()
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
		retry, err := p.release(ctx, key)
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
