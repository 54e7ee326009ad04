// Package amounttest is for tests of the core that compare amounts with resource
// lists: it parses one from the short form tests write and turns amounts back into a
// list to compare by value (podtest.ListDiff).
package amounttest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
)

// Parse is podtest.ParseList's list ("cpu=1,memory=2Gi") as amounts.
func Parse(spec string) amount.List { return amount.OfList(podtest.ParseList(spec)) }

// List is a as a resource list (DecimalSI), to compare with lists by value.
func List(a amount.List) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	for r, v := range a {
		out[r] = v.Quantity(resource.DecimalSI)
	}
	return out
}
