package peers

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/bench/figures"
	"github.com/quotagate/quotagate/bench/report"
)

// The scenario's preemption policies are not applied: a plain pod that either manager
// preempts is deleted, where Kueue's runner puts an evicted Workload back in its queue,
// and the ideal replay has none. Both managers run the scenario with preemption off.
const (
	kueueNoPreemption = "Never"
	kueueGroupLabel   = "kueue.x-k8s.io/pod-group-name"
	kueueGroupCount   = "kueue.x-k8s.io/pod-group-total-count"
)

// planSched reads Kueue's scenario from the module hack/tools/kueue pins, expands it
// with each set's count divided by scale, creates its PriorityClasses, and starts r's
// section of it with the ideal replay.
func (e *env) planSched(ctx context.Context, root string, scale int, r *PeersReport) error {
	mod, err := kueueModuleDir(ctx, root)
	if err != nil {
		return err
	}
	c, err := readSchedConfig(mod)
	if err != nil {
		return err
	}
	p, err := c.plan(scale)
	if err != nil {
		return err
	}
	if len(p.Workloads) == 0 {
		return fmt.Errorf("%s: no workloads", schedConfigPath)
	}
	if err := e.schedPriorityClasses(ctx, p); err != nil {
		return err
	}
	e.sched, r.Sched = &p, newSchedReport(p, scale)
	report.Logf("Kueue's scheduler performance scenario at 1/%d: %d workloads in %d queues; the ideal replay: wall %.1f s, %s",
		scale, len(p.Workloads), len(p.Queues), r.Sched.Ideal.WallSeconds, r.Sched.Ideal.classesText(p.classes()))
	if r.Sched.Policy, err = policyResult(p); err != nil {
		return err
	}
	report.Logf("  quotagate's policy with no delay (its core on a simulated clock): wall %.1f s, %s",
		r.Sched.Policy.WallSeconds, r.Sched.Policy.classesText(p.classes()))
	return nil
}

// schedPriorityClasses creates a PriorityClass for each priority of the plan: both
// managers read a plain pod's priority from it (Kueue from the class, quotagate from
// spec.priority, which the API server sets from the class).
func (e *env) schedPriorityClasses(ctx context.Context, p schedPlan) error {
	done := map[int32]bool{}
	for _, w := range p.Workloads {
		if done[w.Priority] {
			continue
		}
		done[w.Priority] = true
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: schedPriorityClass(w.Priority)}, Value: w.Priority}
		if err := e.Admin.Create(ctx, pc); err != nil {
			return fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
		}
	}
	return nil
}

// quotagateSched: a Budget of requests.cpu per queue (its nominal quota, its borrowing
// limit) under a ClusterBudget per cohort whose hard is the sum of its members' nominal
// quotas; pods created with quotagate's gate.
func (e *env) quotagateSched() schedSystem {
	return schedSystem{
		name: "quotagate", gate: v1alpha1.SchedulingGate, manager: "quotagate manager",
		namespace: func(ctx context.Context, q schedQueue) (string, error) { return e.NewNamespace(ctx, q.Name, true) },
		quotas: func(ctx context.Context, p schedPlan, nsOf map[string]string) error {
			for cohort, milli := range p.cohortMilli() {
				cb := &v1alpha1.ClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "sched-" + cohort}, Spec: v1alpha1.ClusterBudgetSpec{
					BudgetSpec: v1alpha1.BudgetSpec{Hard: cpuList(milli)}}}
				if err := e.Admin.Create(ctx, cb); err != nil {
					return fmt.Errorf("creating ClusterBudget %s: %w", cb.Name, err)
				}
			}
			for _, q := range p.Queues {
				b := &v1alpha1.Budget{ObjectMeta: metav1.ObjectMeta{Namespace: nsOf[q.Name], Name: "budget"}, Spec: v1alpha1.BudgetSpec{
					Hard: cpuList(q.NominalMilli), Parent: "sched-" + q.Cohort,
					Preemption: &v1alpha1.Preemption{Reclaim: v1alpha1.ReclaimNever, WithinBudget: v1alpha1.WithinBudgetNever},
				}}
				if q.BorrowMilli >= 0 {
					b.Spec.BorrowingLimit = cpuList(q.BorrowMilli)
				} else {
					b.Spec.BorrowingLimit = cpuList(p.cohortMilli()[q.Cohort])
				}
				if err := e.Admin.Create(ctx, b); err != nil {
					return fmt.Errorf("creating the Budget of %s: %w", b.Namespace, err)
				}
			}
			for _, q := range p.Queues {
				if err := figures.Poll(ctx, func(ctx context.Context) (bool, error) {
					b := &v1alpha1.Budget{}
					if err := e.Admin.Get(ctx, client.ObjectKey{Namespace: nsOf[q.Name], Name: "budget"}, b); err != nil {
						return false, nil
					}
					return apimeta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.ConditionReady), nil
				}); err != nil {
					return fmt.Errorf("waiting for the Budget of %s to be Ready: %w", nsOf[q.Name], err)
				}
			}
			return nil
		},
		pod: func(pod *corev1.Pod, w schedWorkload) {
			pod.Spec.SchedulingGates = append([]corev1.PodSchedulingGate{{Name: v1alpha1.SchedulingGate}}, pod.Spec.SchedulingGates...)
			if w.Pods > 1 {
				pod.Labels[v1alpha1.GroupLabel] = w.Name
				pod.Annotations = map[string]string{v1alpha1.GroupSizeAnnotation: strconv.Itoa(w.Pods)}
			}
		},
	}
}

