package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// Which pods are charged to a budget, and what each is charged, is decided by the
// manager's own admission core (pkg/quota), fed what the user may read: the budgets,
// the namespaces' labels and the pods. The core charges a pod that is not gated and
// not terminal (nor past its deletion grace period) to every budget that covers it
// (the Budgets of its namespace whose podSelector matches, the ClusterBudgets whose
// namespaceSelector matches, and their ancestors) and to the budgets its
// quotagate.io/admitted-by annotation names (where it was admitted, even if its labels
// changed since). Each pod is given to the core in turn, and what it adds to the
// budget's used is its share: the shares add up to what the core's used is, which is
// what the manager writes to status.used. ResourceClaims' devices are not read: a
// budget that limits them shows them in status.used only.

// podUsage is one pod charged to a budget and what it is charged, restricted to the
// resources the budget's hard names.
type podUsage struct {
	Pod   quota.PodRef        `json:"pod"`
	Usage corev1.ResourceList `json:"usage"`
}

// budgetUsage is what usage knows of a budget.
type budgetUsage struct {
	Budget quota.BudgetKey `json:"budget"`
	// Hard is status.hard (spec.hard normalized before the manager wrote status).
	Hard corev1.ResourceList `json:"hard"`
	// StatusUsed is status.used as the manager last wrote it.
	StatusUsed corev1.ResourceList `json:"statusUsed"`
	// Total is what the pods below add up to.
	Total corev1.ResourceList `json:"total"`
	Pods  []podUsage          `json:"pods"`
	Notes []string            `json:"notes,omitempty"`
}

// loadUsage reads the budget key and the pods charged to it.
func loadUsage(ctx context.Context, c client.Client, key quota.BudgetKey, now time.Time) (*budgetUsage, error) {
	core := quota.NewAdmissionQueue()
	u := &budgetUsage{Budget: key, Pods: []podUsage{}}
	var status *v1alpha1.BudgetStatus
	var spec *v1alpha1.BudgetSpec
	if key.IsCluster() {
		var cb v1alpha1.ClusterBudget
		if err := c.Get(ctx, client.ObjectKey{Name: key.Name}, &cb); err != nil {
			return nil, fmt.Errorf("reading %s: %w", key.Describe(), err)
		}
		status, spec = &cb.Status, &cb.Spec.BudgetSpec
	} else {
		var b v1alpha1.Budget
		if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, &b); err != nil {
			return nil, fmt.Errorf("reading %s: %w", key.Describe(), err)
		}
		status, spec = &b.Status, &b.Spec
	}
	u.Hard, u.StatusUsed = status.Hard, status.Used
	if u.Hard == nil {
		u.Hard, _ = quota.NormalizeHard(spec.Hard)
	}
	if err := feedBudgets(ctx, c, core, key); err != nil {
		return nil, err
	}

	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(key.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the pods %s may charge: %w", key.Describe(), err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		return quota.PodRef{Namespace: a.Namespace, Name: a.Name}.Compare(quota.PodRef{Namespace: b.Namespace, Name: b.Name})
	})
	before, _ := core.Reader().Status(key)
	for i := range pods.Items {
		p := quota.NewPod(&pods.Items[i], v1alpha1.SchedulingGate, now)
		if p.Gated || p.Terminal {
			continue
		}
		core.UpsertPod(p)
		after, _ := core.Reader().Status(key)
		charged := after.AdmittedPods > before.AdmittedPods
		if !charged {
			continue // not charged to this budget
		}
		share := zeroList(u.Hard)
		for name := range share {
			q := after.Used[name].DeepCopy()
			q.Sub(before.Used[name])
			share[name] = q
		}
		u.Pods = append(u.Pods, podUsage{Pod: p.PodRef, Usage: share})
		before = after
	}
	u.Total = mergeZero(u.Hard, before.Used)
	if !equalUsage(u.Total, mergeZero(u.Hard, u.StatusUsed)) {
		u.Notes = append(u.Notes, fmt.Sprintf("the pods charged now add up to %s, and status.used says %s: the manager writes status after each change (run again), and ResourceClaims' devices are in status.used only",
			listString(u.Total), listString(mergeZero(u.Hard, u.StatusUsed))))
	}
	return u, nil
}

// feedBudgets tells the core the budgets and namespaces that decide where key's pods
// are charged: for a Budget, its namespace's Budgets (and the ClusterBudgets, when the
// user may list them); for a ClusterBudget, every Budget, ClusterBudget and namespace.
func feedBudgets(ctx context.Context, c client.Client, core *quota.AdmissionQueue, key quota.BudgetKey) error {
	if key.IsCluster() {
		var namespaces corev1.NamespaceList
		if err := c.List(ctx, &namespaces); err != nil {
			return fmt.Errorf("listing namespaces (usage of a ClusterBudget reads every namespace's labels): %w", err)
		}
		for _, n := range namespaces.Items {
			core.SetNamespace(n.Name, n.Labels)
		}
	} else {
		var n corev1.Namespace
		switch err := c.Get(ctx, client.ObjectKey{Name: key.Namespace}, &n); {
		case err == nil:
			core.SetNamespace(n.Name, n.Labels)
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("reading namespace %s: %w", key.Namespace, err)
		}
	}
	var budgets v1alpha1.BudgetList
	if err := c.List(ctx, &budgets, client.InNamespace(key.Namespace)); err != nil {
		return fmt.Errorf("listing budgets: %w", err)
	}
	for i := range budgets.Items {
		core.UpsertBudget(quota.BudgetFromAPI(&budgets.Items[i]))
	}
	var clusterBudgets v1alpha1.ClusterBudgetList
	if err := c.List(ctx, &clusterBudgets); err != nil && (key.IsCluster() || !apierrors.IsForbidden(err)) {
		return fmt.Errorf("listing clusterbudgets: %w", err)
	}
	for i := range clusterBudgets.Items {
		core.UpsertBudget(quota.ClusterBudgetFromAPI(&clusterBudgets.Items[i]))
	}
	return nil
}

// zeroList is a list with a zero for each name of l.
func zeroList(l corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l))
	for name := range l {
		out[name] = resource.Quantity{}
	}
	return out
}

// mergeZero is values restricted to the names of hard, zero where values has none.
func mergeZero(hard, values corev1.ResourceList) corev1.ResourceList {
	out := zeroList(hard)
	for name := range out {
		if q, ok := values[name]; ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// equalUsage reports whether two lists hold equal amounts of the same names.
func equalUsage(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if o, ok := b[name]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// listString shows a list as "pods=3, requests.cpu=4", names in order.
func listString(l corev1.ResourceList) string {
	s := ""
	for i, name := range sortedNames(l) {
		if i > 0 {
			s += ", "
		}
		q := l[name]
		s += string(name) + "=" + q.String()
	}
	return s
}
