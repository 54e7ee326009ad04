package quota

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// flavor adds an entry to the budget's spec.flavors: hard and borrowingLimit as
// "name=quantity" lists ("" for none).
func (b *budgetBuilder) flavor(name, hard, borrow string) *budgetBuilder {
	fq := FlavorQuota{Name: name, Hard: parseList(hard)}
	if borrow != "" {
		fq.BorrowingLimit = parseList(borrow)
	}
	b.b.Flavors = append(b.b.Flavors, fq)
	return b
}

var (
	h100 = Flavor{Name: "h100", NodeLabels: map[string]string{"gpu": "h100"},
		Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
	a100 = Flavor{Name: "a100", NodeLabels: map[string]string{"gpu": "a100"}}
	spot = Flavor{Name: "spot", NodeLabels: map[string]string{"pool": "spot"}}
	// gpuPool and gpuSpot nest: gpu-spot's labels contain gpu's, so its nodes are
	// among gpu's. Spot nodes may carry a taint (gpuSpot's toleration) or not.
	gpuPool = Flavor{Name: "gpu", NodeLabels: map[string]string{"pool": "gpu"}}
	gpuSpot = Flavor{Name: "gpu-spot", NodeLabels: map[string]string{"pool": "gpu", "spot": "true"}}
)

func flavorQueue(t *testing.T, fl ...Flavor) *AdmissionQueue {
	t.Helper()
	q, _ := newTestQueue()
	for _, f := range fl {
		q.UpsertFlavor(f)
	}
	return q
}

// admitFlavors runs Admit, reports every admission ungated, and returns "pod@flavor"
// ("pod" for none).
func admitFlavors(q *AdmissionQueue) []string {
	var out []string
	for _, a := range q.Admit() {
		s := a.Pod.Name
		if a.Flavor != nil {
			s += "@" + a.Flavor.Name
		}
		out = append(out, s)
		q.Done(a.Pod.UID, Ungated, "")
	}
	return out
}

func withSelector(p Pod, sel map[string]string) Pod {
	p.NodeSelector = sel
	return p
}

func flavorUsed(t *testing.T, q *AdmissionQueue, key BudgetKey) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range mustStatus(t, q, key).Flavors {
		for r, v := range f.Used {
			out[f.Name+"/"+string(r)] = v.String()
		}
	}
	return out
}

