package controller_test

// Fakes for the release tests: a clientset that pages its lists, and one that counts them.

import (
	"cmp"
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
)

// pagedClientset is a fake clientset whose pod List honours Limit and Continue the way
// the API server does (the fake's tracker ignores them): pods in namespace/name order,
// the continue token being the last key served. It records the Limit of every List and
// the largest page served.
type pagedClientset struct {
	*fake.Clientset
	mu         sync.Mutex
	limits     []int64
	maxPage    int
	lists      int
	beforeList func(call int, continueToken string) error // may add pods or fail the call
}

func newPagedClientset(objs ...runtime.Object) *pagedClientset {
	cs := &pagedClientset{Clientset: fake.NewClientset(objs...)}
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).GetListOptions()
		cs.mu.Lock()
		cs.lists++
		call := cs.lists
		cs.limits = append(cs.limits, opts.Limit)
		hook := cs.beforeList
		cs.mu.Unlock()
		if hook != nil {
			if err := hook(call, opts.Continue); err != nil {
				return true, nil, err
			}
		}
		obj, err := cs.Tracker().List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		all := obj.(*corev1.PodList).Items
		key := func(p corev1.Pod) string { return p.Namespace + "/" + p.Name }
		slices.SortFunc(all, func(a, b corev1.Pod) int { return cmp.Compare(key(a), key(b)) })
		start := 0
		if opts.Continue != "" {
			start, _ = slices.BinarySearchFunc(all, opts.Continue, func(p corev1.Pod, k string) int { return cmp.Compare(key(p), k) })
			if start < len(all) && key(all[start]) == opts.Continue {
				start++
			}
		}
		page := &corev1.PodList{Items: all[start:]}
		if opts.Limit > 0 && int64(len(page.Items)) > opts.Limit {
			page.Items = page.Items[:opts.Limit]
			page.Continue = key(page.Items[len(page.Items)-1])
		}
		cs.mu.Lock()
		cs.maxPage = max(cs.maxPage, len(page.Items))
		cs.mu.Unlock()
		return true, page, nil
	})
	return cs
}

// countingLists reports the options of every pod List made through it.
type countingLists struct {
	kubernetes.Interface
	onList func(metav1.ListOptions)
}

func (c *countingLists) CoreV1() corev1client.CoreV1Interface {
	return countingCore{CoreV1Interface: c.Interface.CoreV1(), onList: c.onList}
}

type countingCore struct {
	corev1client.CoreV1Interface
	onList func(metav1.ListOptions)
}

func (c countingCore) Pods(namespace string) corev1client.PodInterface {
	return countingPods{PodInterface: c.CoreV1Interface.Pods(namespace), onList: c.onList}
}

type countingPods struct {
	corev1client.PodInterface
	onList func(metav1.ListOptions)
}

func (c countingPods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	c.onList(opts)
	return c.PodInterface.List(ctx, opts)
}
