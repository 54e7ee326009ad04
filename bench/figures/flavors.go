package figures

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/gates"
)

// FlavorLabel is the node label of the benchmark's Flavors; its value is the Flavor's
// name, so a pod's nodeSelector says which flavor it was admitted on.
const FlavorLabel = "bench.quotagate.io/flavor"

// benchFlavors are the Flavors of one flavored arm, in the order its budget tries them.
// They are cluster-scoped, so they are named after the arm's namespace.
type benchFlavors []string

// createFlavors creates k Flavors named after ns, each with one node label of its own.
func (e *Env) createFlavors(ctx context.Context, ns string, k int) (benchFlavors, error) {
	var fs benchFlavors
	for i := range k {
		name := fmt.Sprintf("%s-f%d", ns, i+1)
		f := &v1alpha1.Flavor{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.FlavorSpec{NodeLabels: map[string]string{FlavorLabel: name}},
		}
		if err := e.Admin.Create(ctx, f); err != nil {
			return fs, fmt.Errorf("creating Flavor %s: %w", name, err)
		}
		fs = append(fs, name)
	}
	return fs, nil
}

// delete deletes the Flavors.
func (fs benchFlavors) delete(ctx context.Context, c client.Client) error {
	var errs []error
	for _, name := range fs {
		if err := c.Delete(ctx, &v1alpha1.Flavor{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting Flavor %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// quotas is the budget's spec.flavors: flavor i limits requests.cpu to cpu[i].
func (fs benchFlavors) quotas(cpu []string) []v1alpha1.FlavorQuota {
	out := make([]v1alpha1.FlavorQuota, len(fs))
	for i, name := range fs {
		out[i] = v1alpha1.FlavorQuota{Name: name, Hard: corev1.ResourceList{"requests.cpu": resource.MustParse(cpu[i])}}
	}
	return out
}

// createFlavoredBudget creates the Budget "budget" in ns limiting requests.cpu to cpu,
// and to flavorCPU[i] on flavor i.
func (e *Env) createFlavoredBudget(ctx context.Context, ns, cpu string, fs benchFlavors, flavorCPU []string) error {
	b := &v1alpha1.Budget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"},
		Spec: v1alpha1.BudgetSpec{
			Hard:    corev1.ResourceList{"requests.cpu": resource.MustParse(cpu)},
			Flavors: fs.quotas(flavorCPU),
		},
	}
	if err := e.Admin.Create(ctx, b); err != nil {
		return fmt.Errorf("creating the flavored budget in %s: %w", ns, err)
	}
	return nil
}

// raiseFlavoredBudget sets the budget's requests.cpu and its flavors' in one write.
func (e *Env) raiseFlavoredBudget(ctx context.Context, ns, cpu string, fs benchFlavors, flavorCPU []string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{
		"hard":    map[string]string{"requests.cpu": cpu},
		"flavors": fs.quotas(flavorCPU),
	}})
	if err != nil {
		return err
	}
	b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"}}
	if err := e.Admin.Patch(ctx, b, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("raising the flavored budget in %s: %w", ns, err)
	}
	return nil
}

// splitN is how many of n pods each of k flavors holds: n/k each, the remainder on the
// first ones.
func splitN(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
		if i < n%k {
			out[i]++
		}
	}
	return out
}

// podFlavors reads the flavor of every ungated pod of ns from its nodeSelector, and
// fails on a pod that has none of fs's labels, or a label of a Flavor not in fs. It
// returns the count per flavor and the flavor of each pod.
func (e *Env) podFlavors(ctx context.Context, ns string, fs benchFlavors) (map[string]int, map[string]string, error) {
	l, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the pods of %s: %w", ns, err)
	}
	known := map[string]bool{}
	for _, f := range fs {
		known[f] = true
	}
	counts, of := map[string]int{}, map[string]string{}
	for _, p := range l.Items {
		if gates.HasGate(&p, v1alpha1.SchedulingGate) {
			continue
		}
		f, ok := p.Spec.NodeSelector[FlavorLabel]
		if !ok || !known[f] {
			return nil, nil, fmt.Errorf("pod %s/%s was ungated with nodeSelector %v: none of the flavors %v", ns, p.Name, p.Spec.NodeSelector, fs)
		}
		counts[f]++
		of[p.Name] = f
	}
	return counts, of, nil
}

