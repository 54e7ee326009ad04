package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

// A Budget or ClusterBudget as the core takes it: the spec read from the API
// (BudgetFromAPI, ClusterBudgetFromAPI), with what its status says was used, for
// a core that did not know it. newBudget makes the core's live view of one, budget.

// BudgetKey identifies a Budget (Namespace set) or a ClusterBudget (Namespace ""). Its
// methods (IsCluster, Kind, String, Describe, Compare) are the topology's.
type BudgetKey = topology.Key

// Budget is the spec of a Budget or ClusterBudget as the core uses it. Build it with
// BudgetFromAPI or ClusterBudgetFromAPI.
type Budget struct {
	Key BudgetKey
	// Hard is spec.hard as written; the core normalizes it with NormalizeHard.
	Hard corev1.ResourceList
	// PodSelector (Budget only) narrows the budget to matching pods of its namespace;
	// nil means every pod of the namespace.
	PodSelector labels.Selector
	// NamespaceSelector (ClusterBudget only) chooses the namespaces whose pods it
	// covers directly; nil covers pods only through the budgets naming it as parent.
	NamespaceSelector labels.Selector
	// BorrowingLimit and LendingLimit are spec.borrowingLimit and spec.lendingLimit as
	// written; the core normalizes them as hard (see ledger).
	BorrowingLimit corev1.ResourceList
	LendingLimit   corev1.ResourceList
	// Flavors are spec.flavors, in the order pods try them; Fungibility is
	// spec.flavorFungibility.
	Flavors     []FlavorQuota
	Fungibility Fungibility
	// Reclaim and WithinBudget are spec.preemption ("" means the defaults: Any and
	// Never; preemptions.decide).
	Reclaim      v1alpha1.ReclaimPolicy
	WithinBudget v1alpha1.WithinBudgetPolicy
	// BlockedTimeout is spec.preemption.blockedTimeout: how long an eviction its pods
	// need may be refused by a PodDisruptionBudget before the victim is deleted
	// despite it; 0 waits for ever (the controller's evictions).
	BlockedTimeout time.Duration
	// Weight is spec.fairSharing.weight (nil means 1; families.yieldsTo).
	Weight *resource.Quantity
	// UsageHalfLife is spec.fairSharing.usageHalfLife: on a parent, its children's
	// shares add what they used, decayed with it (0: current use alone; memories.share).
	UsageHalfLife time.Duration
	// Parent names a ClusterBudget ("" for none).
	Parent   string
	Strategy v1alpha1.QueueingStrategy
	// State is the desired state; "" means Open.
	State v1alpha1.BudgetState
	// Start is spec.start: when the gated pods it covers may start (nil for always).
	Start *window.Start
	// ReclaimAfter names the window that ended with endPolicy Reclaim, or is "" (the
	// controller's windows set it; docs/budgets.md, "When a window ends"). When it turns
	// to a new name, the budget evicts its running pods until used is within what it may
	// hold (preemptions.reclaimOverHard), and then stops until it names another.
	ReclaimAfter string
	// Hours is spec.usageLimits (nil for none), and HoursRestore what status.usage
	// held, which a budget new to the core starts its hours from (hourBooks).
	Hours        *hours.Spec
	HoursRestore *hours.State
	// MemoryRestore is what status.fairSharing held: what its pods used, decayed with
	// its parent's usageHalfLife, which the memory of a budget new to the core starts
	// from (memories.of).
	MemoryRestore *hours.State
	// SpecError is a problem found while building the Budget: a selector that does not
	// parse (a *SelectorError). An invalid budget admits nothing (fail closed: no pod
	// escapes the quota because of a typo); the error shows in its status.
	SpecError error
}

// BudgetFromAPI converts a Budget. A podSelector that does not parse is reported in
// SpecError and widened (see parseSelector), so that the pods it meant to cover are held
// rather than let through.
func BudgetFromAPI(b *v1alpha1.Budget) Budget {
	out := fromSpec(BudgetKey{Namespace: b.Namespace, Name: b.Name}, &b.Spec)
	var err error
	out.PodSelector, err = parseSelector("podSelector", b.Spec.PodSelector, "every pod of its namespace", "the pods of its namespace matching %q")
	out.SpecError = joinSpecErrors(err, out.SpecError)
	out.HoursRestore = hoursStateFromAPI(b.Status.Usage)
	out.MemoryRestore = memoryStateFromAPI(b.Status.FairSharing)
	return out
}

