package quota

import corev1 "k8s.io/api/core/v1"

// demand is what a unit would add to each budget it is charged to, as every capacity
// question (admit.go, families, preemptions) asks it: a pod's usage less the claims
// the budget charges already (podState.adds), a group's sums per budget, a victim
// record's adds.
type demand func(b *budget) corev1.ResourceList

// usageDemand adds the same usage to every budget (a pod whose claims are left out).
func usageDemand(usage corev1.ResourceList) demand {
	return func(*budget) corev1.ResourceList { return usage }
}

// sumsDemand adds sums[b] to each budget b (a group's members together).
func sumsDemand(sums map[*budget]corev1.ResourceList) demand {
	return func(b *budget) corev1.ResourceList { return sums[b] }
}
