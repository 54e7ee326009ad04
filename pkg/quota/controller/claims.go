package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// DRA: a pod's devices are charged from the ResourceClaims it uses and from the extended
// resources a DeviceClass backs (quota.ClaimCharge says what each charges). The manager
// watches claims, templates and DeviceClasses, and gives the core a pod's view again
// whenever one of those it uses changes. Before it removes a pod's gate it pins each
// claim the pod is charged for (claimPins). On a cluster that does not serve
// resource.k8s.io/v1 pods cannot use claims, and nothing is counted from them.
//
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims;resourceclaimtemplates;deviceclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=patch

// claimIndex is what the manager knows of claims, templates and device classes, and
// which pods use each claim, template or extended resource. It is the quota.ClaimSpecs
// and quota.DeviceClasses the pods are resolved against.
//
// mu is held while a pod is resolved and given to the core, and while an event of a
// claim, template or class is applied and its pods given again: a pod's view in the
// core is never older than the claims it was resolved with.
type claimIndex struct {
	mu        sync.Mutex
	claims    map[string]*claimEntry                    // namespace/name
	templates map[string]*resourceapi.ResourceClaimSpec // namespace/name
	classes   map[string]quota.DeviceClassInfo          // by name
	// backing is quota.BackingClasses of classes: the class that backs each extended
	// resource name.
	backing map[corev1.ResourceName]string
	// users are the pods (by UID, with their namespace/name) that use a claim, template
	// or extended resource, by claimKey, templateKey or extendedKey; uses is the reverse.
	users map[string]map[types.UID]string
	uses  map[types.UID][]string
}

// claimEntry is what the index keeps of a ResourceClaim.
type claimEntry struct {
	spec     *resourceapi.ResourceClaimSpec
	uid      types.UID
	deleting bool
	// pinned: the claim carries v1alpha1.ChargedFinalizer.
	pinned bool
}

var (
	_ quota.ClaimSpecs    = (*claimIndex)(nil)
	_ quota.DeviceClasses = (*claimIndex)(nil)
)

func newClaimIndex() *claimIndex {
	return &claimIndex{
		claims:    map[string]*claimEntry{},
		templates: map[string]*resourceapi.ResourceClaimSpec{},
		classes:   map[string]quota.DeviceClassInfo{},
		backing:   map[corev1.ResourceName]string{},
		users:     map[string]map[types.UID]string{},
		uses:      map[types.UID][]string{},
	}
}

func claimKey(namespace, name string) string    { return "claim/" + namespace + "/" + name }
func templateKey(namespace, name string) string { return "template/" + namespace + "/" + name }
func extendedKey(name corev1.ResourceName) string {
	return "extended/" + string(name)
}

// Claim, ClaimIdentity, Template, ExtendedResourceName and BackingClass are read with mu
// held (by resolve and view).
func (x *claimIndex) Claim(namespace, name string) (*resourceapi.ResourceClaimSpec, bool) {
	e, ok := x.claims[namespace+"/"+name]
	if !ok {
		return nil, false
	}
	return e.spec, true
}

func (x *claimIndex) ClaimIdentity(namespace, name string) (types.UID, bool) {
	e, ok := x.claims[namespace+"/"+name]
	if !ok {
		return "", false
	}
	return e.uid, e.deleting
}

func (x *claimIndex) Template(namespace, name string) (*resourceapi.ResourceClaimSpec, bool) {
	s, ok := x.templates[namespace+"/"+name]
	return s, ok
}

func (x *claimIndex) ExtendedResourceName(class string) string {
	return x.classes[class].ExtendedResourceName
}

func (x *claimIndex) BackingClass(name corev1.ResourceName) string { return x.backing[name] }

// pinned reports whether the claim namespace/name carries v1alpha1.ChargedFinalizer, as
// far as the cache knows. mu must be held.
func (x *claimIndex) pinned(key string) bool {
	e, ok := x.claims[key]
	return ok && e.pinned
}

// view is the pod charged for the devices of its extended resources and its claims.
// mu must be held.
func (x *claimIndex) view(p quota.Pod, cp *cachedPod) quota.Pod {
	return quota.WithClaims(quota.WithExtendedDevices(p, cp.extended, x), cp.claims, x)
}

// resolve charges p, the view of cp, for its devices (view) and records what it uses.
// mu must be held.
func (x *claimIndex) resolve(p quota.Pod, cp *cachedPod) quota.Pod {
	x.forget(p.UID)
	var keys []string
	for _, c := range cp.claims {
		if c.ClaimName != "" {
			keys = append(keys, claimKey(p.Namespace, c.ClaimName))
		}
		if c.TemplateName != "" {
			keys = append(keys, templateKey(p.Namespace, c.TemplateName))
		}
	}
	for name := range cp.extended {
		keys = append(keys, extendedKey(name))
	}
	for _, k := range keys {
		if x.users[k] == nil {
			x.users[k] = map[types.UID]string{}
		}
		x.users[k][p.UID] = p.Namespace + "/" + p.Name
	}
	x.uses[p.UID] = keys
	return x.view(p, cp)
}

// forget drops a pod from the users. mu must be held.
func (x *claimIndex) forget(uid types.UID) {
	for _, k := range x.uses[uid] {
		delete(x.users[k], uid)
		if len(x.users[k]) == 0 {
			delete(x.users, k)
		}
	}
	delete(x.uses, uid)
}

// podsOf returns the pods (namespace/name) that use a claim, template or extended
// resource; every pod that uses any when key is "". mu must be held.
func (x *claimIndex) podsOf(key string) []string {
	var out []string
	if key != "" {
		for _, pod := range x.users[key] {
			out = append(out, pod)
		}
		return out
	}
	seen := map[string]bool{}
	for _, users := range x.users {
		for _, pod := range users {
			if !seen[pod] {
				seen[pod] = true
				out = append(out, pod)
			}
		}
	}
	return out
}

