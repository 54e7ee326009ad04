package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
)

// TestAdmittedByKeys: the budgets an admitted-by annotation names, as the manager
// writes them; entries it never writes are dropped.
func TestAdmittedByKeys(t *testing.T) {
	tests := map[string]struct {
		value string
		want  []BudgetKey
	}{
		"Budget and ClusterBudget":             {"team-a/web,org", []BudgetKey{{Namespace: "team-a", Name: "web"}, {Name: "org"}}},
		"admitted with no budget":              {"", nil},
		"another namespace's Budget is forged": {"team-b/web,org", []BudgetKey{{Name: "org"}}},
		"malformed entries":                    {",/x,team-a/,team-a/a/b,org,org", []BudgetKey{{Name: "org"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := makePod("p").Ungated().AdmittedBy(tc.value).Pod()
			if diff := cmp.Diff(tc.want, p.AdmittedByKeys()); diff != "" {
				t.Errorf("AdmittedByKeys(%q) (-want +got):\n%s", tc.value, diff)
			}
		})
	}
}

// TestPinsSurviveRestart: a running pod admitted by Budget web and then relabelled out
// of its selector stays charged to web in the manager's memory; a new manager (a
// restart, a failover) reads the same pins back from the admitted-by annotation, so
// web admits no more than before the restart.
func TestPinsSurviveRestart(t *testing.T) {
	web := makeBudget("team-a", "web").Hard("cpu=2").Selector("app", "web").Obj()
	webKey := web.Key

	before, _ := newTestQueue()
	before.UpsertBudget(web)
	before.UpsertPod(makePod("first").Label("app", "web").Req("cpu=2").RV(1).Pod())
	adm := before.Admit()
	if len(adm) != 1 {
		t.Fatalf("Admit = %+v, want first", adm)
	}
	before.Done(adm[0].Pod.UID, Ungated, "")
	// What the ungate patch wrote, then the tenant's relabel.
	admittedBy := adm[0].Budgets[0].String()
	running := makePod("first").Label("app", "batch").Req("cpu=2").Ungated().AdmittedBy(admittedBy).RV(3).Pod()
	before.UpsertPod(running)
	second := makePod("second").Created(1).Label("app", "web").Req("cpu=2").RV(4).Pod()
	before.UpsertPod(second)
	if got := admitNames(before); len(got) != 0 {
		t.Fatalf("before the restart web admitted %v past hard", got)
	}

	// The restart: pods may arrive before the budget, and in any order.
	after, _ := newTestQueue()
	after.UpsertPod(second)
	after.UpsertPod(running)
	after.UpsertBudget(web)
	if got := admitNames(after); len(got) != 0 {
		t.Errorf("after the restart web admitted %v past hard", got)
	}
	if diff := listDiff(parseList("requests.cpu=2"), mustStatus(t, after, webKey).Used); diff != "" {
		t.Errorf("web used after the restart (-want +got):\n%s", diff)
	}
	after.DeletePod("first")
	if diff := cmp.Diff([]string{"second"}, admitNames(after)); diff != "" {
		t.Errorf("once the relabelled pod ends (-want +got):\n%s", diff)
	}
}

// TestReadBackPinsFollowInMemoryRules: pins read back behave as the manager's own: a
// pinned budget that does not exist is charged nothing (and is charged once it
// exists), a pinned ClusterBudget that no longer selects the namespace is still
// charged, and a Budget of another namespace is never read back.
func TestReadBackPinsFollowInMemoryRules(t *testing.T) {
	q, _ := newTestQueue()
	gold := labels.SelectorFromSet(labels.Set{"tier": "gold"})
	q.UpsertBudget(makeBudget("", "org").Hard("cpu=10").Namespaces(gold).Obj())
	q.UpsertPod(makePod("p").Label("app", "batch").Req("cpu=1").Ungated().AdmittedBy("team-a/web,org,team-b/forged").Pod())
	q.UpsertPod(makePod("old").Req("cpu=1").Ungated().Pod())

	used := func(key BudgetKey) string {
		st := mustStatus(t, q, key)
		u := st.Used["requests.cpu"]
		return u.String()
	}
	// team-a is not gold: org covers neither pod, but p is pinned to it.
	if got := used(BudgetKey{Name: "org"}); got != "1" {
		t.Errorf("org used %s, want 1 (p, pinned)", got)
	}
	q.UpsertBudget(makeBudget("team-a", "web").Hard("cpu=2").Selector("app", "web").Obj())
	if got := used(BudgetKey{Namespace: "team-a", Name: "web"}); got != "1" {
		t.Errorf("web, created after the pod, used %s, want 1 (p, pinned)", got)
	}
	q.UpsertBudget(makeBudget("team-b", "forged").Hard("cpu=2").Obj())
	if got := used(BudgetKey{Namespace: "team-b", Name: "forged"}); got != "0" {
		t.Errorf("team-b/forged used %s, want 0: a Budget of another namespace is never read back", got)
	}
	q.UpsertBudget(makeBudget("team-a", "all").Hard("cpu=4").Obj())
	if got := used(BudgetKey{Namespace: "team-a", Name: "all"}); got != "2" {
		t.Errorf("team-a/all used %s, want 2 (it covers both)", got)
	}
}
