package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// series gathers reg and returns the value of every sample of the named metrics, keyed
// "name{label=value,...}" with the labels in name order (a histogram's sample count
// under "..._count").
func series(t *testing.T, reg *prometheus.Registry, names ...string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for _, f := range families {
		if !want[f.GetName()] {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestBudgetMetricsNameTheBudgetInSeparateLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("newMetrics: %v", err)
	}
	defer m.gate.lead()()
	team := quota.BudgetKey{Namespace: "team-a", Name: "gpus"}
	org := quota.BudgetKey{Name: "org"}
	m.setBudget(team, quota.BudgetStatus{
		State:        v1alpha1.StateOpen,
		Hard:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		Used:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		Pending:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		AdmittedPods: 3,
		GatedPods:    2,
		// One requests more than hard, one leaves unset a value hard tracks: both count.
		NeverFit: []quota.NeverFitPod{{}, {Unset: "must specify requests.memory for: app"}},
	})
	m.setBudget(org, quota.BudgetStatus{
		State:   v1alpha1.StateClosing,
		Problem: &quota.Problem{Reason: "InvalidSpec"},
		Hard:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
	})
	m.admitted([]quota.BudgetKey{team, org}, 1200*time.Millisecond)
	m.admitted(nil, time.Second)

	got := series(t, reg, "quotagate_budget_hard", "quotagate_budget_used", "quotagate_budget_pending",
		"quotagate_budget_state", "quotagate_budget_ready", "quotagate_budget_gated_pods",
		"quotagate_budget_admitted_pods", "quotagate_budget_never_fit_pods",
		"quotagate_budget_admissions_total", "quotagate_pod_wait_seconds")
	want := map[string]float64{
		"quotagate_budget_hard{kind=Budget,name=gpus,namespace=team-a,resource=cpu}":    4,
		"quotagate_budget_used{kind=Budget,name=gpus,namespace=team-a,resource=cpu}":    3,
		"quotagate_budget_pending{kind=Budget,name=gpus,namespace=team-a,resource=cpu}": 0.5,
		"quotagate_budget_state{kind=Budget,name=gpus,namespace=team-a,state=Open}":     1,
		"quotagate_budget_state{kind=Budget,name=gpus,namespace=team-a,state=Closing}":  0,
		"quotagate_budget_state{kind=Budget,name=gpus,namespace=team-a,state=Closed}":   0,
		"quotagate_budget_ready{kind=Budget,name=gpus,namespace=team-a}":                1,
		"quotagate_budget_gated_pods{kind=Budget,name=gpus,namespace=team-a}":           2,
		"quotagate_budget_admitted_pods{kind=Budget,name=gpus,namespace=team-a}":        3,
		"quotagate_budget_never_fit_pods{kind=Budget,name=gpus,namespace=team-a}":       2,
		"quotagate_budget_admissions_total{kind=Budget,name=gpus,namespace=team-a}":     1,
		"quotagate_pod_wait_seconds{kind=Budget,name=gpus,namespace=team-a}_count":      1,
		"quotagate_budget_hard{kind=ClusterBudget,name=org,namespace=,resource=cpu}":    8,
		"quotagate_budget_used{kind=ClusterBudget,name=org,namespace=,resource=cpu}":    0,
		"quotagate_budget_pending{kind=ClusterBudget,name=org,namespace=,resource=cpu}": 0,
		"quotagate_budget_state{kind=ClusterBudget,name=org,namespace=,state=Open}":     0,
		"quotagate_budget_state{kind=ClusterBudget,name=org,namespace=,state=Closing}":  1,
		"quotagate_budget_state{kind=ClusterBudget,name=org,namespace=,state=Closed}":   0,
		"quotagate_budget_ready{kind=ClusterBudget,name=org,namespace=}":                0,
		"quotagate_budget_gated_pods{kind=ClusterBudget,name=org,namespace=}":           0,
		"quotagate_budget_admitted_pods{kind=ClusterBudget,name=org,namespace=}":        0,
		"quotagate_budget_never_fit_pods{kind=ClusterBudget,name=org,namespace=}":       0,
		"quotagate_budget_admissions_total{kind=ClusterBudget,name=org,namespace=}":     1,
		"quotagate_pod_wait_seconds{kind=ClusterBudget,name=org,namespace=}_count":      1,
		"quotagate_budget_admissions_total{kind=None,name=,namespace=}":                 1,
		"quotagate_pod_wait_seconds{kind=None,name=,namespace=}_count":                  1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budget series (-want +got):\n%s", diff)
	}

	// Deleting a budget drops every series that names it, and only those.
	m.forgetBudget(team)
	for key := range series(t, reg, "quotagate_budget_hard", "quotagate_budget_state", "quotagate_budget_ready",
		"quotagate_budget_admissions_total", "quotagate_pod_wait_seconds", "quotagate_queue_depth") {
		if strings.Contains(key, "namespace=team-a") {
			t.Errorf("series %s outlived its deleted budget", key)
		}
	}
	if n := testutil.CollectAndCount(m.budgetHard); n != 1 {
		t.Errorf("quotagate_budget_hard has %d series after deleting team-a/gpus, want 1 (org's)", n)
	}
}

func TestQueueMovesNameBothEnds(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("newMetrics: %v", err)
	}
	defer m.gate.lead()()
	key := quota.BudgetKey{Namespace: "team-a", Name: "gpus"}
	m.Moved(key, "", quota.QueueActive)
	m.Moved(key, "", quota.QueueActive)
	m.Moved(key, quota.QueueActive, quota.QueueBackoff)
	m.Moved(key, quota.QueueActive, "")

	got := series(t, reg, "quotagate_queue_moves_total", "quotagate_queue_depth", "quotagate_queue_incoming_pods_total")
	want := map[string]float64{
		"quotagate_queue_moves_total{from=incoming,to=active}":                        2,
		"quotagate_queue_moves_total{from=active,to=backoff}":                         1,
		"quotagate_queue_moves_total{from=active,to=removed}":                         1,
		"quotagate_queue_incoming_pods_total{queue=active}":                           2,
		"quotagate_queue_depth{kind=Budget,name=gpus,namespace=team-a,queue=active}":  0,
		"quotagate_queue_depth{kind=Budget,name=gpus,namespace=team-a,queue=backoff}": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queue series (-want +got):\n%s", diff)
	}

	// The budget is deleted, and created again with a pod: its depth starts again from
	// that pod, in a series of its own.
	m.forgetBudget(key)
	if got := series(t, reg, "quotagate_queue_depth"); len(got) != 0 {
		t.Errorf("queue depth series left after the budget was deleted: %v", got)
	}
	m.Moved(key, "", quota.QueueActive)
	want = map[string]float64{"quotagate_queue_depth{kind=Budget,name=gpus,namespace=team-a,queue=active}": 1}
	if diff := cmp.Diff(want, series(t, reg, "quotagate_queue_depth")); diff != "" {
		t.Errorf("queue depth of the budget created again (-want +got):\n%s", diff)
	}
}