func TestFlavorsAreTriedInOrder(t *testing.T) {
	key := BudgetKey{Namespace: "team-a", Name: "gpus"}
	gpus := func() *budgetBuilder {
		return makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=2", "").flavor("a100", "nvidia.com/gpu=3", "")
	}
	tests := map[string]struct {
		budget  Budget
		flavors []Flavor
		pods    []Pod
		want    []string
		used    map[string]string
		waits   map[string]ReasonCode
	}{
		"the first flavor with room, then the next": {
			budget:  gpus().Obj(),
			flavors: []Flavor{h100, a100},
			pods: []Pod{
				makePod("p1").Created(1).Req("nvidia.com/gpu=1").Pod(),
				makePod("p2").Created(2).Req("nvidia.com/gpu=1").Pod(),
				makePod("p3").Created(3).Req("nvidia.com/gpu=2").Pod(),
				makePod("p4").Created(4).Req("nvidia.com/gpu=2").Pod(),
			},
			want:  []string{"p1@h100", "p2@h100", "p3@a100"},
			used:  map[string]string{"h100/requests.nvidia.com/gpu": "2", "a100/requests.nvidia.com/gpu": "2"},
			waits: map[string]ReasonCode{"p4": CodeInsufficient},
		},
		"the flavor-less hard caps the total over the flavors": {
			budget:  gpus().Hard("nvidia.com/gpu=3").Obj(),
			flavors: []Flavor{h100, a100},
			pods: []Pod{
				makePod("p1").Created(1).Req("nvidia.com/gpu=2").Pod(),
				makePod("p2").Created(2).Req("nvidia.com/gpu=1").Pod(),
				makePod("p3").Created(3).Req("nvidia.com/gpu=1").Pod(),
			},
			want:  []string{"p1@h100", "p2@a100"},
			used:  map[string]string{"h100/requests.nvidia.com/gpu": "2", "a100/requests.nvidia.com/gpu": "1"},
			waits: map[string]ReasonCode{"p3": CodeInsufficient},
		},
		"a pod that selects a flavor is charged to it only": {
			budget:  gpus().Obj(),
			flavors: []Flavor{h100, a100},
			pods: []Pod{
				withSelector(makePod("p1").Created(1).Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "a100", "zone": "z1"}),
				withSelector(makePod("p2").Created(2).Req("nvidia.com/gpu=3").Pod(), map[string]string{"gpu": "a100"}),
			},
			want:  []string{"p1@a100"},
			used:  map[string]string{"h100/requests.nvidia.com/gpu": "0", "a100/requests.nvidia.com/gpu": "1"},
			waits: map[string]ReasonCode{"p2": CodeInsufficient},
		},
		"a pod that asks for other labels than every flavor's waits with NoFlavor": {
			budget:  gpus().Obj(),
			flavors: []Flavor{h100, a100},
			pods:    []Pod{withSelector(makePod("p1").Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "t4"})},
			waits:   map[string]ReasonCode{"p1": CodeNoFlavor},
		},
		"a budget naming a Flavor that does not exist admits nothing (FlavorNotFound)": {
			budget:  gpus().Obj(),
			flavors: []Flavor{a100},
			pods:    []Pod{makePod("p1").Req("nvidia.com/gpu=1").Pod()},
			waits:   map[string]ReasonCode{"p1": CodeBudgetClosed},
		},
		"no Flavor object at all: the budget admits nothing": {
			budget: gpus().Obj(),
			pods:   []Pod{makePod("p1").Req("nvidia.com/gpu=1").Pod()},
			waits:  map[string]ReasonCode{"p1": CodeBudgetClosed},
		},
		"a pod that requests nothing the flavors hold quota for gets no flavor": {
			budget:  gpus().Hard("cpu=4").Obj(),
			flavors: []Flavor{h100, a100},
			pods:    []Pod{makePod("p1").Req("cpu=1").Pod()},
			want:    []string{"p1"},
		},
		"a flavor must hold quota for every flavored resource the pod requests": {
			budget: makeBudget("team-a", "gpus").flavor("spot", "cpu=8", "").
				flavor("h100", "cpu=8,nvidia.com/gpu=2", "").Obj(),
			flavors: []Flavor{h100, spot},
			pods: []Pod{
				makePod("cpu").Created(1).Req("cpu=1").Pod(),
				makePod("gpu").Created(2).Req("cpu=1,nvidia.com/gpu=1").Pod(),
			},
			want: []string{"cpu@spot", "gpu@h100"},
		},
		"a flavor that holds 0 of what a pod requests is no choice for it, even to wait for": {
			budget: func() Budget {
				b := makeBudget("team-a", "gpus").flavor("spot", "cpu=8,nvidia.com/gpu=0", "").
					flavor("h100", "cpu=8,nvidia.com/gpu=2", "").Obj()
				b.Fungibility.WaitForPreferred = true
				return b
			}(),
			flavors: []Flavor{h100, spot},
			pods: []Pod{
				makePod("gpu").Created(1).Req("cpu=1,nvidia.com/gpu=1").Pod(),
				makePod("cpu").Created(2).Req("cpu=1").Pod(),
			},
			want: []string{"gpu@h100", "cpu@spot"},
		},
		"WaitForPreferred: a full first flavor is waited for": {
			budget: func() Budget {
				b := gpus().Obj()
				b.Fungibility.WaitForPreferred = true
				return b
			}(),
			flavors: []Flavor{h100, a100},
			pods: []Pod{
				makePod("p1").Created(1).Req("nvidia.com/gpu=2").Pod(),
				makePod("p2").Created(2).Req("nvidia.com/gpu=1").Pod(),
			},
			want:  []string{"p1@h100"},
			waits: map[string]ReasonCode{"p2": CodeInsufficient},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := flavorQueue(t, tc.flavors...)
			q.UpsertBudget(tc.budget)
			for _, p := range tc.pods {
				q.UpsertPod(p)
			}
			if diff := cmp.Diff(tc.want, admitFlavors(q)); diff != "" {
				t.Errorf("admitted (-want +got):\n%s", diff)
			}
			if tc.used != nil {
				if diff := cmp.Diff(tc.used, flavorUsed(t, q, key)); diff != "" {
					t.Errorf("used per flavor (-want +got):\n%s", diff)
				}
			}
			for _, p := range tc.pods {
				want, waits := tc.waits[p.Name]
				got, ok := q.Reader().WaitReason(p.UID)
				if ok != waits || got.Code != want {
					t.Errorf("%s: wait %v %q, want waiting %v with %q", p.Name, ok, got, waits, want)
				}
			}
		})
	}
}

