package quota

import corev1 "k8s.io/api/core/v1"

// Flavor is a kind of node a budget can hold quota for (a Flavor object): the node
// labels that make a node of it, which a pod admitted on it gets in its nodeSelector,
// and the tolerations it gets with them.
type Flavor struct {
	Name        string
	NodeLabels  map[string]string
	Tolerations []corev1.Toleration
}

// FlavorQuota is one entry of a budget's spec.flavors: the quota of one flavor, as
// written (the core normalizes it as hard).
type FlavorQuota struct {
	Name           string
	Hard           corev1.ResourceList
	BorrowingLimit corev1.ResourceList
	LendingLimit   corev1.ResourceList
}

// Fungibility is a budget's spec.flavorFungibility: how a pod moves between its
// flavors. The zero value is the default: try the next flavor when one is full, stop at
// the first flavor the pod fits in by borrowing, and preempt only when no flavor has
// room.
type Fungibility struct {
	// WaitForPreferred: a pod waits for the first flavor it may use instead of taking
	// a later one (whenFull: WaitForPreferred).
	WaitForPreferred bool
	// AvoidBorrowing: a pod that fits a flavor only by borrowing tries the later
	// flavors first, and borrows only when none fits without (whenCanBorrow:
	// TryNextFlavor).
	AvoidBorrowing bool
	// StopToPreempt: a pod that does not fit a flavor but would once preemption made
	// room there stays on it and preempts, rather than take a later flavor
	// (whenCanPreempt: Preempt).
	StopToPreempt bool
}

// FlavorStatus is what a budget holds and uses of one of its flavors, for its status.
// Gated pods are not on a flavor yet: what they request counts in the budget's pending,
// not a flavor's.
type FlavorStatus struct {
	Name     string              `json:"name"`
	Hard     corev1.ResourceList `json:"hard,omitempty"`
	Used     corev1.ResourceList `json:"used,omitempty"`
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`
	Lent     corev1.ResourceList `json:"lent,omitempty"`
}