// setupClaims watches claims, templates and device classes when the API server serves
// resource.k8s.io/v1; otherwise it logs that once and leaves c.claims and c.pins nil, so
// pods are charged without claims. c's clients and pod cache must be set (newClaimPins).
func (c *Controller) setupClaims(ctx context.Context, mgr manager.Manager) error {
	served, err := servesClaims(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if !served {
		log.FromContext(ctx).WithName("quota").Info("The API server does not serve resource.k8s.io/v1: DRA devices are not counted from ResourceClaims")
		return nil
	}
	c.claims = newClaimIndex()
	c.pins = newClaimPins(c, c.claims)
	for _, h := range []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&resourceapi.DeviceClass{}, c.claimsHandler()},
		{&resourceapi.ResourceClaimTemplate{}, c.claimsHandler()},
		{&resourceapi.ResourceClaim{}, c.claimsHandler()},
	} {
		inf, err := mgr.GetCache().GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("getting informer for %T: %w", h.obj, err)
		}
		reg, err := inf.AddEventHandler(h.handler)
		if err != nil {
			return fmt.Errorf("adding handler for %T: %w", h.obj, err)
		}
		c.registrations = append(c.registrations, reg)
	}
	return nil
}

// servesClaims reports whether the API server serves resource.k8s.io/v1 ResourceClaims.
func servesClaims(mapper meta.RESTMapper) (bool, error) {
	return serves(mapper, resourceapi.SchemeGroupVersion.WithKind("ResourceClaim"))
}

func (c *Controller) claimsHandler() toolscache.ResourceEventHandler {
	return eventsOf(c.onClaimObject)
}

// onClaimObject applies an event of a claim, template or device class, then gives the
// core again every pod that uses what changed.
func (c *Controller) onClaimObject(obj any, deleted bool) {
	x := c.claims
	// Pods that a changed dependency cycle involves are given again once x.mu is
	// released (upsertLocked): deferred before the unlock, run after it.
	var others []string
	defer func() { c.upsertPods(others) }()
	x.mu.Lock()
	defer x.mu.Unlock()
	var key string
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		k := o.Namespace + "/" + o.Name
		if deleted {
			delete(x.claims, k)
		} else {
			x.claims[k] = &claimEntry{spec: &o.Spec, uid: o.UID, deleting: o.DeletionTimestamp != nil,
				pinned: slices.Contains(o.Finalizers, v1alpha1.ChargedFinalizer)}
			if x.claims[k].pinned {
				c.pins.check(k) // whether a pod may still run with it
			}
		}
		key = claimKey(o.Namespace, o.Name)
	case *resourceapi.ResourceClaimTemplate:
		k := o.Namespace + "/" + o.Name
		if deleted {
			delete(x.templates, k)
		} else {
			x.templates[k] = &o.Spec.Spec
		}
		key = templateKey(o.Namespace, o.Name)
	case *resourceapi.DeviceClass:
		info := quota.DeviceClassInfo{Name: o.Name, Created: o.CreationTimestamp.Time}
		if o.Spec.ExtendedResourceName != nil {
			info.ExtendedResourceName = *o.Spec.ExtendedResourceName
		}
		old, known := x.classes[o.Name]
		switch {
		case deleted && !known:
			return
		case deleted:
			delete(x.classes, o.Name)
		case known && old.ExtendedResourceName == info.ExtendedResourceName && old.Created.Equal(info.Created):
			return // nothing a pod is charged by changed
		default:
			x.classes[o.Name] = info
		}
		x.backing = quota.BackingClasses(slices.Collect(maps.Values(x.classes)))
		// key "": a class may back any claim or extended resource.
	default:
		return
	}
	for _, podKey := range x.podsOf(key) {
		item, exists, err := c.pods.GetByKey(podKey)
		if err != nil || !exists {
			continue // its delete event forgets it
		}
		if cp, ok := item.(*cachedPod); ok {
			_, more := c.upsertLocked(cp)
			others = append(others, more...)
		}
	}
	c.wake()
}

// upsertLocked gives the core a pod resolved against its devices and what it waits for;
// c.claims.mu is held. The pods it returns are to be given again once it is not
// (resolveDependencies).
func (c *Controller) upsertLocked(cp *cachedPod) (quota.Pod, []string) {
	return c.resolveDependencies(c.claims.resolve(cp.at(c.opts.Clock.Now(), c.opts.Gate), cp), cp)
}

// usesDevices reports whether a pod's view depends on the DRA objects: it uses claims or
// asks extended resources that a DeviceClass may back.
func usesDevices(cp *cachedPod) bool { return len(cp.claims) > 0 || len(cp.extended) > 0 }

// upsertPod gives the core a pod: resolved against its devices when it may use some and
// the cluster serves them.
func (c *Controller) upsertPod(cp *cachedPod) quota.Pod {
	var p quota.Pod
	var others []string
	if c.claims == nil || !usesDevices(cp) {
		p, others = c.resolveDependencies(cp.at(c.opts.Clock.Now(), c.opts.Gate), cp)
	} else {
		c.claims.mu.Lock()
		p, others = c.upsertLocked(cp)
		c.claims.mu.Unlock()
	}
	c.upsertPods(others)
	return p
}

// forgetClaimUser drops a deleted pod from the claims' users.
func (c *Controller) forgetClaimUser(uid types.UID) {
	if c.claims == nil {
		return
	}
	c.claims.mu.Lock()
	defer c.claims.mu.Unlock()
	c.claims.forget(uid)
}