func TestFlavorInAdmissionAndReasons(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	q.UpsertPod(makePod("p1").Created(1).Req("nvidia.com/gpu=1").Pod())
	adm := q.Admit()
	if len(adm) != 1 || adm[0].Flavor == nil {
		t.Fatalf("admissions %+v, want p1 on a flavor", adm)
	}
	if diff := cmp.Diff(h100, *adm[0].Flavor); diff != "" {
		t.Errorf("the admission carries the Flavor's labels and tolerations (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(adm[0].Reason.Message, "on flavor h100") {
		t.Errorf("reason %q does not name the flavor", adm[0].Reason.Message)
	}
	q.Done(adm[0].Pod.UID, Ungated, "")

	q.UpsertPod(makePod("p2").Created(2).Req("nvidia.com/gpu=1").Pod())
	q.UpsertPod(makePod("p3").Created(3).Req("nvidia.com/gpu=1").Pod())
	admitFlavors(q)
	r, ok := q.Reader().WaitReason(makePod("p3").Pod().UID)
	if !ok || !strings.Contains(r.Message, "requests.nvidia.com/gpu on flavor h100: 1 requested, 0 free") {
		t.Errorf("p3 waits with %q, want the preferred flavor named", r.Message)
	}
	q.UpsertPod(withSelector(makePod("p4").Created(4).Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "t4"}))
	admitFlavors(q)
	r, _ = q.Reader().WaitReason(makePod("p4").Pod().UID)
	if want := "no flavor of Budget team-a/gpus can take it: its node selector asks for other node labels than h100, a100"; r.Message != want {
		t.Errorf("p4 waits with %q, want %q", r.Message, want)
	}
}

