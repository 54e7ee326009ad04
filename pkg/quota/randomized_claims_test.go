package quota

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// Devices in the randomized model: some pods use one of a few ResourceClaims of their
// namespace, shared with other pods, and some budgets limit the claims' device class.
// The model charges a claim once per budget, while any charged pod it covers uses it.

// worldDevices is the quota name the model's claims charge.
const worldDevices corev1.ResourceName = "gpu.deviceclass.resource.k8s.io/devices"

// newWorldClaims are claim-0, claim-1 and claim-2 of every namespace of the world, of
// 1, 2 and 3 devices.
func newWorldClaims() fakeSpecs {
	specs := fakeSpecs{claims: map[string]*resourceapi.ResourceClaimSpec{}}
	for _, ns := range worldNamespaces {
		for i := range 3 {
			specs.claims[fmt.Sprintf("%s/claim-%d", ns, i)] = claimSpec(exactly("gpu", int64(i+1)))
		}
	}
	return specs
}

// randomClaim gives one pod in four a shared claim.
func (w *world) randomClaim(p *mPod) {
	if w.rng.IntN(4) > 0 {
		return
	}
	name := fmt.Sprintf("claim-%d", w.rng.IntN(3))
	p.obj.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
	p.claim = p.obj.Namespace + "/" + name
	spec, _ := w.claims.Claim(p.obj.Namespace, name)
	p.claimUsage = ClaimUsage(spec, w.claims.ExtendedResourceName)
	addTo(p.usage, p.claimUsage)
}

// withClaims is the controller's part: the view resolved against the world's claims.
func (w *world) withClaims(pod Pod, obj *corev1.Pod) Pod {
	return WithClaims(pod, PodClaims(obj), w.claims)
}

// swapClaim is the tenant deleting a claim of its namespace and creating one of the
// same name for another number of devices. The manager pins a claim that an admitted
// pod uses (a finalizer, so the claim cannot go while it is charged), so only a claim
// that no admitted pod uses can be swapped; the gated pods that use it are then
// charged the new one when they are admitted, and nothing else changes.
func (w *world) swapClaim() {
	ns := worldNamespaces[w.rng.IntN(len(worldNamespaces))]
	key := fmt.Sprintf("%s/claim-%d", ns, w.rng.IntN(3))
	for _, p := range w.pods {
		if p.claim == key && p.state != mGated {
			return // pinned
		}
	}
	n := int64(1 + w.rng.IntN(8))
	w.claims.claims[key] = claimSpec(exactly("gpu", n))
	w.logf("claim %s re-created for %d devices", key, n)
	for _, uid := range slices.Sorted(mapsKeys(w.pods)) {
		p := w.pods[uid]
		if p.claim != key {
			continue
		}
		subtractFrom(p.usage, p.claimUsage)
		spec, _ := w.claims.Claim(ns, strings.TrimPrefix(key, ns+"/"))
		p.claimUsage = ClaimUsage(spec, w.claims.ExtendedResourceName)
		addTo(p.usage, p.claimUsage)
		w.view(p) // the controller gives the core the pod again when a claim it uses changes
		// The controller resolves claims when it gives a view to the core, so a late
		// view of the pod (a failover's lagging cache) carries the new claim too.
		p.prevView = p.lastView
	}
}

// claimsCharged are, per budget, the claims some charged pod it covers uses.
func (w *world) claimsCharged() map[BudgetKey]map[string]bool {
	out := map[BudgetKey]map[string]bool{}
	for _, p := range w.pods {
		if p.state == mGated || p.claim == "" {
			continue
		}
		for _, k := range w.charged(p) {
			if out[k] == nil {
				out[k] = map[string]bool{}
			}
			out[k][p.claim] = true
		}
	}
	return out
}

// addsTo is what admitting p adds to budget k: its usage, less its claim when k
// charges that already.
func (p *mPod) addsTo(k BudgetKey, charged map[BudgetKey]map[string]bool) corev1.ResourceList {
	if p.claim == "" || !charged[k][p.claim] {
		return clampedUsage(p.usage)
	}
	out := corev1.ResourceList{}
	addTo(out, clampedUsage(p.usage))
	subtractFrom(out, p.claimUsage)
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
