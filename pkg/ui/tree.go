package ui

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// budgetView is one budget as the page shows it: a card in the tree, and the head of
// its queue's page.
type budgetView struct {
	Kind      string // Budget or ClusterBudget
	Namespace string
	Name      string
	Parent    string
	State     string
	Strategy  string
	Admitted  int32
	Gated     int32
	Resources []resourceView
	// Flavors are its quota per flavor (status.flavors), in the order pods try them.
	Flavors []flavorView
	// Problems are the conditions that say the budget does not work as written.
	Problems []string
	// Windows says what its windows (BudgetWindows, ClusterBudgetWindows) do: which are
	// open and when that next changes, or when one opens; "" for a budget without.
	Windows string
	// Hours is its hour budget (spec.usageLimits), per resource, with what its pods
	// used of it (status.usage); nil for a budget without.
	Hours    []hoursView
	Children []*budgetView
}

// Title is how the page names the budget: "Budget team-a/quota" or "ClusterBudget org".
func (b *budgetView) Title() string {
	if b.Kind == "ClusterBudget" {
		return "ClusterBudget " + b.Name
	}
	return "Budget " + b.Namespace + "/" + b.Name
}

// Link is the budget's own page, a link that can be shared.
func (b *budgetView) Link() string {
	if b.Kind == "ClusterBudget" {
		return "/clusterbudgets/" + url.PathEscape(b.Name)
	}
	return "/budgets/" + url.PathEscape(b.Namespace) + "/" + url.PathEscape(b.Name)
}

// ID is an HTML id for the budget's card.
func (b *budgetView) ID() string {
	if b.Kind == "ClusterBudget" {
		return "cb-" + b.Name
	}
	return "b-" + b.Namespace + "-" + b.Name
}

// flavorView is one flavor of a budget: the resources its hard names. A flavor with
// none is limited only by the budget's own hard.
type flavorView struct {
	Name      string
	Resources []resourceView
}

// resourceView is one resource of a budget, or of one of its flavors: its used, hard,
// borrowed and lent, as text and as a bar.
type resourceView struct {
	Name, Used, Hard, Borrowed, Lent, Pending string
	// Flavor is the flavor the figures are of; empty for the budget's own.
	Flavor string
	// Percent is used of hard, 0 to 100, for the bar's width; Over is used beyond hard
	// (borrowing).
	Percent int
	Over    bool
}

// Summary is the resource in one sentence: the text alternative of its bar.
func (r resourceView) Summary() string {
	name := r.Name
	if r.Flavor != "" {
		name += " on flavor " + r.Flavor
	}
	s := fmt.Sprintf("%s: %s of %s used", name, r.Used, r.Hard)
	if r.Borrowed != "" {
		s += ", " + r.Borrowed + " borrowed"
	}
	if r.Lent != "" {
		s += ", " + r.Lent + " lent"
	}
	if r.Pending != "" {
		s += ", " + r.Pending + " requested by gated pods"
	}
	return s
}

func viewOfStatus(kind, ns, name string, spec v1alpha1.BudgetSpec, st v1alpha1.BudgetStatus) *budgetView {
	b := &budgetView{
		Kind: kind, Namespace: ns, Name: name, Parent: spec.Parent,
		State: string(st.State), Strategy: string(spec.QueueingStrategy),
		Admitted: st.AdmittedPods, Gated: st.GatedPods,
	}
	if b.State == "" {
		b.State = "Unknown"
	}
	hard := st.Hard
	if len(hard) == 0 {
		hard = spec.Hard
	}
	b.Resources = resourceViews("", hard, st.Used, st.Borrowed, st.Lent, st.Pending)
	for _, f := range st.Flavors {
		b.Flavors = append(b.Flavors, flavorView{Name: f.Name, Resources: resourceViews(f.Name, f.Hard, f.Used, f.Borrowed, f.Lent, nil)})
	}
	b.Problems = problems(st.Conditions)
	b.Windows = windowsText(st.ActiveWindows, st.NextWindowChange)
	b.Hours = hoursViews(spec.UsageLimits, st.Usage)
	return b
}

// windowsText is a budget's windows in one sentence: "Window night open; next change
// 2026-12-07 06:00:00", "Windows a, b open; ...", "A window opens 2026-12-07 22:00:00
// and changes what the budget may hold", or "" for none (times as clockLayout writes
// them, in the local time of the machine that serves the page).
func windowsText(open []string, next *metav1.Time) string {
	switch {
	case len(open) == 0 && next == nil:
		return ""
	case len(open) == 0:
		return "A window opens " + localClock(next.Time) + " and changes what the budget may hold"
	}
	s := "Window " + open[0] + " open"
	if len(open) > 1 {
		s = "Windows " + strings.Join(open, ", ") + " open"
	}
	if next == nil {
		return s
	}
	return s + "; next change " + localClock(next.Time)
}