func TestTwoControllersInOneRegistryShareTheirSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("first newMetrics: %v", err)
	}
	b, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("second newMetrics on the same registry: %v", err)
	}
	a.ungateErrors.WithLabelValues("conflict").Inc()
	if got := testutil.ToFloat64(b.ungateErrors.WithLabelValues("conflict")); got != 1 {
		t.Errorf("the second controller sees %v ungate errors, want 1", got)
	}
}

// A replica exports its series only while it leads: a standby's core is fed too, and its
// copies would double every sum over the replicas. Two controllers sharing a registry
// export while either leads.
func TestOnlyALeadingReplicaExportsItsSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("newMetrics: %v", err)
	}
	key := quota.BudgetKey{Namespace: "team-a", Name: "gpus"}
	a.Moved(key, "", quota.QueueActive)
	a.setBudget(key, quota.BudgetStatus{State: v1alpha1.StateOpen, GatedPods: 1})
	a.admitted([]quota.BudgetKey{key}, time.Second)
	names := []string{"quotagate_queue_depth", "quotagate_queue_incoming_pods_total", "quotagate_budget_gated_pods",
		"quotagate_budget_state", "quotagate_budget_admissions_total", "quotagate_pod_wait_seconds"}
	standby := series(t, reg, names...)
	if len(standby) != 0 {
		t.Errorf("a standby exports %v, want nothing", standby)
	}

	doneA := a.gate.lead()
	leading := series(t, reg, names...)
	for _, want := range []string{
		"quotagate_queue_depth{kind=Budget,name=gpus,namespace=team-a,queue=active}",
		"quotagate_budget_gated_pods{kind=Budget,name=gpus,namespace=team-a}",
		"quotagate_budget_admissions_total{kind=Budget,name=gpus,namespace=team-a}",
	} {
		if leading[want] != 1 {
			t.Errorf("the leader exports %s = %v, want 1 (all: %v)", want, leading[want], leading)
		}
	}

	b, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("second newMetrics on the same registry: %v", err)
	}
	doneB := b.gate.lead()
	doneA()
	doneA() // idempotent: does not take b's lead away
	if got := series(t, reg, names...); !cmp.Equal(got, leading) {
		t.Errorf("with the second controller leading the process exports %v, want %v", got, leading)
	}
	doneB()
	if got := series(t, reg, names...); len(got) != 0 {
		t.Errorf("after both stopped leading the process exports %v, want nothing", got)
	}
}

