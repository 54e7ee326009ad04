package quota

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
	"github.com/quotagate/quotagate/pkg/quota/internal/topology"
)

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
