package controller

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota"
	"github.com/quotagate/quotagate/pkg/quota/depend"
)

// Dependencies (docs/start-control.md): a pod may wait for objects of its own namespace
// (quotagate.io/wait-for). The manager watches Jobs, Deployments and
// PersistentVolumeClaims, kept as little more than their status (dependencyTransform),
// and the metadata of ConfigMaps and (with Options.WatchSecrets) Secrets, never their
// data (Controller.setupDependencies). It resolves a pod that names any against what it knows
// of them (quota.ResolveDependencies) and gives the core the pod again whenever one of
// them changes, or a cycle between workloads forms or goes.
//
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;configmaps,verbs=get;list;watch
//
// Secrets only with Options.WatchSecrets, whose RBAC the chart grants apart
// (manager.watchSecrets): list and watch on Secrets is read access to all of them.

// dependencyIndex is what the manager knows of the objects pods wait for, and which
// pods wait for each.
//
// mu is held while a pod is resolved and given to the core, and while an event of an
// object is applied and its pods given again: a pod's view in the core is never older
// than the objects it was resolved with. When both are needed, claimIndex.mu is taken
// first.
type dependencyIndex struct {
	mu sync.Mutex
	// objects are the states of the objects that exist, by dependencyKey.
	objects map[dependencyKey]depend.Status
	// users are the pods (by UID, with their namespace/name) that wait for an object;
	// waits is what each pod waits for, and as a pod of which workload.
	users map[dependencyKey]map[types.UID]string
	waits map[types.UID]podWaits
	// graph holds which workloads wait for which objects: cycles between them.
	graph *depend.Graph
	// podGroups are the Kubernetes PodGroups that exist, by podGroupKey; their pods are
	// among the users too (quota.ResolvePodGroup).
	podGroups map[dependencyKey]groupRec
	// composites are the CompositePodGroups that exist, by compositeKey.
	composites map[dependencyKey]groupRec
	// watchSecrets: Secrets are watched (Options.WatchSecrets); else a pod that waits
	// for one is told it never will be ready.
	watchSecrets bool
}

type dependencyKey struct {
	namespace string
	depend.Dependency
}

// podWaits is what one pod waits for.
type podWaits struct {
	namespace string
	names     []depend.Dependency
	// podGroup is the PodGroup it names ("" for none).
	podGroup string
	// owner is the pod's Job or Deployment, when it has one (depend.OwnerOf).
	owner    depend.Dependency
	hasOwner bool
}

// waitsOf is what p, the view of cp, waits for.
func waitsOf(p quota.Pod, cp *cachedPod) podWaits {
	w := podWaits{namespace: p.Namespace}
	if p.Dependencies != nil {
		w.names = p.Dependencies.Names
		if cp.owner != nil {
			w.owner, w.hasOwner = *cp.owner, true
		}
	}
	if p.PodGroup != nil {
		w.podGroup = p.PodGroup.Name
	}
	return w
}

func (w podWaits) equal(o podWaits) bool {
	return w.namespace == o.namespace && w.podGroup == o.podGroup && w.owner == o.owner && w.hasOwner == o.hasOwner && slices.Equal(w.names, o.names)
}

func newDependencyIndex() *dependencyIndex {
	return &dependencyIndex{
		objects: map[dependencyKey]depend.Status{},
		users:   map[dependencyKey]map[types.UID]string{},
		waits:   map[types.UID]podWaits{},
		graph:   depend.NewGraph(),

		podGroups:  map[dependencyKey]groupRec{},
		composites: map[dependencyKey]groupRec{},
	}
}

// resolve gives p, the view of cp, its verdict, and records what it waits for. It
// returns whether the workloads' graph changed (a cycle may have formed or gone). mu
// must be held.
func (x *dependencyIndex) resolve(p quota.Pod, cp *cachedPod) (quota.Pod, bool) {
	w := waitsOf(p, cp)
	if old, ok := x.waits[p.UID]; ok && old.equal(w) {
		return x.view(p, w), false // the same as before: nothing to record again
	}
	changed := x.forget(p.UID)
	if len(w.names) == 0 && w.podGroup == "" {
		return p, changed
	}
	if w.hasOwner {
		x.graph.Add(p.Namespace, w.owner, w.names)
		changed = true
	}
	key := p.Namespace + "/" + p.Name
	for _, k := range w.keys() {
		if x.users[k] == nil {
			x.users[k] = map[types.UID]string{}
		}
		x.users[k][p.UID] = key
	}
	x.waits[p.UID] = w
	return x.view(p, w), changed
}