// A flavored budget publishes its hard and used per flavor and resource, and a budget
// whose status drops a flavor (or a flavor's resource) drops those series at its next
// status, not only when the budget is deleted.
func TestFlavorMetricsFollowTheBudgetsFlavors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("newMetrics: %v", err)
	}
	defer m.gate.lead()()
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	team := quota.BudgetKey{Namespace: "team-a", Name: "gpus"}
	org := quota.BudgetKey{Name: "org"}
	m.setBudget(team, quota.BudgetStatus{
		State: v1alpha1.StateOpen,
		Hard:  list("requests.cpu", "64"),
		Used:  list("requests.cpu", "10"),
		Flavors: []quota.FlavorStatus{
			{Name: "h100", Hard: list("requests.nvidia.com/gpu", "8", "requests.cpu", "32"), Used: list("requests.nvidia.com/gpu", "6")},
			{Name: "a100", Hard: list("requests.nvidia.com/gpu", "32"), Used: list("requests.nvidia.com/gpu", "1")},
			// A flavor without a hard of its own has nothing to publish.
			{Name: "spot", Used: list("requests.cpu", "4")},
		},
	})
	m.setBudget(org, quota.BudgetStatus{
		State:   v1alpha1.StateOpen,
		Flavors: []quota.FlavorStatus{{Name: "h100", Hard: list("requests.nvidia.com/gpu", "16")}},
	})
	names := []string{"quotagate_budget_flavor_hard", "quotagate_budget_flavor_used"}
	want := map[string]float64{
		"quotagate_budget_flavor_hard{flavor=h100,kind=Budget,name=gpus,namespace=team-a,resource=requests.nvidia.com/gpu}": 8,
		"quotagate_budget_flavor_used{flavor=h100,kind=Budget,name=gpus,namespace=team-a,resource=requests.nvidia.com/gpu}": 6,
		"quotagate_budget_flavor_hard{flavor=h100,kind=Budget,name=gpus,namespace=team-a,resource=requests.cpu}":            32,
		"quotagate_budget_flavor_used{flavor=h100,kind=Budget,name=gpus,namespace=team-a,resource=requests.cpu}":            0,
		"quotagate_budget_flavor_hard{flavor=a100,kind=Budget,name=gpus,namespace=team-a,resource=requests.nvidia.com/gpu}": 32,
		"quotagate_budget_flavor_used{flavor=a100,kind=Budget,name=gpus,namespace=team-a,resource=requests.nvidia.com/gpu}": 1,
		"quotagate_budget_flavor_hard{flavor=h100,kind=ClusterBudget,name=org,namespace=,resource=requests.nvidia.com/gpu}": 16,
		"quotagate_budget_flavor_used{flavor=h100,kind=ClusterBudget,name=org,namespace=,resource=requests.nvidia.com/gpu}": 0,
	}
	if diff := cmp.Diff(want, series(t, reg, names...)); diff != "" {
		t.Errorf("flavor series (-want +got):\n%s", diff)
	}

	// team-a/gpus drops a100, and h100 stops limiting CPU: their series go; org's stay.
	m.setBudget(team, quota.BudgetStatus{
		State: v1alpha1.StateOpen,
		Hard:  list("requests.cpu", "64"),
		Flavors: []quota.FlavorStatus{
			{Name: "h100", Hard: list("requests.nvidia.com/gpu", "8"), Used: list("requests.nvidia.com/gpu", "7")},
		},
	})
	want = map[string]float64{
		"quotagate_budget_flavor_hard{flavor=h100,kind=Budget,name=gpus,namespace=team-a,resource=requests.nvidia.com/gpu}": 8,
		"quotagate_budget_flavor_used{flavor=h100,kind=Budget,name=gpus,namespace=team-a,resource=requests.nvidia.com/gpu}": 7,
		"quotagate_budget_flavor_hard{flavor=h100,kind=ClusterBudget,name=org,namespace=,resource=requests.nvidia.com/gpu}": 16,
		"quotagate_budget_flavor_used{flavor=h100,kind=ClusterBudget,name=org,namespace=,resource=requests.nvidia.com/gpu}": 0,
	}
	if diff := cmp.Diff(want, series(t, reg, names...)); diff != "" {
		t.Errorf("flavor series after dropping a flavor (-want +got):\n%s", diff)
	}

	// Without flavors the budget has none of these series; deleting org drops its own.
	m.setBudget(team, quota.BudgetStatus{State: v1alpha1.StateOpen, Hard: list("requests.cpu", "64")})
	m.forgetBudget(org)
	if got := series(t, reg, names...); len(got) != 0 {
		t.Errorf("flavor series left after the budget dropped its flavors and org was deleted: %v", got)
	}
}
