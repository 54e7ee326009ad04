package quota

import (
	"fmt"
	"maps"
	"slices"
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
// patch puts the pod on it (Admission.Flavor). A pod seen running is on the flavor its
// nodeSelector selects, whoever put it there (flavorIndex.selected); that is also how a
// restarted manager finds the flavor of the pods it admitted.

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

// onFlavor returns a with each of its entries also counted on flavor f (a itself when f
// is ""). The flavored entries are new; a is not changed.
func onFlavor(a amount.List, f string) amount.List {
	if f == "" || a == nil {
		return a
	}
	out := make(amount.List, 2*len(a))
	for r, v := range a {
		out[r] = v
		if _, fl := splitFlavor(r); fl == "" {
			out[flavored(r, f)] = v
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

// get returns the Flavor of name, or nil.
func (x *flavorIndex) get(name string) *Flavor { return x.byName[name] }

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

// selected is the flavor a pod's node selector selects ("" for none): the one with the
// most labels when it selects several, then the first by name.
func (x *flavorIndex) selected(sel map[string]string) string {
	if len(sel) == 0 {
		return ""
	}
	best := ""
	for name, f := range x.byName {
		if !selects(sel, f) {
			continue
		}
		if b := x.byName[best]; best == "" || len(f.NodeLabels) > len(b.NodeLabels) || (len(f.NodeLabels) == len(b.NodeLabels) && name < best) {
			best = name
		}
	}
	return best
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
func (x *flavorIndex) choices(cover []*budget, sel map[string]string, usage amount.List) (c flavorChoice, w waitInfo, ok bool) {
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
		case contradicts(sel, f) || (selectsAny && !selects(sel, f)):
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
			if acc := b.ledger.of(flavored(r, f)); acc.limited && acc.ceiling.Less(v) {
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
