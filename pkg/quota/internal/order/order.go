// Package order is the admission order of quotagate's core: the order in which the pods
// waiting in a budget's queues are evaluated (docs/budgets.md, "Priorities: the order, and a ceiling"). A key is
// a pod's place in it, or a group's (the key of its best gated member, which every
// gated member shares, so that a group moves as one unit); the core breaks ties between
// pods of one key by their own UIDs.
//
// A new queue order is a change here: what a key holds (Of) and how two keys compare
// (Key.Compare). The core's heaps, the StrictFIFO head, the wakes and the preemption
// order of candidates all follow Compare.
package order

import (
	"cmp"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Key is a pod's (or its group's) place in admission order. The zero Key is the place
// of no pod.
type Key struct {
	priority int32
	created  int64 // UnixNano: cheaper to compare than time.Time
	uid      types.UID
}

// Of is the key of a pod with the priority (spec.priority, 0 when unset), creation time
// and UID.
func Of(priority int32, created time.Time, uid types.UID) Key {
	return Key{priority: priority, created: created.UnixNano(), uid: uid}
}

// Compare is the admission order of keys: priority high first, then creation time (the
// older first), then UID. It returns a negative number when k comes first, a positive
// one when o does, 0 for equal keys. (Early returns, not cmp.Or: this runs in every heap
// operation, and cmp.Or would compare the UIDs every time.)
func (k *Key) Compare(o *Key) int {
	if c := cmp.Compare(o.priority, k.priority); c != 0 {
		return c
	}
	if c := cmp.Compare(k.created, o.created); c != 0 {
		return c
	}
	return cmp.Compare(k.uid, o.uid)
}
