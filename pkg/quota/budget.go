package quota

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/hours"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
	"github.com/quotagate/quotagate/pkg/quota/window"
)

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

// budget is the core's live view of one budget: its spec, its derived topology, what is
// charged to it and its queues.
type budget struct {
	key     BudgetKey
	spec    Budget
	specErr string
	// specReason is the Ready reason for specErr: InvalidSelector when a selector does
	// not parse, else InvalidSpec.
	specReason string
	// flavorNames are, per flavor of spec.flavors, the resources its hard names
	// (normalized): a pod is put on a flavor only if it names all the flavored resources
	// the pod requests (flavorIndex).
	flavorNames map[string]map[corev1.ResourceName]bool

	// place is its place in the topology: parent, children, ancestors, problem and
	// state, which the topology derives (Topology.Resolve) and the core reads.
	place topology.Place[*budget]

	// family is what the family part keeps on it (families): nil until the part
	// first needs it, so a budget that never was in a borrowing family has none.
	family *familyState

	ledger ledger.Ledger[*podState] // hard, used (admitted, reservations included) and pending
	queues queues                   // where its gated pods wait

	dirtyIndex int // position in the agenda's dirty heap; -1 when not there

	woken     []*podState // moved to active by wake on the assumption they are admitted
	inRecheck bool        // listed in the agenda's recheck
}

func newBudget(spec Budget) *budget {
	b := &budget{
		key:        spec.Key,
		ledger:     ledger.New[*podState](),
		dirtyIndex: -1,
	}
	b.queues.init(b)
	b.setSpec(spec)
	return b
}

// setSpec applies a new spec and reports whether anything that decides coverage
// (selectors, parent) changed, and whether the hard limits did.
func (b *budget) setSpec(spec Budget) (topologyChanged, hardChanged bool) {
	old := b.spec
	topologyChanged = selectorString(old.PodSelector) != selectorString(spec.PodSelector) ||
		selectorString(old.NamespaceSelector) != selectorString(spec.NamespaceSelector) ||
		old.Parent != spec.Parent
	b.spec = spec
	hard, err := NormalizeHard(spec.Hard)
	borrow, borrowErr := NormalizeHard(spec.BorrowingLimit)
	lend, lendErr := NormalizeHard(spec.LendingLimit)
	errs := []fieldErr{{"", err}, {"borrowingLimit: ", borrowErr}, {"lendingLimit: ", lendErr}}
	b.flavorNames = nil
	if len(spec.Flavors) > 0 {
		var flavorErrs []fieldErr
		b.flavorNames, flavorErrs = addFlavorLimits(spec.Flavors, hard, borrow, lend)
		errs = append(errs, flavorErrs...)
	}
	hardChanged = b.ledger.SetLimits(hard, borrow, lend) || flavorOrderChanged(old, spec)
	b.specErr, b.specReason = "", v1alpha1.ReasonInvalidSpec
	if spec.SpecError != nil {
		b.specErr = spec.SpecError.Error()
		if selErr := (*SelectorError)(nil); errors.As(spec.SpecError, &selErr) {
			b.specReason = v1alpha1.ReasonInvalidSelector
		}
	}
	for _, e := range errs {
		if e.err == nil {
			continue
		}
		if b.specErr != "" {
			b.specErr += "; "
		}
		b.specErr += e.field + e.err.Error()
	}
	return topologyChanged, hardChanged
}

func selectorString(s labels.Selector) string {
	if s == nil {
		return "<nil>"
	}
	return "{" + s.String() + "}"
}

func (b *budget) strict() bool { return b.spec.Strategy == v1alpha1.StrictFIFO }

func (b *budget) specOpen() bool { return b.spec.State != v1alpha1.StateClosed }

// The budget as the topology sees it (topology.Node).

// Key returns the budget's key.
func (b *budget) Key() BudgetKey { return b.key }

// Place returns its place in the topology, for the topology to derive.
func (b *budget) Place() *topology.Place[*budget] { return &b.place }

