package quota

import "github.com/quotagate/quotagate/pkg/quota/internal/amount"

// demand is what a unit would add to each budget it is charged to, as every capacity
// question (admitter, families, preemptions) asks it: a pod's usage less the claims
// the budget charges already (podState.adds), a group's sums per budget, a victim
// record's adds.
type demand func(b *budget) amount.List

// usageDemand adds the same usage to every budget (a pod whose claims are left out).
func usageDemand(usage amount.List) demand {
	return func(*budget) amount.List { return usage }
}

// sumsDemand adds sums[b] to each budget b (a group's members together).
func sumsDemand(sums map[*budget]amount.List) demand {
	return func(b *budget) amount.List { return sums[b] }
}
