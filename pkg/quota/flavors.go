package quota

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// Flavors: quota per kind of node. A budget's spec.flavors hold quota for each flavor
// it names; the core accounts it as resources of their own, r@flavor beside r (a pod
// on flavor h100 that requests one GPU uses requests.nvidia.com/gpu and
// requests.nvidia.com/gpu@h100), so that the ledger, borrowing, lending, fair sharing,
// holds and preemption work per flavor as they work per resource. The flavor-less hard
// then caps a budget's total over every flavor.
//
// A pod's flavor is chosen when it is admitted (admitter.onFlavors), from the flavors
// of its first covering budget that has any (its flavored budget), and the ungate
// patch puts the pod on it (Admission.Flavor). A pod is charged on every flavor whose
// nodes it can reach once on it (flavorIndex.reach): those its node selector, required
// affinity and tolerations, with the flavor's labels and tolerations added, let
// kube-scheduler place it on. Usually that is the flavor alone; where one flavor's
// labels contain another's (gpu: {pool: gpu}, gpu-spot: {pool: gpu, spot: "true"}), a
// pod on the wider one can land on the nodes of the narrower one too, so it must fit on
// both and is charged on both, and the Flavor says so (Nested). A pod seen running is
// charged on what it can reach as it is, whoever admitted it: that is also how a
// restarted manager finds the flavors of the pods it admitted.

// flavorMark separates a resource from its flavor in the core's flavored names. No
// resource name quotagate accounts contains it (the CRD's rule on hard).
const flavorMark = "@"

// flavored is r as accounted on flavor f.
func flavored(r corev1.ResourceName, f string) corev1.ResourceName {
	return corev1.ResourceName(string(r) + flavorMark + f)
}

// splitFlavor splits a flavored name into its resource and flavor ("" when r is not
// flavored).
func splitFlavor(r corev1.ResourceName) (corev1.ResourceName, string) {
	base, f, ok := strings.Cut(string(r), flavorMark)
	if !ok {
		return r, ""
	}
	return corev1.ResourceName(base), f
}

// resourceText names a resource in a sentence: "requests.nvidia.com/gpu on flavor
// h100" for a flavored one.
func resourceText(r corev1.ResourceName) string {
	if base, f := splitFlavor(r); f != "" {
		return string(base) + " on flavor " + f
	}
	return string(r)
}

// onFlavors returns a with each of its entries also counted on each flavor of fs (a
// itself when fs is empty). The flavored entries are new; a is not changed.
func onFlavors(a amount.List, fs []string) amount.List {
	if len(fs) == 0 || a == nil {
		return a
	}
	out := make(amount.List, (1+len(fs))*len(a))
	for r, v := range a {
		out[r] = v
		if _, fl := splitFlavor(r); fl == "" {
			for _, f := range fs {
				out[flavored(r, f)] = v
			}
		}
	}
	return out
}

// withoutFlavors returns the entries of a that are not on a flavor (a itself when it
// has none).
func withoutFlavors(a amount.List) amount.List {
	var out amount.List
	for r := range a {
		if _, f := splitFlavor(r); f != "" {
			out = make(amount.List, len(a))
			break
		}
	}
	if out == nil {
		return a
	}
	for r, v := range a {
		if _, f := splitFlavor(r); f == "" {
			out[r] = v
		}
	}
	return out
}

// flavorIndex is the part that knows the Flavor objects, and which flavors a pod may
// be put on.
type flavorIndex struct {
	byName map[string]*Flavor
	// invalid are the Flavors whose node labels a nodeSelector cannot hold (the CRD
	// checks only their lengths), with why: no pod is put on them.
	invalid map[string]string
}

func newFlavorIndex() *flavorIndex {
	return &flavorIndex{byName: map[string]*Flavor{}, invalid: map[string]string{}}
}

// set records a Flavor and reports whether it changed. A Flavor whose labels are not
// valid label keys and values is recorded as invalid instead.
func (x *flavorIndex) set(f Flavor) bool {
	if problem := labelProblem(f.NodeLabels); problem != "" {
		_, known := x.byName[f.Name]
		delete(x.byName, f.Name)
		changed := known || x.invalid[f.Name] != problem
		x.invalid[f.Name] = problem
		return changed
	}
	_, wasInvalid := x.invalid[f.Name]
	delete(x.invalid, f.Name)
	old := x.byName[f.Name]
	if !wasInvalid && old != nil && maps.Equal(old.NodeLabels, f.NodeLabels) && equality.Semantic.DeepEqual(old.Tolerations, f.Tolerations) {
		return false
	}
	f.NodeLabels = maps.Clone(f.NodeLabels)
	f.Tolerations = slices.Clone(f.Tolerations)
	x.byName[f.Name] = &f
	return true
}

