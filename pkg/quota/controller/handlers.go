package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// The handlers translate informer events into calls on the core, then wake the loop.
// They run on the informers' goroutines on every replica, leader or not, so a new
// leader starts with a warm core.

func (c *Controller) podHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initialList bool) { c.onPod(obj, initialList) },
		UpdateFunc: func(_, obj any) { c.onPod(obj, false) },
		DeleteFunc: func(obj any) {
			if pod, ok := unwrap[*cachedPod](obj); ok {
				uid := pod.view.UID
				c.mu.Lock()
				if c.deleted != nil {
					c.deleted[uid] = struct{}{}
				}
				c.mu.Unlock()
				c.core.DeletePod(uid)
				c.pins.checkClaimsOf(pod, true)
				c.pins.forget(uid)
				c.forgetClaimUser(uid)
				c.forgetDependencyUser(uid, pod.view.Namespace)
				c.waits.forget(uid)
				c.conditions.forget(uid)
				c.wake()
			}
		},
	}
}

// onPod gives the core a pod: a cachedPod from the informer, or a *corev1.Pod read
// from the API server (observe). initialList says the pod came with the informer's
// first list, so it existed before this manager started watching: its wait is then
// measured from its creationTimestamp, the only record of when it arrived (see
// noteGated).
func (c *Controller) onPod(obj any, initialList bool) {
	var cp *cachedPod
	switch pod := obj.(type) {
	case *cachedPod:
		cp = pod
	case *corev1.Pod:
		cp = compactPod(pod)
	default:
		return
	}
	// A gated pod of a namespace that is not (or no longer) opted in is released by the
	// core itself, in Admit (reason NamespaceNotEnabled), through the same patch path.
	p := c.upsertPod(cp)
	c.pins.checkClaimsOf(cp, false)
	waiting := p.Gated && !p.Terminal
	if waiting {
		c.waits.noteGated(p.PodRef, initialList)
	} else {
		c.waits.forget(p.UID)
	}
	c.conditions.observe(p.PodRef, cp.condition, waiting)
	c.wake()
}

func (c *Controller) namespaceHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNamespace(obj) },
		UpdateFunc: func(_, obj any) { c.onNamespace(obj) },
		DeleteFunc: func(obj any) {
			if ns, ok := unwrap[*corev1.Namespace](obj); ok {
				c.core.DeleteNamespace(ns.Name)
				c.wake()
			}
		},
	}
}

func (c *Controller) onNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		// The core knows the opt-in label: removing it releases the namespace's pods.
		c.core.SetNamespace(ns.Name, ns.Labels)
		c.wake()
	}
}

func (c *Controller) budgetHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onBudget(obj) },
		UpdateFunc: func(_, obj any) { c.onBudget(obj) },
		DeleteFunc: func(obj any) {
			if b, ok := unwrap[*v1alpha1.Budget](obj); ok {
				key := quota.BudgetKey{Namespace: b.Namespace, Name: b.Name}
				c.forgetBudget(key)
				c.wake()
			}
		},
	}
}

// forgetBudget drops a deleted budget from the core, the metrics and the estimates'
// track record, so that one of the same name created later starts afresh and deleted
// budgets do not hold the record's places (recordBudgets).
func (c *Controller) forgetBudget(key quota.BudgetKey) {
	c.windows.forgetBudget(key) // and from the core
	c.metrics.forgetBudget(key)
	if c.estimates != nil {
		c.estimates.Forget(key)
	}
}

func (c *Controller) onBudget(obj any) {
	if b, ok := obj.(*v1alpha1.Budget); ok {
		c.windows.setBudget(b) // its effective spec, with its open windows; wakes the loop
	}
}

func (c *Controller) clusterBudgetHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onClusterBudget(obj) },
		UpdateFunc: func(_, obj any) { c.onClusterBudget(obj) },
		DeleteFunc: func(obj any) {
			if b, ok := unwrap[*v1alpha1.ClusterBudget](obj); ok {
				key := quota.BudgetKey{Name: b.Name}
				c.forgetBudget(key)
				c.wake()
			}
		},
	}
}

func (c *Controller) onClusterBudget(obj any) {
	if b, ok := obj.(*v1alpha1.ClusterBudget); ok {
		c.windows.setBudget(b)
	}
}

func (c *Controller) flavorHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onFlavor(obj) },
		UpdateFunc: func(_, obj any) { c.onFlavor(obj) },
		DeleteFunc: func(obj any) {
			if f, ok := unwrap[*v1alpha1.Flavor](obj); ok {
				c.core.DeleteFlavor(f.Name)
				c.flavorNesting.changed()
				c.wake()
			}
		},
	}
}

func (c *Controller) onFlavor(obj any) {
	if f, ok := obj.(*v1alpha1.Flavor); ok {
		c.core.UpsertFlavor(quota.FlavorFromAPI(f))
		c.flavorNesting.changed()
		c.wake()
	}
}

func (c *Controller) budgetWindowHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onWindow(obj) },
		UpdateFunc: func(_, obj any) { c.onWindow(obj) },
		DeleteFunc: func(obj any) {
			if w, ok := unwrap[*v1alpha1.BudgetWindow](obj); ok {
				c.windows.deleteWindow(windowRef{Namespace: w.Namespace, Name: w.Name})
			}
		},
	}
}

func (c *Controller) clusterBudgetWindowHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onWindow(obj) },
		UpdateFunc: func(_, obj any) { c.onWindow(obj) },
		DeleteFunc: func(obj any) {
			if w, ok := unwrap[*v1alpha1.ClusterBudgetWindow](obj); ok {
				c.windows.deleteWindow(windowRef{Name: w.Name})
			}
		},
	}
}

// onWindow gives budgetWindows a window; the budget it names is fed again.
func (c *Controller) onWindow(obj any) {
	switch w := obj.(type) {
	case *v1alpha1.BudgetWindow:
		c.windows.setWindow(windowRef{Namespace: w.Namespace, Name: w.Name}, w.Spec)
	case *v1alpha1.ClusterBudgetWindow:
		c.windows.setWindow(windowRef{Name: w.Name}, w.Spec)
	}
}

// unwrap returns the object of a delete event, which may come as a tombstone.
func unwrap[T any](obj any) (T, bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// eventsOf is a handler that gives on each object added, updated or deleted (deleted
// true, a tombstone unwrapped to what the store held).
func eventsOf(on func(obj any, deleted bool)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj, false) },
		UpdateFunc: func(_, obj any) { on(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			on(obj, true)
		},
	}
}

// serves reports whether the API server serves kind gvk: false, without an error, when
// it does not know the group, version or kind.
func serves(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("looking up %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
}