// resourceViews are the resources of hard, in name order, with their used, borrowed,
// lent and pending; flavor is the flavor they are of ("" for the budget's own). A
// flavor has no pending: gated pods are on no flavor until they are admitted.
func resourceViews(flavor string, hard, used, borrowed, lent, pending corev1.ResourceList) []resourceView {
	names := make([]string, 0, len(hard))
	for n := range hard {
		names = append(names, string(n))
	}
	slices.Sort(names)
	var out []resourceView
	for _, n := range names {
		rn := corev1.ResourceName(n)
		h := hard[rn]
		r := resourceView{Name: n, Flavor: flavor, Hard: h.String(), Used: "0"}
		if u, ok := used[rn]; ok {
			r.Used = u.String()
			if h.MilliValue() > 0 {
				pct := u.MilliValue() * 100 / h.MilliValue()
				r.Over = pct > 100
				r.Percent = int(min(max(pct, 0), 100))
			} else if u.MilliValue() > 0 {
				r.Over, r.Percent = true, 100
			}
		}
		if q, ok := borrowed[rn]; ok && !q.IsZero() {
			r.Borrowed = q.String()
		}
		if q, ok := lent[rn]; ok && !q.IsZero() {
			r.Lent = q.String()
		}
		if q, ok := pending[rn]; ok && !q.IsZero() {
			r.Pending = q.String()
		}
		out = append(out, r)
	}
	return out
}

// problems are the conditions that say something is wrong: Ready not True (with its
// reason, unless the budget is merely closed), PodsNeverFit True.
func problems(conds []metav1.Condition) []string {
	var out []string
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue &&
		c.Reason != v1alpha1.ReasonClosed {
		out = append(out, fmt.Sprintf("Not ready (%s): %s", c.Reason, c.Message))
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionPodsNeverFit); c != nil && c.Status == metav1.ConditionTrue {
		out = append(out, fmt.Sprintf("Pods that can never fit (%s): %s", c.Reason, c.Message))
	}
	return out
}

func budgetViewOf(b *v1alpha1.Budget) *budgetView {
	return viewOfStatus("Budget", b.Namespace, b.Name, b.Spec, b.Status)
}

func clusterBudgetViewOf(b *v1alpha1.ClusterBudget) *budgetView {
	return viewOfStatus("ClusterBudget", "", b.Name, b.Spec.BudgetSpec, b.Status)
}

// budgetTree arranges the budgets as the page shows them: each ClusterBudget under its
// parent, each Budget under the ClusterBudget it names; the roots are the ClusterBudgets
// and Budgets whose parent is unset or not visible to the user. Only the Budgets of
// namespace ns are kept when ns is set. Siblings are sorted by namespace and name.
func budgetTree(budgets []v1alpha1.Budget, clusterBudgets []v1alpha1.ClusterBudget, ns string) []*budgetView {
	byName := map[string]*budgetView{}
	var cbs []*budgetView
	for i := range clusterBudgets {
		v := clusterBudgetViewOf(&clusterBudgets[i])
		byName[v.Name] = v
		cbs = append(cbs, v)
	}
	var roots []*budgetView
	attach := func(v *budgetView) {
		if p, ok := byName[v.Parent]; ok && v.Parent != "" && !inCycle(byName, p) {
			p.Children = append(p.Children, v)
			return
		}
		roots = append(roots, v)
	}
	for _, v := range cbs {
		attach(v)
	}
	for i := range budgets {
		if ns != "" && budgets[i].Namespace != ns {
			continue
		}
		attach(budgetViewOf(&budgets[i]))
	}
	sortTree(roots, map[*budgetView]bool{})
	return roots
}

// inCycle reports whether following parents from v comes back to v: the manager
// refuses such budgets (ParentCycle), and the page shows them as roots so that none is
// lost.
func inCycle(byName map[string]*budgetView, v *budgetView) bool {
	at := v
	for range len(byName) {
		next, ok := byName[at.Parent]
		if !ok || at.Parent == "" {
			return false
		}
		if next == v {
			return true
		}
		at = next
	}
	return true
}

// sortTree sorts every level: ClusterBudgets first, then Budgets by namespace and name.
// seen guards against a parent cycle (the API refuses a ClusterBudget naming itself,
// not a longer cycle; such budgets are roots of nothing and never reached).
func sortTree(level []*budgetView, seen map[*budgetView]bool) {
	slices.SortFunc(level, func(a, b *budgetView) int {
		if a.Kind != b.Kind {
			return strings.Compare(b.Kind, a.Kind) // ClusterBudget before Budget
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, v := range level {
		if seen[v] {
			continue
		}
		seen[v] = true
		sortTree(v.Children, seen)
	}
}
