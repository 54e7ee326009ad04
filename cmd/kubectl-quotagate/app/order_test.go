package app

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/pkg/quota"
)

// These tests hold the snapshot to its promise: the order it shows is the order in
// which the admission core admits the waiting pods as capacity frees, and each reason
// names the resource that is short, the amounts and the budget.

// orderPod is a gated pod for the order tests: priority, creation offset (seconds) and
// requests.
type orderPod struct {
	name     string
	ns       string
	priority int32
	created  int
	cpu      string
	memory   string
}

func (p orderPod) pod() *corev1.Pod {
	b := makePod(p.ns, p.name).Priority(p.priority).Created(p.created).Req("cpu=" + p.cpu)
	if p.memory != "" {
		b.Req("memory=" + p.memory)
	}
	return b.Obj()
}

// admitAll runs Admit, confirms every admission as ungated, and returns the pods in
// the order the core admitted them.
func admitAll(q *quota.AdmissionQueue) []string {
	var names []string
	for _, a := range q.Admit() {
		q.Done(a.Pod.UID, quota.Ungated, "")
		names = append(names, a.Pod.String())
	}
	return names
}

func snapshotOrder(s quota.Snapshot, key quota.BudgetKey) []string {
	var names []string
	for _, b := range s.Budgets {
		if b.Budget == key {
			for _, p := range b.Pods {
				names = append(names, p.Pod.String())
			}
		}
	}
	return names
}

