package quota

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// BudgetKey identifies a Budget (Namespace set) or a ClusterBudget (Namespace "").
type BudgetKey struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// IsCluster reports whether the key names a ClusterBudget.
func (k BudgetKey) IsCluster() bool { return k.Namespace == "" }

// Kind returns "Budget" or "ClusterBudget".
func (k BudgetKey) Kind() string {
	if k.IsCluster() {
		return "ClusterBudget"
	}
	return "Budget"
}

// String returns namespace/name for a Budget and name for a ClusterBudget.
func (k BudgetKey) String() string {
	if k.IsCluster() {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Describe returns the kind and name, as messages show it: "Budget team-a/team-a".
func (k BudgetKey) Describe() string { return k.Kind() + " " + k.String() }

func (k BudgetKey) less(o BudgetKey) bool {
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	return k.Name < o.Name
}

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
	// Parent names a ClusterBudget ("" for none).
	Parent   string
	Strategy v1alpha1.QueueingStrategy
	// State is the desired state; "" means Open.
	State v1alpha1.BudgetState
	// SpecError is a problem found while building the Budget (an unparsable selector).
	// An invalid budget admits nothing (fail closed: no pod escapes the quota because
	// of a typo); the error shows in its status.
	SpecError error
}

// BudgetFromAPI converts a Budget. An unparsable podSelector is reported in SpecError
// and replaced by "every pod of the namespace", so that the pods it meant to cover are
// held rather than let through.
func BudgetFromAPI(b *v1alpha1.Budget) Budget {
	out := fromSpec(BudgetKey{Namespace: b.Namespace, Name: b.Name}, &b.Spec)
	if b.Spec.PodSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.PodSelector)
		if err != nil {
			out.SpecError = fmt.Errorf("parsing podSelector: %w", err)
			sel = labels.Everything()
		}
		out.PodSelector = sel
	}
	return out
}

// ClusterBudgetFromAPI converts a ClusterBudget. An unparsable selector is reported in
// SpecError; the budget then covers pods only through its children (and admits none).
func ClusterBudgetFromAPI(b *v1alpha1.ClusterBudget) Budget {
	out := fromSpec(BudgetKey{Name: b.Name}, &b.Spec.BudgetSpec)
	if b.Spec.PodSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.PodSelector)
		if err != nil {
			out.SpecError = fmt.Errorf("parsing podSelector: %w", err)
			sel = labels.Everything()
		}
		out.PodSelector = sel
	}
	if b.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.NamespaceSelector)
		if err != nil {
			out.SpecError = fmt.Errorf("parsing namespaceSelector: %w", err)
		} else {
			out.NamespaceSelector = sel
		}
	}
	return out
}

func fromSpec(key BudgetKey, s *v1alpha1.BudgetSpec) Budget {
	return Budget{
		Key:      key,
		Hard:     s.Hard,
		Parent:   s.Parent,
		Strategy: s.QueueingStrategy,
		State:    s.State,
	}
}

// budget is the core's live view of one budget: its spec, its derived topology, what is
// charged to it and its queues.
type budget struct {
	key       BudgetKey
	spec      Budget
	hard      corev1.ResourceList
	hardNames []corev1.ResourceName // sorted, for deterministic reasons
	specErr   string

	// Derived by AdmissionQueue.resolveTopology.
	parent    *budget
	ancestors []*budget // parent first; stops before repeating in a cycle
	problem   *problem  // why this budget itself cannot admit (nil when fine)
	admitting bool      // open, fine, and every ancestor admitting
	closedBy  *budget   // the ancestor that stops it, when its own spec is fine

	used    corev1.ResourceList // charged: admitted (incl. reserved) non-terminal pods
	pending corev1.ResourceList // gated pods waiting here
	charged map[types.UID]*podState

	queues

	dirtyIndex int // position in AdmissionQueue.dirty; -1 when not there

	woken     []*podState // moved to active by wake on the assumption they are admitted
	inRecheck bool        // listed in AdmissionQueue.recheck
}

// problem is a reason a budget admits nothing, for its Ready condition.
type problem struct {
	Reason  string
	Message string
}

func newBudget(spec Budget) *budget {
	b := &budget{
		key:        spec.Key,
		used:       corev1.ResourceList{},
		pending:    corev1.ResourceList{},
		charged:    map[types.UID]*podState{},
		dirtyIndex: -1,
	}
	b.init(b)
	b.setSpec(spec)
	return b
}

// setSpec applies a new spec and reports whether anything that decides coverage
// (selectors, parent) changed.
func (b *budget) setSpec(spec Budget) (topologyChanged bool) {
	old := b.spec
	topologyChanged = selectorString(old.PodSelector) != selectorString(spec.PodSelector) ||
		selectorString(old.NamespaceSelector) != selectorString(spec.NamespaceSelector) ||
		old.Parent != spec.Parent
	b.spec = spec
	hard, err := NormalizeHard(spec.Hard)
	b.hard = hard
	b.hardNames = make([]corev1.ResourceName, 0, len(hard))
	for name := range hard {
		b.hardNames = append(b.hardNames, name)
	}
	slices.Sort(b.hardNames)
	b.specErr = ""
	if spec.SpecError != nil {
		b.specErr = spec.SpecError.Error()
	}
	if err != nil {
		if b.specErr != "" {
			b.specErr += "; "
		}
		b.specErr += err.Error()
	}
	return topologyChanged
}

func selectorString(s labels.Selector) string {
	if s == nil {
		return "<nil>"
	}
	return "{" + s.String() + "}"
}

func (b *budget) strict() bool { return b.spec.Strategy == v1alpha1.StrictFIFO }

func (b *budget) specOpen() bool { return b.spec.State != v1alpha1.StateClosed }

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
	case b.admitting:
		return v1alpha1.StateOpen, v1alpha1.ReasonActive
	case b.problem == nil && b.specOpen() && b.closedBy != nil:
		return v1alpha1.StateClosed, v1alpha1.ReasonClosedByParent
	}
	reason := v1alpha1.ReasonClosed
	if b.problem != nil {
		reason = b.problem.Reason
	}
	if len(b.charged) > 0 {
		return v1alpha1.StateClosing, reason
	}
	return v1alpha1.StateClosed, reason
}