// Inputs returns what the topology's Resolve reads of the budget's own spec.
func (b *budget) Inputs() topology.Inputs {
	names := make([]string, len(b.spec.Flavors))
	for i, f := range b.spec.Flavors {
		names[i] = f.Name
	}
	return topology.Inputs{
		Parent:        b.spec.Parent,
		Selects:       b.key.IsCluster() && b.spec.NamespaceSelector != nil,
		BorrowLimited: b.ledger.BorrowLimited(),
		Open:          b.specOpen(),
		SpecErr:       b.specErr,
		SpecReason:    b.specReason,
		Flavors:       strings.Join(names, ","),
	}
}

// SetFamily tells its ledger whether it is under a parent, and reports whether its
// ceiling changed.
func (b *budget) SetFamily(underParent bool) bool { return b.ledger.SetFamily(underParent) }

// Borrows reports whether it has a borrowingLimit on a resource hard limits.
func (b *budget) Borrows() bool { return b.ledger.Borrows() }

// coverage returns the budgets that cover a pod: Budgets of its namespace whose
// podSelector matches, ClusterBudgets whose namespaceSelector matches its namespace
// (and podSelector the pod), then all their ancestors (topology.Topology.Coverage).
func coverage(t *topology.Topology[*budget], p *Pod) []*budget {
	return t.Coverage(p.Namespace, func(b *budget, nsLabels labels.Set) bool { return b.coversDirectly(p, nsLabels) })
}

// coversDirectly reports whether the budget covers a pod by its own selectors.
func (b *budget) coversDirectly(p *Pod, nsLabels labels.Set) bool {
	if b.key.IsCluster() {
		if b.spec.NamespaceSelector == nil || !b.spec.NamespaceSelector.Matches(nsLabels) {
			return false
		}
	} else if b.key.Namespace != p.Namespace {
		return false
	}
	return b.spec.PodSelector == nil || b.spec.PodSelector.Matches(labels.Set(p.Labels))
}

// state returns the effective state and the reason for it.
func (b *budget) state() (v1alpha1.BudgetState, string) {
	switch {
	case b.place.Admitting():
		return v1alpha1.StateOpen, v1alpha1.ReasonActive
	case b.place.Problem() == nil && b.specOpen() && b.place.ClosedBy() != nil:
		return v1alpha1.StateClosed, v1alpha1.ReasonClosedByParent
	}
	reason := v1alpha1.ReasonClosed
	if b.place.Problem() != nil {
		reason = b.place.Problem().Reason
	}
	if b.ledger.Admitted() > 0 {
		return v1alpha1.StateClosing, reason
	}
	return v1alpha1.StateClosed, reason
}

// borrowingParent is b's parent when some child of it has a borrowingLimit (its family
// borrows), else nil.
func (b *budget) borrowingParent() *budget {
	if p := b.place.Parent(); p != nil && p.place.Borrowers() > 0 {
		return p
	}
	return nil
}

// anyFlavored reports whether a budget of cover holds quota per flavor: only then does
// the admitter choose a flavor (admitter.flavorFor).
func anyFlavored(cover []*budget) bool {
	for _, b := range cover {
		if len(b.spec.Flavors) > 0 {
			return true
		}
	}
	return false
}

// inBorrowingFamily reports whether a budget of cover has a parent whose family
// borrows: only then does the core ask the family part (families).
func inBorrowingFamily(cover []*budget) bool {
	for _, b := range cover {
		if p := b.place.Parent(); p != nil && p.place.Borrowers() > 0 {
			return true
		}
	}
	return false
}

// text is v of r as it prints in a message (what is free, lent, used beyond the
// guaranteed parts), in the format r is written in the hard of b or, for a parent that
// does not limit r, of its first child that does (DecimalSI when none does).
func (b *budget) text(r corev1.ResourceName, v amount.Amount) string {
	l := &b.ledger
	if !l.Tracks(r) {
		for _, c := range b.place.Children() {
			if c.ledger.Tracks(r) {
				l = &c.ledger
				break
			}
		}
	}
	q := l.Quantity(r, v)
	return q.String()
}

// ledgersWait is capacityWait for budgets outside any borrowing family: the first
// budget, in the order of budgets, that has no room for what the unit adds to it.
func ledgersWait(budgets []*budget, add demand) (waitInfo, bool) {
	for _, b := range budgets {
		a := add(b)
		if r, over := b.ledger.Excess(a); over {
			return waitInfo{code: CodeInsufficient, budget: b, resource: r, requested: a[r]}, true
		}
	}
	return waitInfo{}, false
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