func TestSnapshotOrderIsAdmissionOrder(t *testing.T) {
	mixed := []orderPod{
		{name: "low-old", ns: "team-a", priority: 0, created: 10, cpu: "1"},
		{name: "high-new", ns: "team-a", priority: 1000, created: 90, cpu: "1"},
		{name: "mid", ns: "team-a", priority: 500, created: 50, cpu: "1"},
		{name: "low-new", ns: "team-a", priority: 0, created: 80, cpu: "1"},
		{name: "high-old", ns: "team-a", priority: 1000, created: 20, cpu: "1"},
		{name: "negative", ns: "team-a", priority: -10, created: 1, cpu: "1"},
		{name: "low-mid", ns: "team-a", priority: 0, created: 40, cpu: "1"},
		{name: "mid-2", ns: "team-a", priority: 500, created: 60, cpu: "1"},
	}
	teamA := quota.BudgetKey{Namespace: "team-a", Name: "team-a"}
	tests := map[string]struct {
		budgets []quota.Budget
		pods    []orderPod
		// watch is the budget whose snapshot order is checked.
		watch quota.BudgetKey
		// wantFirst is what the first Admit takes.
		wantFirst []string
	}{
		"BestEffortFIFO, equal requests": {
			budgets:   []quota.Budget{{Key: teamA, Hard: parseList("cpu=2"), Strategy: v1alpha1.BestEffortFIFO}},
			pods:      mixed,
			watch:     teamA,
			wantFirst: []string{"team-a/high-old", "team-a/high-new"},
		},
		"StrictFIFO, mixed requests": {
			budgets: []quota.Budget{{Key: teamA, Hard: parseList("cpu=4"), Strategy: v1alpha1.StrictFIFO}},
			pods: []orderPod{
				{name: "a", ns: "team-a", priority: 0, created: 10, cpu: "3"},
				{name: "b", ns: "team-a", priority: 100, created: 20, cpu: "2"},
				{name: "c", ns: "team-a", priority: 100, created: 30, cpu: "1"},
				{name: "d", ns: "team-a", priority: 0, created: 5, cpu: "2"},
				{name: "e", ns: "team-a", priority: 50, created: 40, cpu: "4"},
				{name: "f", ns: "team-a", priority: 0, created: 15, cpu: "500m"},
			},
			watch:     teamA,
			wantFirst: []string{"team-a/b", "team-a/c"},
		},
		"a shared parent decides across namespaces": {
			budgets: []quota.Budget{
				{Key: teamA, Hard: parseList("cpu=100"), Parent: "org"},
				{Key: quota.BudgetKey{Namespace: "team-b", Name: "team-b"}, Hard: parseList("cpu=100"), Parent: "org"},
				{Key: quota.BudgetKey{Name: "org"}, Hard: parseList("cpu=3")},
			},
			pods: []orderPod{
				{name: "a1", ns: "team-a", priority: 0, created: 10, cpu: "1"},
				{name: "b1", ns: "team-b", priority: 0, created: 5, cpu: "1"},
				{name: "a2", ns: "team-a", priority: 200, created: 50, cpu: "1"},
				{name: "b2", ns: "team-b", priority: 100, created: 1, cpu: "1"},
				{name: "a3", ns: "team-a", priority: 0, created: 30, cpu: "1"},
				{name: "b3", ns: "team-b", priority: 0, created: 20, cpu: "1"},
				{name: "b4", ns: "team-b", priority: 200, created: 60, cpu: "1"},
				{name: "a4", ns: "team-a", priority: -5, created: 0, cpu: "1"},
			},
			watch:     quota.BudgetKey{Name: "org"},
			wantFirst: []string{"team-a/a2", "team-b/b4", "team-b/b2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := quota.NewAdmissionQueue(quota.WithClock(clocktesting.NewFakeClock(now)))
			for _, ns := range []string{"team-a", "team-b"} {
				q.SetNamespace(ns, labels.Set{v1alpha1.EnabledLabel: "true"})
			}
			for _, b := range tc.budgets {
				q.UpsertBudget(b)
			}
			for _, p := range tc.pods {
				q.UpsertPod(quota.NewPod(p.pod(), v1alpha1.SchedulingGate, now))
			}
			admitted := admitAll(q)
			if diff := cmp.Diff(tc.wantFirst, admitted); diff != "" {
				t.Fatalf("first Admit (-want +got):\n%s", diff)
			}
			want := snapshotOrder(q.Reader().Snapshot(), tc.watch)
			if len(want) != len(tc.pods)-len(admitted) {
				t.Fatalf("snapshot of %s lists %d pods, want the %d that wait", tc.watch.Describe(), len(want), len(tc.pods)-len(admitted))
			}
			// Free capacity one pod at a time, oldest admission first, and record what
			// each Admit takes.
			var got []string
			running := admitted
			for len(running) > 0 {
				done := running[0]
				running = running[1:]
				q.DeletePod(podUID(done))
				next := admitAll(q)
				got = append(got, next...)
				running = append(running, next...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("admission order differs from the snapshot's order (-snapshot +admitted):\n%s", diff)
			}
		})
	}
}

// podUID is the UID makePod gives ns/name.
func podUID(ref string) types.UID {
	ns, name, _ := strings.Cut(ref, "/")
	return types.UID(ns + "-" + name)
}

func TestSnapshotReasonsNameResourceAmountsAndBudget(t *testing.T) {
	q := quota.NewAdmissionQueue(quota.WithClock(clocktesting.NewFakeClock(now)))
	q.SetNamespace("team-a", labels.Set{v1alpha1.EnabledLabel: "true"})
	teamA := quota.BudgetKey{Namespace: "team-a", Name: "team-a"}
	q.UpsertBudget(quota.Budget{Key: teamA, Hard: parseList("cpu=4,memory=8Gi"), Parent: "org"})
	q.UpsertBudget(quota.Budget{Key: quota.BudgetKey{Name: "org"}, Hard: parseList("requests.cpu=3500m")})
	for _, p := range []orderPod{
		{name: "runs", ns: "team-a", priority: 100, created: 0, cpu: "1", memory: "6Gi"},
		{name: "needs-memory", ns: "team-a", priority: 50, created: 10, cpu: "1", memory: "4Gi"},
		{name: "needs-cpu-in-org", ns: "team-a", priority: 0, created: 20, cpu: "3", memory: "1Gi"},
		{name: "never", ns: "team-a", priority: 0, created: 30, cpu: "5", memory: "1Gi"},
	} {
		q.UpsertPod(quota.NewPod(p.pod(), v1alpha1.SchedulingGate, now))
	}
	if diff := cmp.Diff([]string{"team-a/runs"}, admitAll(q)); diff != "" {
		t.Fatalf("first Admit (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	for _, b := range q.Reader().Snapshot().Budgets {
		if b.Budget != teamA {
			continue
		}
		for _, p := range b.Pods {
			got[p.Pod.Name] = fmt.Sprintf("%s %s: %s", p.Queue, p.Reason.Code, p.Reason.Message)
		}
	}
	want := map[string]string{
		"needs-memory":     "inadmissible InsufficientQuota: requests.memory: 4Gi requested, 2Gi free in Budget team-a/team-a; position 1 of 3",
		"needs-cpu-in-org": "inadmissible InsufficientQuota: requests.cpu: 3 requested, 2500m free in ClusterBudget org; position 2 of 3",
		"never":            "parked RequestsExceedHard: requests.cpu: 5 requested, more than the 4 hard of Budget team-a/team-a: it can never fit",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot reasons in Budget team-a/team-a (-want +got):\n%s", diff)
	}
}
