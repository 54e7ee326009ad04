package topology

// Node is what the topology needs of a budget. The core's budget implements it; the
// topology keeps what it derives in the budget's Place and reads the rest through
// these methods.
type Node[B comparable] interface {
	comparable
	// Key is the budget's key; it never changes.
	Key() Key
	// Place is where the topology keeps what it derives of the budget.
	Place() *Place[B]
	// Inputs is what resolve reads of the budget's own spec, as it is now.
	Inputs() Inputs
	// SetFamily tells the budget's accounts whether it is under a parent (so that it
	// may borrow up to its borrowingLimit) and reports whether its ceiling changed.
	SetFamily(underParent bool) (ceilingChanged bool)
	// Borrows reports whether the budget has a borrowingLimit on a resource hard
	// limits: its parent counts it among its borrowers.
	Borrows() bool
}

// Inputs is what resolve reads of a budget's own spec: while it stays the same, a spec
// change leaves every budget's parent, family, problem and state as they are.
type Inputs struct {
	Parent        string // spec.parent: the name of a ClusterBudget
	Selects       bool   // a ClusterBudget with a namespaceSelector
	BorrowLimited bool   // a borrowingLimit on a resource hard limits
	Open          bool   // spec.state is not Closed
	// SpecErr is what is wrong with the spec itself ("" when nothing), SpecReason the
	// Ready reason for it.
	SpecErr, SpecReason string
	// Flavors are the names of spec.flavors, joined by ",": a Flavor that does not
	// exist is a problem of the budget.
	Flavors string
}

// Problem is why a budget admits nothing, for its Ready condition.
type Problem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Place is a budget's place in the topology: what resolve derives of it. Only the
// topology writes it; everyone reads it through its methods.
type Place[B comparable] struct {
	in        Inputs // as of the last Add or Respec
	parent    B
	children  []B // the budgets naming it as parent: the family that borrows and lends
	borrowers int // how many of its children have a borrowingLimit
	counted   bool
	ancestors []B      // parent first; stops before repeating in a cycle
	problem   *Problem // why this budget itself cannot admit (nil when fine)
	admitting bool     // open, fine, and every ancestor admitting
	closedBy  B        // the ancestor that stops it, when its own spec is fine
}

// Parent returns the ClusterBudget the budget names as parent, when it exists (the
// zero B when not).
func (p *Place[B]) Parent() B { return p.parent }

// Children returns the budgets naming it as parent, in key order. Not to be changed.
func (p *Place[B]) Children() []B { return p.children }

// Borrowers returns how many of its children have a borrowingLimit on a resource hard
// limits.
func (p *Place[B]) Borrowers() int { return p.borrowers }

// Ancestors returns its parent, the parent's parent and so on, stopping before one
// repeats in a cycle. Not to be changed.
func (p *Place[B]) Ancestors() []B { return p.ancestors }

// Problem returns why the budget itself cannot admit, nil when nothing is wrong with
// it.
func (p *Place[B]) Problem() *Problem { return p.problem }

// Admitting reports whether the budget admits: open, without a problem, and every
// ancestor admitting.
func (p *Place[B]) Admitting() bool { return p.admitting }

// ClosedBy returns the ancestor that stops the budget when its own spec is fine and
// open (the zero B when none does).
func (p *Place[B]) ClosedBy() B { return p.closedBy }