// labelProblem says why labels cannot be a nodeSelector ("" when they can).
func labelProblem(labels map[string]string) string {
	if len(labels) == 0 {
		return "it has no node labels"
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Sprintf("node label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return fmt.Sprintf("node label %s value %q: %s", k, labels[k], strings.Join(errs, "; "))
		}
	}
	return ""
}

// remove forgets a Flavor and reports whether it was known.
func (x *flavorIndex) remove(name string) bool {
	_, ok := x.byName[name]
	_, bad := x.invalid[name]
	delete(x.byName, name)
	delete(x.invalid, name)
	return ok || bad
}

// any reports whether some Flavor exists.
func (x *flavorIndex) any() bool { return len(x.byName) > 0 }

// get returns the Flavor of name, or nil.
func (x *flavorIndex) get(name string) *Flavor { return x.byName[name] }

// exists reports whether a Flavor of that name exists, valid or not.
func (x *flavorIndex) exists(name string) bool {
	_, valid := x.byName[name]
	_, invalid := x.invalid[name]
	return valid || invalid
}

// selects reports whether a pod's node selector asks for every label of f.
func selects(sel map[string]string, f *Flavor) bool {
	if len(f.NodeLabels) == 0 {
		return false
	}
	for k, v := range f.NodeLabels {
		if got, ok := sel[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// contradicts reports whether a pod's node selector asks, for a label of f, another
// value than f's: the pod cannot run on f's nodes.
func contradicts(sel map[string]string, f *Flavor) bool {
	for k, v := range f.NodeLabels {
		if got, ok := sel[k]; ok && got != v {
			return true
		}
	}
	return false
}

// reach returns, sorted, the names of the flavors whose nodes a pod can be scheduled on
// once flavor on (nil for none) is added to it (the flavor's labels to its node
// selector, its tolerations to its own); nil when it reaches none. They are the flavors
// it addresses (its node selector and required affinity ask for each of their labels,
// with their value, and for no other value of theirs), and those nested in one of
// these (all of its labels and more: their nodes are among its nodes) that its node
// requirements allow and whose taints (their tolerations) it may tolerate. Flavors on
// other labels than the pod asks for are not reached: whether their nodes have the
// labels it asks for is not known (a flavor "spot" and a flavor "h100" partition the
// nodes in two ways, and a pod put on h100 is not charged on spot).
func (x *flavorIndex) reach(p *Pod, on *Flavor) []string {
	var buf [8]string
	addressed := buf[:0]
	for name, g := range x.byName {
		if addresses(p, on, g) && allows(p, on, g) {
			addressed = append(addressed, name)
		}
	}
	if len(addressed) == 0 {
		return nil
	}
	out := addressed
	for name, g := range x.byName {
		if slices.Contains(addressed, name) || !allows(p, on, g) || !tolerates(p, on, g) {
			continue
		}
		if slices.ContainsFunc(addressed, func(a string) bool { return nestedIn(g, x.byName[a]) }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return shareNames(out)
}

// addresses reports whether the pod, on flavor on (nil for none), asks for every label
// of g with g's value: in its node selector, in on's labels, or as an In requirement of
// a term of its required node affinity that may hold on g's nodes.
func addresses(p *Pod, on, g *Flavor) bool {
	if len(g.NodeLabels) == 0 {
		return false
	}
	for k, v := range g.NodeLabels {
		if w, ok := p.NodeSelector[k]; ok && w == v {
			continue
		}
		if on != nil {
			if w, ok := on.NodeLabels[k]; ok && w == v {
				continue
			}
		}
		if !affinityAsks(p.NodeAffinity, k, v, g.NodeLabels) {
			return false
		}
	}
	return true
}

// affinityAsks reports whether a term of a that may hold on a node with labels asks
// for label k with value v among others (an In requirement).
func affinityAsks(a *corev1.NodeSelector, k, v string, labels map[string]string) bool {
	if a == nil {
		return false
	}
	for _, t := range a.NodeSelectorTerms {
		if !termMayHold(t, labels) {
			continue
		}
		for _, r := range t.MatchExpressions {
			if r.Key == k && r.Operator == corev1.NodeSelectorOpIn && slices.Contains(r.Values, v) {
				return true
			}
		}
	}
	return false
}

// nestedIn reports whether g's labels contain every label of f and more: g's nodes are
// among f's nodes.
func nestedIn(g, f *Flavor) bool {
	return f != nil && len(g.NodeLabels) > len(f.NodeLabels) && selects(g.NodeLabels, f)
}

// sharedReaches holds the lists reach returns, one copy per distinct list.
var sharedReaches sharedTable[[]string]

func shareNames(names []string) []string {
	var buf [128]byte
	key := buf[:0]
	for _, n := range names {
		key = append(append(key, n...), 0)
	}
	v, ok := sharedReaches.get(key, func() []string { return slices.Clone(names) })
	if !ok {
		return slices.Clone(names)
	}
	return v
}

// allows reports whether g's nodes may satisfy what the pod, on flavor on (nil for
// none), asks of its node's labels: its node selector and on's labels ask for no other
// value of g's labels, and some term of its required node affinity may hold on a node
// with g's labels.
func allows(p *Pod, on, g *Flavor) bool {
	for k, v := range g.NodeLabels {
		if want, ok := p.NodeSelector[k]; ok && want != v {
			return false
		}
		if on != nil {
			if want, ok := on.NodeLabels[k]; ok && want != v {
				return false
			}
		}
	}
	if p.NodeAffinity == nil || len(p.NodeAffinity.NodeSelectorTerms) == 0 {
		return true
	}
	return slices.ContainsFunc(p.NodeAffinity.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool { return termMayHold(t, g.NodeLabels) })
}

// termMayHold reports whether a node selector term may hold on a node that has labels
// (and any others): a requirement on a label the node is not known to have may hold;
// an empty term matches nothing, as in kube-scheduler.
func termMayHold(t corev1.NodeSelectorTerm, labels map[string]string) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for _, r := range t.MatchExpressions {
		v, known := labels[r.Key]
		if !known {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !slices.Contains(r.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if slices.Contains(r.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			return false
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				return false
			}
			have, err1 := strconv.ParseInt(v, 10, 64)
			want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
			if err1 != nil || err2 != nil || (r.Operator == corev1.NodeSelectorOpGt && have <= want) || (r.Operator == corev1.NodeSelectorOpLt && have >= want) {
				return false
			}
		}
	}
	return true
}

// tolerates reports whether the pod, on flavor on (nil for none), may tolerate the
// taints of g's nodes (g's tolerations stand for them; PreferNoSchedule ones keep no
// pod off).
func tolerates(p *Pod, on, g *Flavor) bool {
	for _, t := range g.Tolerations {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !mayTolerate(p.Tolerations, t) && (on == nil || !mayTolerate(on.Tolerations, t)) {
			return false
		}
	}
	return true
}

// mayTolerate reports whether one of ts may tolerate the taint that toleration t
// stands for. A value or an effect t leaves open could be the one a pod's toleration
// names, so it may.
func mayTolerate(ts []corev1.Toleration, t corev1.Toleration) bool {
	for _, pt := range ts {
		if pt.Key == "" && pt.Operator == corev1.TolerationOpExists {
			if pt.Effect == "" || t.Effect == "" || pt.Effect == t.Effect {
				return true
			}
			continue
		}
		if pt.Key != t.Key {
			continue
		}
		valueOK := pt.Operator == corev1.TolerationOpExists || t.Operator == corev1.TolerationOpExists || pt.Value == t.Value
		if valueOK && (pt.Effect == "" || t.Effect == "" || pt.Effect == t.Effect) {
			return true
		}
	}
	return false
}

// nestedAround returns, sorted, the names of the Flavors whose nodes f's are among: f
// is nested in each.
func (x *flavorIndex) nestedAround(f string) []string {
	inner := x.byName[f]
	if inner == nil {
		return nil
	}
	var out []string
	for name, g := range x.byName {
		if nestedIn(inner, g) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// nested returns, sorted, the names of the Flavors whose nodes are among f's: those
// that have every label f has, and more (their nodes are f's nodes too). A pod that can
// run on one of them is charged on f as well; the controller reports them on f.
func (x *flavorIndex) nested(f string) []string {
	outer := x.byName[f]
	if outer == nil {
		return nil
	}
	var out []string
	for name, g := range x.byName {
		if nestedIn(g, outer) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// flavoredBudget is the first budget of cover with flavors (nil for none): its flavors,
// in its order, are the ones its pods try, under its fungibility.
func flavoredBudget(cover []*budget) *budget {
	for _, b := range cover {
		if len(b.spec.Flavors) > 0 {
			return b
		}
	}
	return nil
}

// flavorChoice is what a gated pod may be put on: the flavors to try in order (none
// when no flavor applies to it), or why none can take it (a NoFlavor wait).
type flavorChoice struct {
	home  *budget  // the flavored budget whose order and fungibility apply
	names []string // in the order of home's spec.flavors
}

// choices returns the flavors a gated pod (with what it requests, usage) may be put on.
// None apply when no budget of cover has flavors, or the pod requests none of the
// resources their flavors name (it then runs where it likes, charged on no flavor).
// Otherwise a flavor of home (flavoredBudget) is a choice when its Flavor exists, the
// pod's node selector does not ask for other values of its labels (and, if the pod
// selects flavors itself, it is one of them), every flavored budget of cover has it,
// and together they name every flavored resource the pod requests. ok is false, with
// the wait, when flavors apply and none is a choice.
func (x *flavorIndex) choices(cover []*budget, pod *Pod, usage amount.List) (c flavorChoice, w waitInfo, ok bool) {
	sel := pod.NodeSelector
	home := flavoredBudget(cover)
	if home == nil {
		return flavorChoice{}, waitInfo{}, true // a group member no flavor applies to
	}
	var buf [8]corev1.ResourceName
	wanted := buf[:0]
	for r, v := range usage {
		if !v.IsZero() && namedByAFlavor(cover, r) {
			wanted = append(wanted, r)
		}
	}
	if len(wanted) == 0 {
		return flavorChoice{}, waitInfo{}, true
	}
	selectsAny := false
	for _, f := range x.byName {
		if selects(sel, f) {
			selectsAny = true
			break
		}
	}
	c.home = home
	var missing, contradicted, uncovered, tooSmall, elsewhere, invalid []string
	for _, fq := range home.spec.Flavors {
		f := x.byName[fq.Name]
		switch {
		case f == nil && x.invalid[fq.Name] != "":
			invalid = append(invalid, "Flavor "+fq.Name+" cannot be used: "+x.invalid[fq.Name])
		case f == nil:
			missing = append(missing, fq.Name)
		case contradicts(sel, f) || (selectsAny && !selects(sel, f)) || !allows(pod, f, f):
			contradicted = append(contradicted, fq.Name)
		case !allHave(cover, fq.Name):
			elsewhere = append(elsewhere, fq.Name)
		case !namesAll(cover, fq.Name, wanted):
			uncovered = append(uncovered, fq.Name)
		case neverFitsOn(cover, usage, fq.Name):
			tooSmall = append(tooSmall, fq.Name)
		default:
			c.names = append(c.names, fq.Name)
		}
	}
	if len(c.names) > 0 {
		return c, waitInfo{}, true
	}
	wanted = slices.Clone(wanted)
	slices.Sort(wanted)
	return flavorChoice{}, waitInfo{code: CodeNoFlavor, budget: home, detail: noFlavorText(home, wanted, missing, contradicted, uncovered, tooSmall, elsewhere, invalid)}, false
}

// namedByAFlavor reports whether a flavor of a budget of cover holds quota for r.
func namedByAFlavor(cover []*budget, r corev1.ResourceName) bool {
	for _, b := range cover {
		for _, names := range b.flavorNames {
			if names[r] {
				return true
			}
		}
	}
	return false
}

// allHave reports whether every flavored budget of cover has flavor f.
func allHave(cover []*budget, f string) bool {
	for _, b := range cover {
		if len(b.spec.Flavors) > 0 && b.flavorNames[f] == nil {
			return false
		}
	}
	return true
}

// neverFitsOn reports whether a pod requesting usage can never fit on flavor f: a
// budget of cover holds less of a resource on f than it requests (a flavor given 0 of
// what its nodes do not have is no choice for a pod that asks for it).
func neverFitsOn(cover []*budget, usage amount.List, f string) bool {
	for _, b := range cover {
		for r, v := range usage {
			if v.Sign() <= 0 || !b.flavorNames[f][r] {
				continue
			}
			if acc := b.ledger.Of(flavored(r, f)); acc.Limited && acc.Ceiling.Less(v) {
				return true
			}
		}
	}
	return false
}

// namesAll reports whether the budgets of cover, together, hold quota on flavor f for
// every resource of wanted.
func namesAll(cover []*budget, f string, wanted []corev1.ResourceName) bool {
	for _, r := range wanted {
		named := false
		for _, b := range cover {
			if b.flavorNames[f][r] {
				named = true
				break
			}
		}
		if !named {
			return false
		}
	}
	return true
}

// noFlavorText says why none of home's flavors can take a pod, flavor by flavor.
func noFlavorText(home *budget, wanted []corev1.ResourceName, missing, contradicted, uncovered, tooSmall, elsewhere, invalid []string) string {
	var parts []string
	if len(contradicted) > 0 {
		parts = append(parts, "its node selector asks for other node labels than "+strings.Join(contradicted, ", "))
	}
	if len(uncovered) > 0 {
		names := make([]string, len(wanted))
		for i, r := range wanted {
			names[i] = string(r)
		}
		parts = append(parts, strings.Join(uncovered, ", ")+" hold no quota for "+strings.Join(names, " and "))
	}
	if len(tooSmall) > 0 {
		parts = append(parts, "it requests more than "+strings.Join(tooSmall, ", ")+" can ever hold")
	}
	if len(elsewhere) > 0 {
		parts = append(parts, "another budget that covers it holds no quota on "+strings.Join(elsewhere, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "no Flavor named "+strings.Join(missing, ", ")+" exists")
	}
	parts = append(parts, invalid...)
	return "no flavor of " + home.key.Describe() + " can take it: " + strings.Join(parts, "; ")
}