// ClusterBudgetFromAPI converts a ClusterBudget. A selector that does not parse is
// reported in SpecError and widened (see parseSelector): the budget holds every pod it
// might cover, and admits none.
func ClusterBudgetFromAPI(b *v1alpha1.ClusterBudget) Budget {
	out := fromSpec(BudgetKey{Name: b.Name}, &b.Spec.BudgetSpec)
	podSel, podErr := parseSelector("podSelector", b.Spec.PodSelector, "every pod of the namespaces it selects", "the pods matching %q in the namespaces it selects")
	nsSel, nsErr := parseSelector("namespaceSelector", b.Spec.NamespaceSelector, "every namespace", "the namespaces matching %q")
	out.PodSelector, out.NamespaceSelector = podSel, nsSel
	out.SpecError = joinSpecErrors(joinSpecErrors(podErr, nsErr), out.SpecError)
	out.HoursRestore = hoursStateFromAPI(b.Status.Usage)
	out.MemoryRestore = memoryStateFromAPI(b.Status.FairSharing)
	return out
}

func fromSpec(key BudgetKey, s *v1alpha1.BudgetSpec) Budget {
	out := Budget{
		Key:            key,
		Hard:           s.Hard,
		BorrowingLimit: s.BorrowingLimit,
		LendingLimit:   s.LendingLimit,
		Parent:         s.Parent,
		Strategy:       s.QueueingStrategy,
		State:          s.State,
	}
	if s.Preemption != nil {
		out.Reclaim, out.WithinBudget = s.Preemption.Reclaim, s.Preemption.WithinBudget
		if t := s.Preemption.BlockedTimeout; t != nil && t.Duration > 0 {
			out.BlockedTimeout = t.Duration
		}
	}
	if s.FairSharing != nil {
		out.Weight = s.FairSharing.Weight
		if h := s.FairSharing.UsageHalfLife; h != nil && h.Duration > 0 {
			out.UsageHalfLife = h.Duration
		}
	}
	if s.Start != nil {
		start, problem := window.StartFromAPI(s.Start)
		if problem != nil {
			out.SpecError = fmt.Errorf("spec.start: %s", problem.Message)
		}
		out.Start = start
	}
	if s.UsageLimits != nil {
		spec, problem := hours.FromAPI(s.UsageLimits, normalizedName)
		if problem != "" {
			out.SpecError = joinSpecErrors(out.SpecError, fmt.Errorf("spec.usageLimits: %s", problem))
		}
		out.Hours = &spec
	}
	if len(s.Flavors) > 0 { // a budget without flavors does not enter their files
		out.Flavors = flavorQuotas(s.Flavors)
	}
	if f := s.FlavorFungibility; f != nil {
		out.Fungibility = Fungibility{
			WaitForPreferred: f.WhenFull == v1alpha1.FlavorWaitForPreferred,
			AvoidBorrowing:   f.WhenCanBorrow == v1alpha1.FlavorTryNext,
			StopToPreempt:    f.WhenCanPreempt == v1alpha1.FlavorPreempt,
		}
	}
	return out
}

// joinSpecErrors is a and b as one SpecError ("a; b"), or the one that is not nil.
func joinSpecErrors(a, b error) error {
	switch {
	case a != nil && b != nil:
		return fmt.Errorf("%w; %w", a, b)
	case a != nil:
		return a
	}
	return b
}

// normalizedName is the name a budget's charges use for a name of its hard or hours
// (NormalizeHard's).
func normalizedName(r corev1.ResourceName) corev1.ResourceName {
	if qn, ok := quotaName(r); ok {
		return qn
	}
	return r
}

// hoursStateFromAPI is what a budget's status.usage says was used, for the hours of a
// budget the core did not know (nil when the status has none).
func hoursStateFromAPI(u *v1alpha1.UsageStatus) *hours.State {
	if u == nil {
		return nil
	}
	st := &hours.State{Period: u.Period, AsOf: u.AsOf.Time, Used: hoursOfList(u.Used)}
	if u.PeriodStart != nil {
		st.PeriodStart = u.PeriodStart.Time
	}
	for _, d := range u.Days {
		st.Days = append(st.Days, hours.Day{Date: d.Date, Used: hoursOfList(d.Used)})
	}
	return st
}

// memoryStateFromAPI is what a budget's status.fairSharing says its pods used,
// decayed (nil when the status has none).
func memoryStateFromAPI(f *v1alpha1.FairSharingStatus) *hours.State {
	if f == nil {
		return nil
	}
	return &hours.State{AsOf: f.AsOf.Time, Used: hoursOfList(f.Used)}
}

func hoursOfList(l corev1.ResourceList) map[corev1.ResourceName]float64 {
	out := make(map[corev1.ResourceName]float64, len(l))
	for r, q := range l {
		out[normalizedName(r)] = q.AsApproximateFloat64()
	}
	return out
}
