package controller

import (
	"context"
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/quotagate/quotagate/pkg/quota"
)

// DRA: a pod's devices are charged from the ResourceClaims and ResourceClaimTemplates it
// uses (pkg/quota/claims.go says what each charges). The manager watches them and the
// DeviceClasses (for spec.extendedResourceName), and gives the core a pod's view again
// whenever one of those it uses changes. On a cluster that does not serve
// resource.k8s.io/v1 pods cannot use claims, and nothing is counted from them.
//
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims;resourceclaimtemplates;deviceclasses,verbs=get;list;watch

// claimIndex is what the manager knows of claims, templates and device classes, and
// which pods use each claim or template. It is the quota.ClaimSpecs the pods are
// resolved against.
//
// mu is held while a pod is resolved and given to the core, and while an event of a
// claim, template or class is applied and its pods given again: a pod's view in the
// core is never older than the claims it was resolved with.
type claimIndex struct {
	mu        sync.Mutex
	claims    map[string]*resourceapi.ResourceClaimSpec // namespace/name
	templates map[string]*resourceapi.ResourceClaimSpec // namespace/name
	extended  map[string]string                         // device class -> extendedResourceName
	// users are the pods (by UID, with their namespace/name) that use a claim or
	// template, by claimKey or templateKey; uses is the reverse.
	users map[string]map[types.UID]string
	uses  map[types.UID][]string
}

var _ quota.ClaimSpecs = (*claimIndex)(nil)

func newClaimIndex() *claimIndex {
	return &claimIndex{
		claims:    map[string]*resourceapi.ResourceClaimSpec{},
		templates: map[string]*resourceapi.ResourceClaimSpec{},
		extended:  map[string]string{},
		users:     map[string]map[types.UID]string{},
		uses:      map[types.UID][]string{},
	}
}

func claimKey(namespace, name string) string    { return "claim/" + namespace + "/" + name }
func templateKey(namespace, name string) string { return "template/" + namespace + "/" + name }

// Claim, Template and ExtendedResourceName are read with mu held (by resolve).
func (x *claimIndex) Claim(namespace, name string) (*resourceapi.ResourceClaimSpec, bool) {
	s, ok := x.claims[namespace+"/"+name]
	return s, ok
}

func (x *claimIndex) Template(namespace, name string) (*resourceapi.ResourceClaimSpec, bool) {
	s, ok := x.templates[namespace+"/"+name]
	return s, ok
}

func (x *claimIndex) ExtendedResourceName(class string) string { return x.extended[class] }

// resolve charges p for its claims (quota.WithClaims) and records that it uses them.
// mu must be held.
func (x *claimIndex) resolve(p quota.Pod, claims []quota.PodClaim) quota.Pod {
	x.forget(p.UID)
	var keys []string
	for _, c := range claims {
		if c.ClaimName != "" {
			keys = append(keys, claimKey(p.Namespace, c.ClaimName))
		}
		if c.TemplateName != "" {
			keys = append(keys, templateKey(p.Namespace, c.TemplateName))
		}
	}
	for _, k := range keys {
		if x.users[k] == nil {
			x.users[k] = map[types.UID]string{}
		}
		x.users[k][p.UID] = p.Namespace + "/" + p.Name
	}
	x.uses[p.UID] = keys
	return quota.WithClaims(p, claims, x)
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

// podsOf returns the pods (namespace/name) that use a claim or template; every pod that
// uses any when key is "". mu must be held.
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
// resource.k8s.io/v1; otherwise it logs that once and leaves c.claims nil, so pods are
// charged without claims.
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
	gk := resourceapi.SchemeGroupVersion.WithKind("ResourceClaim").GroupKind()
	_, err := mapper.RESTMapping(gk, resourceapi.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("looking up resource.k8s.io/v1 ResourceClaims: %w", err)
}

func (c *Controller) claimsHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onClaimObject(obj, false) },
		UpdateFunc: func(_, obj any) { c.onClaimObject(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.onClaimObject(obj, true)
		},
	}
}

// onClaimObject applies an event of a claim, template or device class, then gives the
// core again every pod that uses what changed.
func (c *Controller) onClaimObject(obj any, deleted bool) {
	x := c.claims
	x.mu.Lock()
	defer x.mu.Unlock()
	var key string
	switch o := obj.(type) {
	case *resourceapi.ResourceClaim:
		k := o.Namespace + "/" + o.Name
		if deleted {
			delete(x.claims, k)
		} else {
			x.claims[k] = &o.Spec
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
		ext := ""
		if !deleted && o.Spec.ExtendedResourceName != nil {
			ext = *o.Spec.ExtendedResourceName
		}
		if x.extended[o.Name] == ext {
			return
		}
		if ext == "" {
			delete(x.extended, o.Name)
		} else {
			x.extended[o.Name] = ext
		}
		// key "" : a class may be used by any claim.
	default:
		return
	}
	for _, podKey := range x.podsOf(key) {
		item, exists, err := c.pods.GetByKey(podKey)
		if err != nil || !exists {
			continue // its delete event forgets it
		}
		if cp, ok := item.(*cachedPod); ok {
			c.upsertLocked(cp)
		}
	}
	c.wake()
}

// upsertLocked gives the core a pod resolved against its claims; c.claims.mu is held.
func (c *Controller) upsertLocked(cp *cachedPod) quota.Pod {
	p := c.claims.resolve(cp.at(c.opts.Clock.Now(), c.opts.Gate), cp.claims)
	c.core.UpsertPod(p)
	return p
}

// upsertPod gives the core a pod: resolved against its claims when it uses some and the
// cluster serves them.
func (c *Controller) upsertPod(cp *cachedPod) quota.Pod {
	if c.claims == nil || len(cp.claims) == 0 {
		p := cp.at(c.opts.Clock.Now(), c.opts.Gate)
		c.core.UpsertPod(p)
		return p
	}
	c.claims.mu.Lock()
	defer c.claims.mu.Unlock()
	return c.upsertLocked(cp)
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