// TestWaitingOnSeveralFlavors: a pod that fits no flavor waits on the first, and room
// on any of the others lets it in.
func TestWaitingOnSeveralFlavors(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	for i, n := range []string{"p1", "p2", "p3"} {
		q.UpsertPod(makePod(n).Created(i).Req("nvidia.com/gpu=1").Pod())
	}
	if diff := cmp.Diff([]string{"p1@h100", "p2@a100"}, admitFlavors(q)); diff != "" {
		t.Fatalf("admitted (-want +got):\n%s", diff)
	}
	q.DeletePod(makePod("p2").Pod().UID) // frees a100, not the flavor p3 waits on
	if diff := cmp.Diff([]string{"p3@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("after a100 frees (-want +got):\n%s", diff)
	}
}

// TestRunningPodsAreChargedOnTheirFlavor: a pod seen running is charged on the flavor
// its node selector selects, also when the Flavor arrives after the pod (a restart
// whose informers deliver pods first), and no more once the Flavor is deleted.
func TestRunningPodsAreChargedOnTheirFlavor(t *testing.T) {
	key := BudgetKey{Namespace: "team-a", Name: "gpus"}
	q := flavorQueue(t, a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=2", "").flavor("a100", "nvidia.com/gpu=2", "").Obj())
	q.UpsertPod(withSelector(makePod("run-h").Ungated().Req("nvidia.com/gpu=2").Pod(), map[string]string{"gpu": "h100"}))
	q.UpsertPod(withSelector(makePod("run-a").Ungated().Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "a100"}))
	want := map[string]string{"h100/requests.nvidia.com/gpu": "0", "a100/requests.nvidia.com/gpu": "1"}
	if diff := cmp.Diff(want, flavorUsed(t, q, key)); diff != "" {
		t.Errorf("before Flavor h100 exists (-want +got):\n%s", diff)
	}
	q.UpsertFlavor(h100)
	want["h100/requests.nvidia.com/gpu"] = "2"
	if diff := cmp.Diff(want, flavorUsed(t, q, key)); diff != "" {
		t.Errorf("after Flavor h100 is created (-want +got):\n%s", diff)
	}
	q.UpsertPod(makePod("p").Req("nvidia.com/gpu=1").Pod())
	if diff := cmp.Diff([]string{"p@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("a gated pod goes where there is room (-want +got):\n%s", diff)
	}
	q.DeleteFlavor("a100")
	want = map[string]string{"h100/requests.nvidia.com/gpu": "2", "a100/requests.nvidia.com/gpu": "1"}
	if diff := cmp.Diff(want, flavorUsed(t, q, key)); diff != "" {
		// run-a runs on a deleted Flavor and is charged on none; p, admitted on a100
		// and not yet seen with its labels, keeps the charge its admission made.
		t.Errorf("after Flavor a100 is deleted (-want +got):\n%s", diff)
	}
}

func TestGroupIsAdmittedOnOneFlavor(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=4", "").Obj())
	for i := range 3 {
		q.UpsertPod(makePod("g"+string(rune('0'+i))).Created(i).Group("job", 3).Req("nvidia.com/gpu=1").Pod())
	}
	if diff := cmp.Diff([]string{"g0@a100", "g1@a100", "g2@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("a group that does not fit h100 together goes to a100 together (-want +got):\n%s", diff)
	}
}

func TestNodeSelectorOf(t *testing.T) {
	in := func(k, v string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}
	}
	pod := makePod("p").Obj()
	pod.Spec.NodeSelector = map[string]string{"zone": "z1"}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{in("gpu", "h100"), in("pool", "a")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{in("gpu", "h100"), in("pool", "b"),
				{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1", "r2"}}}},
		}}}}
	got := NewPod(pod, "quotagate.io/gate", t0).NodeSelector
	want := map[string]string{"zone": "z1", "gpu": "h100"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
	if pod.Spec.NodeSelector["gpu"] != "" {
		t.Errorf("NewPod changed the pod's own nodeSelector: %v", pod.Spec.NodeSelector)
	}
}

// TestNotSentGivesTheChargeBack: the controller finds that the pod, changed since the
// decision, contradicts its flavor, and sends nothing; the pod waits again (after a
// backoff) and is decided again on what it asks now.
func TestNotSentGivesTheChargeBack(t *testing.T) {
	key := BudgetKey{Namespace: "team-a", Name: "gpus"}
	q, clk := newTestQueue()
	q.UpsertFlavor(h100)
	q.UpsertFlavor(a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	p := makePod("p").RV(1).Req("nvidia.com/gpu=1").Pod()
	q.UpsertPod(p)
	adm := q.Admit()
	if len(adm) != 1 || adm[0].Flavor == nil || adm[0].Flavor.Name != "h100" {
		t.Fatalf("admissions %+v, want p on h100", adm)
	}
	moved := withSelector(makePod("p").RV(2).Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "a100"})
	q.UpsertPod(moved) // the tenant narrowed the selector while the patch was being built
	q.Done(p.UID, NotSent, "2")
	if got := flavorUsed(t, q, key)["h100/requests.nvidia.com/gpu"]; got != "0" {
		t.Errorf("h100 used %s after NotSent, want the charge given back", got)
	}
	if r, ok := q.Reader().WaitReason(p.UID); !ok || r.Code != CodeBackoff {
		t.Errorf("p: %v %+v, want waiting in backoff", ok, r)
	}
	clk.Step(time.Minute)
	if diff := cmp.Diff([]string{"p@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("after the backoff (-want +got):\n%s", diff)
	}
}

// TestInvalidFlavorLabels: the CRD checks only the lengths of a Flavor's labels; one
// whose labels a nodeSelector cannot hold takes no pod, and the pods say why.
func TestInvalidFlavorLabels(t *testing.T) {
	q := flavorQueue(t, Flavor{Name: "h100", NodeLabels: map[string]string{"my pool": "x"}}, a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").Obj())
	q.UpsertPod(makePod("p").Req("nvidia.com/gpu=1").Pod())
	admitFlavors(q)
	r, ok := q.Reader().WaitReason(makePod("p").Pod().UID)
	if !ok || r.Code != CodeNoFlavor || !strings.Contains(r.Message, `Flavor h100 cannot be used: node label key "my pool"`) {
		t.Errorf("p: %v %+v, want NoFlavor naming the bad label", ok, r)
	}
	q.UpsertFlavor(h100) // fixed: the pod is looked at again
	if diff := cmp.Diff([]string{"p@h100"}, admitFlavors(q)); diff != "" {
		t.Errorf("after the Flavor is fixed (-want +got):\n%s", diff)
	}
}

// TestNarrowedSelectorMovesAGatedPod: a gated pod waiting for h100 whose tenant narrows
// its node selector to a100 is decided again on a100.
func TestNarrowedSelectorMovesAGatedPod(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	q.UpsertBudget(makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj())
	q.UpsertPod(withSelector(makePod("run").Ungated().Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "h100"}))
	p := withSelector(makePod("p").RV(1).Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "h100"})
	q.UpsertPod(p)
	if got := admitFlavors(q); len(got) != 0 {
		t.Fatalf("admitted %v; p selects the full h100", got)
	}
	narrowed := withSelector(makePod("p").RV(2).Req("nvidia.com/gpu=1").Pod(), map[string]string{"gpu": "a100"})
	q.UpsertPod(narrowed)
	if diff := cmp.Diff([]string{"p@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("after the selector names a100 (-want +got):\n%s", diff)
	}
}

// TestFungibilityChangeWakesWaitingPods: a pod waiting for its preferred flavor takes
// the next one once the budget stops waiting for the preferred.
func TestFungibilityChangeWakesWaitingPods(t *testing.T) {
	q := flavorQueue(t, h100, a100)
	b := makeBudget("team-a", "gpus").flavor("h100", "nvidia.com/gpu=1", "").flavor("a100", "nvidia.com/gpu=1", "").Obj()
	b.Fungibility.WaitForPreferred = true
	q.UpsertBudget(b)
	q.UpsertPod(makePod("p1").Created(1).Req("nvidia.com/gpu=1").Pod())
	q.UpsertPod(makePod("p2").Created(2).Req("nvidia.com/gpu=1").Pod())
	if diff := cmp.Diff([]string{"p1@h100"}, admitFlavors(q)); diff != "" {
		t.Fatalf("waiting for h100 (-want +got):\n%s", diff)
	}
	b.Fungibility.WaitForPreferred = false
	q.UpsertBudget(b)
	if diff := cmp.Diff([]string{"p2@a100"}, admitFlavors(q)); diff != "" {
		t.Errorf("after whenFull: TryNextFlavor (-want +got):\n%s", diff)
	}
}
