package quota

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/ledger"
)

// The model and the invariants keep their own accounts in resource lists, with
// Quantity arithmetic, as the core kept its accounts before amounts: an oracle that
// shares no code with amounts.go.

// subtractFrom subtracts src from dst, entry by entry; entries that reach zero are
// dropped.
func subtractFrom(dst, src corev1.ResourceList) {
	for name, q := range src {
		cur := dst[name].DeepCopy()
		cur.Sub(q)
		if cur.IsZero() {
			delete(dst, name)
			continue
		}
		dst[name] = cur
	}
}

// restrictTo returns the entries of list named in names; absent ones are zero.
func restrictTo(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := make(corev1.ResourceList, len(names))
	for _, name := range names {
		q := list[name].DeepCopy()
		if q.Format == "" {
			q = *resource.NewQuantity(0, resource.DecimalSI)
		}
		out[name] = q
	}
	return out
}

// chargeLedger charges p to l with usage, as the charges part does.
func chargeLedger(l *ledger.Ledger[*podState], p *podState, usage amount.List, claims []claimAmount) {
	l.Charge(p.pod.UID, p, usage, p.pod.Usage, claims)
}

// Fractional memory sums as ResourceQuota sums it: ten pods of a tenth of a byte fit
// in a hard of one byte, and the eleventh does not.
func TestLedgerFractionalMemory(t *testing.T) {
	l := ledger.New[*podState]()
	l.SetHard(parseList("requests.memory=1"))
	for i := range 10 {
		if r, over := l.Excess(parseAmounts("requests.memory=100m")); over {
			t.Fatalf("pod %d of memory 100m does not fit in hard 1: %s", i, r)
		}
		chargeLedger(&l, &podState{pod: makePod("p" + string(rune('a'+i))).Pod()}, parseAmounts("requests.memory=100m"), nil)
	}
	if _, over := l.Excess(parseAmounts("requests.memory=100m")); !over {
		t.Error("an eleventh pod of memory 100m fits in hard 1")
	}
	_, used, _ := l.Totals()
	if got := used["requests.memory"]; got.String() != "1" {
		t.Errorf("used requests.memory = %s, want 1", got.String())
	}
}

// Sums are exact at any size: a hard of 7Ei and usages of several Pi add up to the
// byte, and one value past the bound makes the pod uncountable rather than saturating
// what the budget uses.
func TestLedgerHugeQuantities(t *testing.T) {
	l := ledger.New[*podState]()
	l.SetHard(parseList("requests.memory=7Ei,requests.cpu=4"))
	for i := range 3 {
		if _, over := l.Excess(parseAmounts("requests.memory=2Ei,requests.cpu=1")); over {
			t.Fatalf("pod %d of 2Ei does not fit in a hard of 7Ei with %d charged", i, i)
		}
		chargeLedger(&l, &podState{pod: makePod(fmt.Sprintf("p%d", i)).Pod()}, parseAmounts("requests.memory=2Ei,requests.cpu=1"), nil)
	}
	if r, over := l.Excess(parseAmounts("requests.memory=1152921504606846977")); !over || r != "requests.memory" {
		t.Errorf("excess(1Ei and a byte) with 6Ei of 7Ei used = %q, %v; want requests.memory", r, over)
	}
	if _, over := l.Excess(parseAmounts("requests.memory=1Ei")); over {
		t.Error("1Ei does not fit with 6Ei of 7Ei used")
	}
	if r, over := l.Excess(parseAmounts("requests.cpu=2")); !over || r != "requests.cpu" {
		t.Errorf("excess(cpu=2) with 3 of 4 used = %q, %v; want requests.cpu", r, over)
	}
	hard, used, _ := l.Totals()
	if got := hard["requests.memory"]; got.String() != "7Ei" {
		t.Errorf("hard written back = %s, want 7Ei as written", got.String())
	}
	if got := used["requests.memory"]; got.Cmp(resource.MustParse("6Ei")) != 0 {
		t.Errorf("used = %s, want 6Ei", got.String())
	}
	if r, bad := amount.Uncountable(parseList("limits.memory=1e30,requests.cpu=1")); !bad || r != "limits.memory" {
		t.Errorf("Uncountable(limits.memory=1e30) = %q, %v; want limits.memory", r, bad)
	}
}

