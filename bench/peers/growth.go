package peers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// deepQueue is the deep queue figure (Kueue's users' kueue#14477: hundreds of
// workloads waiting while quota frees a little at a time): a quota of one pod, Depth pods
// queued behind the chain of the reaction figure; each round a pod ends and the time to
// the next pod's ungate is taken, the head of a queue of at least Depth pods.
type deepQueue struct {
	Depth     int       `json:"depth"`
	Quotagate []float64 `json:"quotagateMillis"`
	Bare      []float64 `json:"bareClientMillis"`
	Kueue     []float64 `json:"kueueMillis"`
}

// memoryLevel is each manager's memory with Pending pods (Kueue: pending Workloads)
// waiting behind a quota of zero.
type memoryLevel struct {
	Pending   int            `json:"pending"`
	Quotagate figures.Memory `json:"quotagate"`
	Kueue     figures.Memory `json:"kueue"`
}

// familyRelease is quotagate's release figure in a family that borrows with fair
// sharing, beside the plain budget's, taking turns.
type familyRelease struct {
	N      int       `json:"n"`
	Plain  []float64 `json:"plainSeconds"`
	Family []float64 `json:"familySeconds"`
}

// scaledLevels divides each of levels by scale (at least 1 pod).
func scaledLevels(levels []int, scale int) []int {
	out := make([]int, len(levels))
	for i, l := range levels {
		out[i] = max(1, l/max(scale, 1))
	}
	return out
}

// memoryGrowthQuotagate parks pods in one namespace behind a Budget of zero, level by
// level, and reads the manager's memory once its status counts each level.
func (e *env) memoryGrowthQuotagate(ctx context.Context, levels []int, pid int, out []memoryLevel) error {
	ns, err := e.NewNamespace(ctx, "growth-qg", true)
	if err != nil {
		return err
	}
	if err := e.CreateBudget(ctx, ns, "0"); err != nil {
		return err
	}
	spec := figures.PodSpec{Prefix: "p", CPU: fmt.Sprintf("%dm", figures.PodCPUMilli), Gates: []string{v1alpha1.SchedulingGate, figures.HoldGate}}
	from := 0
	for i, level := range levels {
		if err := e.CreatePods(ctx, ns, spec, from, level); err != nil {
			return err
		}
		from = level
		if err := e.WaitGated(ctx, ns, level); err != nil {
			return err
		}
		if out[i].Quotagate, err = figures.ProcessMemory(pid); err != nil {
			return err
		}
		report.Logf("  quotagate with %d pending pods: RSS %.0f MiB", level, report.MiB(out[i].Quotagate.RSS))
	}
	return e.DeletePods(ctx, ns)
}

// memoryGrowthKueue is memoryGrowthQuotagate for Kueue: a ClusterQueue of zero cpu, read
// once it counts each level of pending Workloads. Its pods are left in place
// (measureGrowthKueueLast).
func (e *env) memoryGrowthKueue(ctx context.Context, levels []int, pid int, out []memoryLevel) error {
	ns, err := e.newKueueNamespace(ctx, "growth-kueue")
	if err != nil {
		return err
	}
	if err := e.kueueQueues(ctx, ns, "0"); err != nil {
		return err
	}
	spec := kueueSpec(figures.PodSpec{Prefix: "p", CPU: fmt.Sprintf("%dm", figures.PodCPUMilli), Gates: []string{figures.HoldGate}})
	from := 0
	for i, level := range levels {
		if err := e.CreatePods(ctx, ns, spec, from, level); err != nil {
			return err
		}
		from = level
		// Kueue makes a Workload of each pod at some tens a second: 50,000 take minutes.
		if err := e.waitKueuePendingWithin(ctx, ns, level, 5*time.Minute+time.Duration(level)*100*time.Millisecond); err != nil {
			return err
		}
		if out[i].Kueue, err = figures.ProcessMemory(pid); err != nil {
			return err
		}
		report.Logf("  Kueue with %d pending Workloads: RSS %.0f MiB", level, report.MiB(out[i].Kueue.RSS))
	}
	return nil
}

