package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// The page's data comes from watches with the user's credentials: one informer each on
// Budgets, ClusterBudgets and pods, in the namespace the page is for (every namespace
// with -A). Before starting one, the server lists that kind once: a kind the user may
// not list is not watched, and the page says so instead (a refused watch would retry
// forever and show nothing).

// access is what the user may read, found by listing each kind once.
type access struct {
	// budgets, clusterBudgets and pods are nil when the user may list them, or why not.
	budgets, clusterBudgets, pods error
}

// probe lists each kind once, at most one object, in namespace ns ("" for every
// namespace), with the user's client.
func probe(ctx context.Context, c client.Client, ns string) access {
	list := func(l client.ObjectList, namespaced bool) error {
		opts := []client.ListOption{client.Limit(1)}
		if namespaced {
			opts = append(opts, client.InNamespace(ns))
		}
		return c.List(ctx, l, opts...)
	}
	return access{
		budgets:        list(&v1alpha1.BudgetList{}, true),
		clusterBudgets: list(&v1alpha1.ClusterBudgetList{}, false),
		pods:           list(&corev1.PodList{}, true),
	}
}

// explainAccess says in a sentence what a refused list means for the page.
func explainAccess(what, ns string, err error) string {
	where := "in namespace " + ns
	if ns == "" {
		where = "in every namespace (-A)"
	}
	if what == "ClusterBudgets" {
		where = "(cluster-scoped)"
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("You may not list %s %s, so the page does not show them. The API server said: %v", what, where, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Sprintf("The API server does not accept your credentials (kubeconfig) for %s: %v", what, err)
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return fmt.Sprintf("The API server does not serve %s: is quotagate installed (its CRDs)? %v", what, err)
	}
	return fmt.Sprintf("Listing %s %s failed: %v", what, where, err)
}

// store is what the watches hold, as the views read it.
type store struct {
	cache    cache.Cache
	access   access
	pods     toolscache.Store
	notifier *notifier
}

// startWatches starts informers for the kinds the user may list and waits until they
// have synced; every change marks n dirty.
func startWatches(ctx context.Context, o *Options, scheme *runtime.Scheme, n *notifier) (*store, error) {
	direct, err := client.New(o.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the API client: %w", err)
	}
	s := &store{access: probe(ctx, direct, o.Namespace), notifier: n}
	copts := cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()}
	if o.Namespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	if s.cache, err = cache.New(o.Config, copts); err != nil {
		return nil, fmt.Errorf("creating the watch cache: %w", err)
	}
	go func() { _ = s.cache.Start(ctx) }()
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.markDirty() },
		UpdateFunc: func(any, any) { n.markDirty() },
		DeleteFunc: func(any) { n.markDirty() },
	}
	kinds := []struct {
		obj client.Object
		err error
	}{{&v1alpha1.Budget{}, s.access.budgets}, {&v1alpha1.ClusterBudget{}, s.access.clusterBudgets}, {&corev1.Pod{}, s.access.pods}}
	for _, k := range kinds {
		if k.err != nil {
			continue
		}
		inf, err := s.cache.GetInformer(ctx, k.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", k.obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching %T: %w", k.obj, err)
		}
		if _, ok := k.obj.(*corev1.Pod); ok {
			if sii, ok := inf.(toolscache.SharedIndexInformer); ok {
				s.pods = sii.GetStore()
			}
		}
	}
	if !s.cache.WaitForCacheSync(ctx) {
		return nil, errors.New("the watches did not sync: " + context.Cause(ctx).Error())
	}
	return s, nil
}

// budgets are the Budgets and ClusterBudgets the user may list, shared with the cache:
// read them, never change them.
func (s *store) budgets(ctx context.Context) ([]v1alpha1.Budget, []v1alpha1.ClusterBudget) {
	var bl v1alpha1.BudgetList
	var cbl v1alpha1.ClusterBudgetList
	if s.access.budgets == nil {
		_ = s.cache.List(ctx, &bl, client.UnsafeDisableDeepCopy)
	}
	if s.access.clusterBudgets == nil {
		_ = s.cache.List(ctx, &cbl, client.UnsafeDisableDeepCopy)
	}
	return bl.Items, cbl.Items
}

// allPods are the pods the watch holds, shared with the cache.
func (s *store) allPods(ctx context.Context) []*corev1.Pod {
	if s.access.pods != nil {
		return nil
	}
	if s.pods != nil {
		objs := s.pods.List()
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p)
			}
		}
		return pods
	}
	var pl corev1.PodList
	_ = s.cache.List(ctx, &pl, client.UnsafeDisableDeepCopy)
	pods := make([]*corev1.Pod, len(pl.Items))
	for i := range pl.Items {
		pods[i] = &pl.Items[i]
	}
	return pods
}

// pod is one pod from the watch, nil when the watch holds none by that name.
func (s *store) pod(ctx context.Context, ns, name string) *corev1.Pod {
	if s.access.pods != nil {
		return nil
	}
	var p corev1.Pod
	if err := s.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		return nil
	}
	return &p
}

// notifier coalesces changes: markDirty may be called for every watch event, and
// subscribers are woken at most once per interval, after the first change in it.
type notifier struct {
	dirty chan struct{}

	mu      sync.Mutex
	version uint64
	changed chan struct{} // closed, and replaced, at each publish
}

func newNotifier() *notifier {
	return &notifier{dirty: make(chan struct{}, 1), changed: make(chan struct{})}
}

// markDirty records that something changed; it never blocks.
func (n *notifier) markDirty() {
	select {
	case n.dirty <- struct{}{}:
	default:
	}
}

// current is the version now and the channel closed when it changes.
func (n *notifier) current() (uint64, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.version, n.changed
}

func (n *notifier) publish() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.version++
	close(n.changed)
	n.changed = make(chan struct{})
}

// run publishes each change, then waits interval before the next publish: changes
// during the wait are published together after it. refresh also publishes with no
// change, so that waiting times on the page stay current.
func (n *notifier) run(ctx context.Context, interval, refresh time.Duration) {
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.dirty:
		case <-tick.C:
		}
		n.publish()
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
