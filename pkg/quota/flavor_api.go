package quota

import (
	"fmt"
	"maps"
	"slices"

	"github.com/quotagate/quotagate/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// FlavorFromAPI converts a Flavor object. It copies the labels and tolerations, so the
// core never shares a map or slice with the informer's cache.
func FlavorFromAPI(f *v1alpha1.Flavor) Flavor {
	return Flavor{
		Name:        f.Name,
		NodeLabels:  maps.Clone(f.Spec.NodeLabels),
		Tolerations: slices.Clone(f.Spec.Tolerations),
	}
}

// flavorQuotas copies spec.flavors, in order; fromSpec calls it only for a spec that
// has some, and leaves Flavors nil otherwise.
func flavorQuotas(in []v1alpha1.FlavorQuota) []FlavorQuota {
	out := make([]FlavorQuota, len(in))
	for i, f := range in {
		out[i] = FlavorQuota{Name: f.Name, Hard: f.Hard, BorrowingLimit: f.BorrowingLimit, LendingLimit: f.LendingLimit}
	}
	return out
}

// fieldErr is a problem of one field of a budget's spec, for its InvalidSpec message.
type fieldErr struct {
	field string
	err   error
}

// addFlavorLimits adds the quota of each flavor of a spec to the normalized hard,
// borrowingLimit and lendingLimit, as resources of their own (r@flavor, flavorIndex),
// and returns, per flavor, the resources its hard names.
func addFlavorLimits(flavors []FlavorQuota, hard, borrow, lend corev1.ResourceList) (map[string]map[corev1.ResourceName]bool, []fieldErr) {
	var names map[string]map[corev1.ResourceName]bool
	var errs []fieldErr
	for _, f := range flavors {
		if names[f.Name] != nil {
			errs = append(errs, fieldErr{"flavors: ", fmt.Errorf("flavor %s is named twice", f.Name)})
			continue
		}
		own := map[corev1.ResourceName]bool{}
		for _, l := range []struct {
			field    string
			in       corev1.ResourceList
			out      corev1.ResourceList
			limiting bool
		}{{"hard", f.Hard, hard, true}, {"borrowingLimit", f.BorrowingLimit, borrow, false}, {"lendingLimit", f.LendingLimit, lend, false}} {
			n, err := NormalizeHard(l.in)
			if err != nil {
				errs = append(errs, fieldErr{fmt.Sprintf("flavors[%s].%s: ", f.Name, l.field), err})
			}
			for r, q := range n {
				l.out[flavored(r, f.Name)] = q
				if l.limiting {
					own[r] = true
				}
			}
		}
		if names == nil {
			names = map[string]map[corev1.ResourceName]bool{}
		}
		names[f.Name] = own
	}
	return names, errs
}

// flavorOrderChanged reports whether a new spec tries its flavors in another order, or
// under another fungibility: the pods that wait are decided again, as when hard changes.
func flavorOrderChanged(old, spec Budget) bool {
	return old.Fungibility != spec.Fungibility || !slices.EqualFunc(old.Flavors, spec.Flavors, func(a, b FlavorQuota) bool { return a.Name == b.Name })
}