// releaseInFamily is figures' ReleaseByQuotagate in a family: n pods gated in a Budget
// of zero cpu that may borrow n*PodCPUMilli, under a ClusterBudget, beside a lender of
// zero and a second borrower with twice its fair-sharing weight and no pods; the lender's
// hard is raised to n*PodCPUMilli, all of it lent, and the time runs from that write to
// the last pod's ungate event.
func (e *env) releaseInFamily(ctx context.Context, n int) (figures.ReleaseRun, error) {
	var run figures.ReleaseRun
	var ns [3]string // borrower, lender, second borrower
	for i, what := range []string{"family-borrower", "family-lender", "family-other"} {
		var err error
		if ns[i], err = e.NewNamespace(ctx, what, true); err != nil {
			return run, err
		}
	}
	all := cpuList(int64(n * figures.PodCPUMilli))
	parent := "family-" + ns[0]
	if err := e.Admin.Create(ctx, &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: parent},
		Spec: v1alpha1.ClusterBudgetSpec{BudgetSpec: v1alpha1.BudgetSpec{Hard: all}}}); err != nil {
		return run, fmt.Errorf("creating ClusterBudget %s: %w", parent, err)
	}
	weight := func(w string) *v1alpha1.FairSharing {
		q := resource.MustParse(w)
		return &v1alpha1.FairSharing{Weight: &q}
	}
	budgets := []v1alpha1.BudgetSpec{
		{Hard: cpuList(0), Parent: parent, BorrowingLimit: all, FairSharing: weight("1")},
		{Hard: cpuList(0), Parent: parent, FairSharing: weight("1")},
		{Hard: cpuList(0), Parent: parent, BorrowingLimit: all, FairSharing: weight("2")},
	}
	for i, spec := range budgets {
		if err := e.Admin.Create(ctx, &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns[i], Name: "budget"}, Spec: spec}); err != nil {
			return run, fmt.Errorf("creating the Budget of %s: %w", ns[i], err)
		}
	}
	pw, err := figures.WatchPods(ctx, e.Client, ns[0], v1alpha1.SchedulingGate)
	if err != nil {
		return run, err
	}
	defer pw.Stop()
	spec := figures.PodSpec{Prefix: "p", CPU: fmt.Sprintf("%dm", figures.PodCPUMilli), Gates: []string{v1alpha1.SchedulingGate, figures.HoldGate}}
	if err := e.CreatePods(ctx, ns[0], spec, 0, n); err != nil {
		return run, err
	}
	if err := e.WaitGated(ctx, ns[0], n); err != nil {
		return run, err
	}
	if _, err := e.WaitEventsSettled(ctx, ns[0]); err != nil {
		return run, err
	}
	o := figures.ReleaseOpts{N: n}
	before := e.Meter.Sample()
	start := time.Now()
	patch := fmt.Appendf(nil, `{"spec":{"hard":{"requests.cpu":%q}}}`, milliString(int64(n*figures.PodCPUMilli)))
	lender := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns[1], Name: "budget"}}
	if err := e.Admin.Patch(ctx, lender, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return run, fmt.Errorf("raising the lender's budget in %s: %w", ns[1], err)
	}
	if err := pw.WaitFor(ctx, "quotagate to release every borrowing pod", o.Done); err != nil {
		return run, err
	}
	run.CPU = e.Meter.Since(before)
	run.Took, run.First = o.Times(pw, start)
	return run, e.DeletePods(ctx, ns[0])
}

// measureFamilyRelease takes turns: the plain release, then the family's, reps times.
func measureFamilyRelease(ctx context.Context, e *env, n, reps int) (*familyRelease, error) {
	out := &familyRelease{N: n}
	for i := range reps {
		p, err := e.ReleaseByQuotagate(ctx, figures.ReleaseOpts{N: n})
		if err != nil {
			return nil, fmt.Errorf("plain release, repetition %d: %w", i+1, err)
		}
		f, err := e.releaseInFamily(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("family release, repetition %d: %w", i+1, err)
		}
		out.Plain, out.Family = append(out.Plain, p.Took.Seconds()), append(out.Family, f.Took.Seconds())
		report.Logf("  release %d: plain budget %.0f pods/s, borrowing family with fair sharing %.0f pods/s", i+1, float64(n)/p.Took.Seconds(), float64(n)/f.Took.Seconds())
	}
	return out, nil
}