// keys are the objects a pod's events depend on: what it waits for, and its PodGroup.
func (w podWaits) keys() []dependencyKey {
	out := make([]dependencyKey, 0, len(w.names)+1)
	for _, d := range w.names {
		out = append(out, dependencyKey{w.namespace, d})
	}
	if w.podGroup != "" {
		out = append(out, podGroupKey(w.namespace, w.podGroup))
	}
	return out
}

// view is p with the verdict on what it waits for (w), grouped by its PodGroup. mu
// must be held.
func (x *dependencyIndex) view(p quota.Pod, w podWaits) quota.Pod {
	if w.podGroup != "" {
		p = quota.ResolvePodGroup(p, x.podGroupInfo(w.namespace, w.podGroup))
	}
	if len(w.names) == 0 {
		return p
	}
	cycle := ""
	if w.hasOwner {
		if path, ok := x.graph.Cycle(w.namespace, w.owner); ok {
			cycle = depend.CycleMessage(w.owner, path)
		}
	}
	return quota.ResolveDependencies(p, func(d depend.Dependency) depend.Status {
		if d.Kind == depend.Secret && !x.watchSecrets {
			return depend.Status{State: depend.Failed, Message: fmt.Sprintf("%s: this quotagate does not watch Secrets (the manager's --watch-secrets, the chart's manager.watchSecrets)", d)}
		}
		if s, ok := x.objects[dependencyKey{w.namespace, d}]; ok {
			return s
		}
		return depend.Missing(d)
	}, cycle)
}

// forget drops a pod from the users and the graph, and reports whether the graph
// changed. mu must be held.
func (x *dependencyIndex) forget(uid types.UID) bool {
	w, ok := x.waits[uid]
	if !ok {
		return false
	}
	for _, k := range w.keys() {
		delete(x.users[k], uid)
		if len(x.users[k]) == 0 {
			delete(x.users, k)
		}
	}
	if w.hasOwner {
		x.graph.Remove(w.namespace, w.owner, w.names)
	}
	delete(x.waits, uid)
	return w.hasOwner
}

// podsOf returns the pods (namespace/name) that wait for k, or, when all is set, every
// pod of k's namespace that waits for anything. mu must be held.
func (x *dependencyIndex) podsOf(k dependencyKey, all bool) []string {
	if !all {
		var out []string
		for _, pod := range x.users[k] {
			out = append(out, pod)
		}
		return out
	}
	seen := map[string]bool{}
	for uk, users := range x.users {
		if uk.namespace != k.namespace {
			continue
		}
		for _, pod := range users {
			seen[pod] = true
		}
	}
	out := make([]string, 0, len(seen))
	for pod := range seen {
		out = append(out, pod)
	}
	return out
}

// upsertPods gives the core again the pods of the keys (namespace/name) from the pod
// cache.
func (c *Controller) upsertPods(keys []string) {
	if len(keys) == 0 {
		return
	}
	for _, podKey := range keys {
		item, exists, err := c.pods.GetByKey(podKey)
		if err != nil || !exists {
			continue // its delete event forgets it
		}
		if cp, ok := item.(*cachedPod); ok {
			c.upsertPod(cp)
		}
	}
	c.wake()
}

// resolveDependencies gives p, the view of cp, its verdict when it waits for anything,
// and hands it to the core (upsert) while dependencies.mu is held. When the workloads'
// graph changed (a cycle may have formed or gone) it returns the other pods of p's
// namespace that wait for anything: the caller gives them again (upsertPods) once it
// holds no lock.
func (c *Controller) resolveDependencies(p quota.Pod, cp *cachedPod) (quota.Pod, []string) {
	x := c.dependencies
	if x == nil {
		c.core.UpsertPod(p)
		return p, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if p.Dependencies == nil && p.PodGroup == nil {
		if _, waited := x.waits[p.UID]; !waited {
			c.core.UpsertPod(p)
			return p, nil
		}
	}
	p, changed := x.resolve(p, cp)
	c.core.UpsertPod(p)
	if !changed {
		return p, nil
	}
	var others []string
	for _, k := range x.podsOf(dependencyKey{namespace: p.Namespace}, true) {
		if k != p.Namespace+"/"+p.Name {
			others = append(others, k)
		}
	}
	return p, others
}

// forgetDependencyUser drops a deleted pod from what waits, and gives the core again
// the pods whose cycle it may have closed.
func (c *Controller) forgetDependencyUser(uid types.UID, namespace string) {
	x := c.dependencies
	if x == nil {
		return
	}
	x.mu.Lock()
	var others []string
	if x.forget(uid) {
		others = x.podsOf(dependencyKey{namespace: namespace}, true)
	}
	x.mu.Unlock()
	c.upsertPods(others)
}