// checkSplit fails unless every pod of ns is ungated on one of fs, flavor i holding
// want[i] of them: the flavored arm measured what it says.
func (e *Env) checkSplit(ctx context.Context, ns string, fs benchFlavors, want []int) error {
	counts, _, err := e.podFlavors(ctx, ns, fs)
	if err != nil {
		return err
	}
	for i, f := range fs {
		if counts[f] != want[i] {
			return fmt.Errorf("flavor %s took %d pods of %s, want %d (its hard): per flavor %v", f, counts[f], ns, want[i], counts)
		}
	}
	return nil
}

// releaseBudget creates the Budget a release batch is parked behind: requests.cpu 0,
// and with o.Flavors, that many Flavors of its own with requests.cpu 0 each.
func (e *Env) releaseBudget(ctx context.Context, ns string, o ReleaseOpts) (benchFlavors, error) {
	if o.Flavors == 0 {
		return nil, e.CreateBudget(ctx, ns, "0")
	}
	fs, err := e.createFlavors(ctx, ns, o.Flavors)
	if err != nil {
		return fs, err
	}
	zero := make([]string, len(fs))
	for i := range zero {
		zero[i] = "0"
	}
	return fs, e.createFlavoredBudget(ctx, ns, "0", fs, zero)
}

// raiseRelease raises the budget of a release batch to fit all o.N pods, and with
// flavors each flavor to fit its share (splitN): the first fills, the rest fall back
// to the next. One write either way.
func (e *Env) raiseRelease(ctx context.Context, ns string, o ReleaseOpts, fs benchFlavors) error {
	total := fmt.Sprintf("%dm", o.N*PodCPUMilli)
	if len(fs) == 0 {
		return e.setBudgetCPU(ctx, ns, total)
	}
	return e.raiseFlavoredBudget(ctx, ns, total, fs, shareCPU(splitN(o.N, len(fs))))
}

// shareCPU is the requests.cpu of each count of pods.
func shareCPU(pods []int) []string {
	out := make([]string, len(pods))
	for i, n := range pods {
		out[i] = fmt.Sprintf("%dm", n*PodCPUMilli)
	}
	return out
}

// ReactionOverFlavors is the quotagate chain (ReactionBehind) with the budget split
// over k Flavors of one CPU each: k-1 pods that never end hold the first k-1, so each
// next pod of the chain is admitted on the last flavor, after the others are found
// full. It fails unless every pod of the chain got the last flavor.
func (e *Env) ReactionOverFlavors(ctx context.Context, k, reps int) (out []time.Duration, err error) {
	ns, err := e.NewNamespace(ctx, "reaction-flavors", true)
	if err != nil {
		return nil, err
	}
	fs, err := e.createFlavors(ctx, ns, k)
	defer func() { err = errors.Join(err, fs.delete(ctx, e.Admin)) }()
	if err != nil {
		return nil, err
	}
	one := make([]string, k)
	for i := range one {
		one[i] = "1"
	}
	if err := e.createFlavoredBudget(ctx, ns, strconv.Itoa(k), fs, one); err != nil {
		return nil, err
	}
	pw, err := WatchPods(ctx, e.Client, ns, v1alpha1.SchedulingGate)
	if err != nil {
		return nil, err
	}
	defer pw.Stop()
	holders := PodSpec{Prefix: "hold", CPU: "1", Gates: []string{v1alpha1.SchedulingGate, HoldGate}}
	if err := e.CreatePods(ctx, ns, holders, 0, k-1); err != nil {
		return nil, err
	}
	if err := pw.WaitFor(ctx, "the holders to be released", func(pw *PodWatch) bool { return len(pw.Order) == k-1 }); err != nil {
		return nil, err
	}
	spec := PodSpec{Prefix: "p", CPU: "1", Gates: []string{v1alpha1.SchedulingGate, HoldGate}}
	if err := e.CreatePods(ctx, ns, spec, 0, reps+1); err != nil {
		return nil, err
	}
	if err := e.WaitGated(ctx, ns, reps); err != nil {
		return nil, err
	}
	if out, err = e.chainFrom(ctx, ns, pw, k-1, reps); err != nil {
		return nil, err
	}
	want := make([]int, k)
	for i := range want {
		want[i] = 1
	}
	want[k-1] = reps + 1
	if err := e.checkSplit(ctx, ns, fs, want); err != nil {
		return nil, err
	}
	return out, e.DeletePods(ctx, ns)
}