// Used and pending print in the format of the pod quantity that made them non-zero, as
// the Quantity sums did, whatever format hard is written in; borrowed as used, lent as
// hard.
func TestLedgerTotalsKeepThePodsFormat(t *testing.T) {
	l := ledger.New[*podState]()
	l.SetHard(parseList("requests.memory=8G,requests.cpu=4"))
	a, b := &podState{pod: makePod("a").Pod()}, &podState{pod: makePod("b").Pod()}
	a.pod.Usage = parseList("requests.memory=512Mi,requests.cpu=500m")
	b.pod.Usage = parseList("requests.memory=1G,requests.cpu=1")
	chargeLedger(&l, a, a.usage(), nil)
	chargeLedger(&l, b, b.usage(), nil)
	l.Wait(b.usage(), b.pod.Usage)
	_, used, pending := l.Totals()
	for name, tc := range map[string]struct {
		got  resource.Quantity
		want string
	}{
		"used memory":    {used["requests.memory"], "1536870912"}, // 512Mi first: BinarySI, which 1G breaks
		"used cpu":       {used["requests.cpu"], "1500m"},
		"pending memory": {pending["requests.memory"], "1G"},
	} {
		if got := tc.got.String(); got != tc.want {
			t.Errorf("%s = %s, want %s", name, got, tc.want)
		}
	}
	l.Release(b.pod.UID, b.usage(), nil)
	if _, used, _ := l.Totals(); used.Name("requests.memory", "").String() != "512Mi" {
		t.Errorf("used memory after b ends = %s, want 512Mi", used.Name("requests.memory", "").String())
	}
	// A hard written in another format changes none of it.
	l.SetHard(parseList("requests.memory=8Gi,requests.cpu=4"))
	if _, used, pending := l.Totals(); used.Name("requests.memory", "").String() != "512Mi" || pending.Name("requests.memory", "").String() != "1G" {
		t.Errorf("after hard changed format: used memory %s, pending %s; want 512Mi, 1G",
			used.Name("requests.memory", "").String(), pending.Name("requests.memory", "").String())
	}
}

// What a pod requests prints as the pod writes it, in its reason and in the status's
// neverFit, whatever format hard is written in; what is free prints as hard.
func TestRequestedPrintsInThePodsFormat(t *testing.T) {
	q, _ := newTestQueue()
	optIn(q, "team-a")
	key := BudgetKey{Namespace: "team-a", Name: "mem"}
	q.UpsertBudget(makeBudget("team-a", "mem").Hard("memory=1G").Obj())
	q.UpsertPod(makePod("big").Req("memory=2Gi").Pod())
	q.UpsertPod(makePod("fits").Created(1).Req("memory=768Mi").Pod())
	q.UpsertPod(makePod("next").Created(2).Req("memory=512Mi").Pod())
	if diff := admitNames(q); len(diff) != 1 || diff[0] != "fits" {
		t.Fatalf("admitted %v, want [fits]", diff)
	}
	st := mustStatus(t, q, key)
	if len(st.NeverFit) != 1 || st.NeverFit[0].Requested.String() != "2Gi" || st.NeverFit[0].Hard.String() != "1G" {
		t.Errorf("neverFit = %+v, want big requesting 2Gi of hard 1G", st.NeverFit)
	}
	for uid, want := range map[string]string{
		"big":  "requests.memory: 2Gi requested, more than the 1G hard of Budget team-a/mem: it can never fit",
		"next": "requests.memory: 512Mi requested, 194693632 free in Budget team-a/mem",
	} {
		r, _ := q.Reader().WaitReason(types.UID(uid))
		if !strings.HasPrefix(r.Message, want) {
			t.Errorf("%s waits: %q, want it to start %q", uid, r.Message, want)
		}
	}
}
