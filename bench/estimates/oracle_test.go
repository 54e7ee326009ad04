package estimates

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// opted are the labels of a namespace opted in.
var opted = map[string]string{v1alpha1.EnabledLabel: "true"}

var epoch = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func cpus(n int) corev1.ResourceList {
	return corev1.ResourceList{"requests.cpu": *resource.NewQuantity(int64(n), resource.DecimalSI)}
}

// budget is a Budget of slots pods of 1 CPU in namespace ns, under parent (none when
// empty) with borrow more to borrow.
func budget(ns string, slots int, parent string, borrow int) quota.Budget {
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, Spec: v1alpha1.BudgetSpec{Hard: cpus(slots), Parent: parent}}
	if borrow > 0 {
		b.Spec.BorrowingLimit = cpus(borrow)
		b.Spec.Preemption = &v1alpha1.Preemption{Reclaim: v1alpha1.ReclaimNever}
	}
	return quota.BudgetFromAPI(b)
}

// oraclePod is pod n of ns, of kind, at priority, created created seconds after epoch;
// gated, or holding quota since since seconds after epoch.
func oraclePod(ns string, n, kind int, priority int32, created float64, gated bool, since float64) OraclePod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", n), UID: types.UID("uid-" + ns + fmt.Sprint(n)),
			CreationTimestamp: metav1.NewTime(epoch.Add(seconds(created)))},
		Spec: corev1.PodSpec{Priority: ptr.To(priority), Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	o := OraclePod{Kind: kind}
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}
	} else {
		p.Status.Phase = corev1.PodRunning
		o.Since = epoch.Add(seconds(since))
	}
	o.Pod = quota.NewPodUnshared(p, v1alpha1.SchedulingGate, epoch)
	return o
}

func TestOracle(t *testing.T) {
	s := time.Second
	constant := func(kind int, _ *rand.Rand) time.Duration { return []time.Duration{10 * s, 30 * s}[kind] }
	now := epoch.Add(100 * s)
	labels := map[string]map[string]string{"a": opted, "b": opted}
	for name, tc := range map[string]struct {
		budgets []quota.Budget
		pods    []OraclePod
		want    []time.Duration
	}{
		"in order: the running pod's end, then the first admitted one's": {
			budgets: []quota.Budget{budget("a", 1, "", 0)},
			pods: []OraclePod{
				oraclePod("a", 0, 0, Low, 0, false, 95),
				oraclePod("a", 1, 1, Low, 1, true, 0),
				oraclePod("a", 2, 0, Low, 2, true, 0),
			},
			want: []time.Duration{0, 5 * s, 35 * s},
		},
		"a higher priority created later goes first": {
			budgets: []quota.Budget{budget("a", 1, "", 0)},
			pods: []OraclePod{
				oraclePod("a", 0, 0, Low, 0, false, 95),
				oraclePod("a", 1, 1, Low, 1, true, 0),
				oraclePod("a", 2, 0, High, 2, true, 0),
			},
			want: []time.Duration{0, 15 * s, 5 * s},
		},
		"a pod that outran its kind may end at once": {
			budgets: []quota.Budget{budget("a", 1, "", 0)},
			pods: []OraclePod{
				oraclePod("a", 0, 0, Low, 0, false, 50),
				oraclePod("a", 1, 0, Low, 1, true, 0),
			},
			want: []time.Duration{0, 0},
		},
		"a budget borrows what its idle sibling lends": {
			budgets: []quota.Budget{
				quota.ClusterBudgetFromAPI(&v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "f"},
					Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: cpus(2)}}}),
				budget("a", 1, "f", 1), budget("b", 1, "f", 1),
			},
			pods: []OraclePod{
				oraclePod("a", 0, 0, Low, 0, false, 95),
				oraclePod("a", 1, 0, Low, 1, true, 0),
				oraclePod("a", 2, 0, Low, 2, true, 0),
			},
			// The second pod borrows b's slot at once; the third waits for the first end.
			want: []time.Duration{0, 0, 5 * s},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := Oracle(now, tc.budgets, labels, tc.pods, 5, constant, rand.New(rand.NewPCG(1, 2)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// With random runs the oracle answers each pod's median start: one slot, runs of 1 or
// 3 s at even odds, so the second pod in the queue starts after one run (1 or 3 s:
// median 1 or 3), the third after two (2, 4, 4 or 6 s: median 4).
func TestOracleMedian(t *testing.T) {
	s := time.Second
	coin := func(_ int, r *rand.Rand) time.Duration { return []time.Duration{s, 3 * s}[r.IntN(2)] }
	pods := []OraclePod{oraclePod("a", 0, 0, Low, 0, true, 0), oraclePod("a", 1, 0, Low, 1, true, 0), oraclePod("a", 2, 0, Low, 2, true, 0)}
	got := Oracle(epoch, []quota.Budget{budget("a", 1, "", 0)}, map[string]map[string]string{"a": opted}, pods, 401, coin, rand.New(rand.NewPCG(3, 4)))
	if got[0] != 0 || (got[1] != s && got[1] != 3*s) || got[2] != 4*s {
		t.Errorf("median starts %v, want 0, 1s or 3s, and 4s", got)
	}
}
