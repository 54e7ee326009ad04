package quota

import "k8s.io/apimachinery/pkg/types"

// Reader is the core's read side: what a budget's status and queues look like now, and
// where and why a gated pod waits. Nothing it answers moves a decision, so the views
// that only read take a Reader instead of the AdmissionQueue: the visibility API
// (pages and a pod's places), the manager's /debug/queues (the snapshot) and the
// controller's Queues. The kubectl plugin reads the same answers through them
// (pkg/visibility's Client, or the snapshot), and its usage command feeds a core of its
// own and reads its Status. *AdmissionQueue is one.
type Reader interface {
	// Status is a budget's status as the controller writes it, false when the core
	// does not know the budget.
	Status(key BudgetKey) (BudgetStatus, bool)
	// Snapshot is every budget's queues in admission order.
	Snapshot() Snapshot
	// Page is one page of a budget's queue, copying only that page.
	Page(key BudgetKey, offset, limit int) (BudgetPage, bool)
	// PodWait and PodWaitByName are where one gated pod waits: each budget's place
	// and reason.
	PodWait(uid types.UID) (PodWait, bool)
	PodWaitByName(namespace, name string) (PodWait, bool)
	// WaitReason is why one gated pod waits.
	WaitReason(uid types.UID) (Reason, bool)
}

var _ Reader = (*AdmissionQueue)(nil)