// kueueSched: a ClusterQueue per queue, in its cohort, with the nominal quota and
// borrowing limit of cpu (and memory to spare), and a LocalQueue in the queue's
// namespace; plain pods labelled with it, gated by Kueue's webhook.
func (e *env) kueueSched() schedSystem {
	return schedSystem{
		name: "kueue", gate: kueueGate, manager: "Kueue manager",
		namespace: func(ctx context.Context, q schedQueue) (string, error) { return e.newKueueNamespace(ctx, q.Name) },
		quotas: func(ctx context.Context, p schedPlan, nsOf map[string]string) error {
			for _, q := range p.Queues {
				ns := nsOf[q.Name]
				cpu := map[string]any{"name": "cpu", "nominalQuota": milliString(q.NominalMilli)}
				if q.BorrowMilli >= 0 {
					cpu["borrowingLimit"] = milliString(q.BorrowMilli)
				}
				cq := kueueObject("ClusterQueue", "", ns, map[string]any{
					"cohortName":        "sched-" + q.Cohort,
					"namespaceSelector": map[string]any{},
					"preemption":        map[string]any{"reclaimWithinCohort": kueueNoPreemption, "withinClusterQueue": kueueNoPreemption},
					"resourceGroups": []any{map[string]any{
						"coveredResources": []any{"cpu", "memory"},
						"flavors": []any{map[string]any{"name": kueueFlavor, "resources": []any{
							cpu, map[string]any{"name": "memory", "nominalQuota": kueueMemoryQuota},
						}}},
					}},
				})
				if err := e.Admin.Create(ctx, cq); err != nil {
					return fmt.Errorf("creating ClusterQueue %s: %w", ns, err)
				}
				lq := kueueObject("LocalQueue", ns, kueueLocalQueue, map[string]any{"clusterQueue": ns})
				if err := e.Admin.Create(ctx, lq); err != nil {
					return fmt.Errorf("creating LocalQueue %s/%s: %w", ns, kueueLocalQueue, err)
				}
			}
			for _, q := range p.Queues {
				if err := figures.Poll(ctx, func(ctx context.Context) (bool, error) {
					cq := kueueObject("ClusterQueue", "", nsOf[q.Name], nil)
					if err := e.Admin.Get(ctx, client.ObjectKey{Name: nsOf[q.Name]}, cq); err != nil {
						return false, nil
					}
					conds, _, _ := unstructured.NestedSlice(cq.Object, "status", "conditions")
					for _, c := range conds {
						if m, ok := c.(map[string]any); ok && m["type"] == "Active" && m["status"] == "True" {
							return true, nil
						}
					}
					return false, nil
				}); err != nil {
					return fmt.Errorf("waiting for ClusterQueue %s to be Active: %w", nsOf[q.Name], err)
				}
			}
			return nil
		},
		pod: func(pod *corev1.Pod, w schedWorkload) {
			pod.Labels[kueueQueueLabel] = kueueLocalQueue
			if w.Pods > 1 {
				pod.Labels[kueueGroupLabel] = w.Name
				pod.Annotations = map[string]string{kueueGroupCount: strconv.Itoa(w.Pods)}
			}
		},
	}
}

func cpuList(milli int64) corev1.ResourceList {
	return corev1.ResourceList{"requests.cpu": *resource.NewMilliQuantity(milli, resource.DecimalSI)}
}

func milliString(milli int64) string {
	return resource.NewMilliQuantity(milli, resource.DecimalSI).String()
}
