package quota

import (
	"fmt"
	"testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// BenchmarkReclaimDecision measures one reclaim: a lender's pod of 2 CPU arrives while
// its sibling runs n pods of 1 CPU, n/2 of them borrowed; the core finds the 2 victims
// among the borrower's n running pods (candidates sorted, then the greedy choice and
// its pruning). The lender's pod is then deleted, so the victims are no longer needed,
// and the next iteration decides again from the same state.
func BenchmarkReclaimDecision(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("borrower-pods=%d", n), func(b *testing.B) {
			q, _ := newTestQueue(WithLendHold(0), victimsAtOnce)
			for _, ns := range []string{"ns-a", "ns-b"} {
				q.SetNamespace(ns, map[string]string{v1alpha1.EnabledLabel: "true"})
			}
			half := fmt.Sprintf("cpu=%d", n/2)
			q.UpsertBudget(makeBudget("", "org").Hard(fmt.Sprintf("cpu=%d", n)).Obj())
			q.UpsertBudget(makeBudget("ns-b", "b").Hard(half).Borrow(half).Parent("org").Obj())
			q.UpsertBudget(makeBudget("ns-a", "a").Hard(half).Parent("org").Obj())
			for i := range n {
				q.UpsertPod(benchPod("ns-b", i, 1000))
			}
			for _, a := range q.Admit() {
				q.Done(a.Pod.UID, Ungated, "")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				lender := benchPod("ns-a", n+i, 2000)
				q.UpsertPod(lender)
				q.Admit()
				ps := q.Preemptions()
				if len(ps) != 2 {
					b.Fatalf("iteration %d: %d victims, want 2: %+v", i, len(ps), ps)
				}
				q.DeletePod(lender.UID)
				for _, p := range ps {
					q.PreemptionNeeded(p.Victim.UID) // no longer: forgets the victim
				}
			}
		})
	}
}
