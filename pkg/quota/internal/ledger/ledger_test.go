package ledger

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quotagate/quotagate/internal/testbed/podtest"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount"
	"github.com/quotagate/quotagate/pkg/quota/internal/amount/amounttest"
)

// parseList parses "requests.cpu=2,requests.memory=1Gi".
var parseList = podtest.ParseList

// parseAmounts, listOf and listDiff: amounts from the short form, amounts as a list,
// and lists compared by value (package amounttest, podtest.ListDiff).
var (
	parseAmounts = amounttest.Parse
	listOf       = amounttest.List
	listDiff     = podtest.ListDiff
)

// pod is what these tests charge: a pod's name, which is also its UID.
type pod string

// chargeAs charges p under the UID name with usage, no claims.
func (l *Ledger[P]) chargeAs(name string, p P, usage amount.List) {
	l.Charge(types.UID(name), p, usage, nil, nil)
}

// The ledger alone: a budget of requests.cpu=4 and requests.memory=4Gi, with pods
// charged and released, and what fits asked along the way.
func TestLedger(t *testing.T) {
	type step struct {
		do          string // "charge", "release", "wait", "unwait" or "hard"
		pod         string
		usage       string
		wantUsed    string
		wantPending string // pending after the step
		// excess asks whether excessOf fits beside what is used.
		excessOf   string
		wantExcess corev1.ResourceName
	}
	l := New[pod]()
	if !l.SetHard(parseList("requests.memory=4Gi,requests.cpu=4")) {
		t.Fatal("setHard on an empty ledger reported no change")
	}
	if got, want := l.hardNames, []corev1.ResourceName{"requests.cpu", "requests.memory"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("hardNames = %v, want %v (sorted)", got, want)
	}
	for i, s := range []step{
		{do: "charge", pod: "a", usage: "requests.cpu=3", wantUsed: "requests.cpu=3", excessOf: "requests.cpu=1", wantExcess: ""},
		{do: "wait", usage: "requests.cpu=2", wantUsed: "requests.cpu=3", wantPending: "requests.cpu=2", excessOf: "requests.cpu=1001m", wantExcess: "requests.cpu"},
		{do: "charge", pod: "b", usage: "requests.cpu=1,requests.memory=5Gi", wantUsed: "requests.cpu=4,requests.memory=5Gi", wantPending: "requests.cpu=2",
			excessOf: "requests.memory=1", wantExcess: "requests.memory"},
		// A resource hard does not limit is never in excess.
		{do: "release", pod: "b", usage: "requests.cpu=1,requests.memory=5Gi", wantUsed: "requests.cpu=3", wantPending: "requests.cpu=2", excessOf: "requests.nvidia.com/gpu=8", wantExcess: ""},
		{do: "unwait", usage: "requests.cpu=2", wantUsed: "requests.cpu=3", excessOf: "requests.cpu=1,requests.memory=4Gi", wantExcess: ""},
		{do: "hard", usage: "requests.cpu=2", wantUsed: "requests.cpu=3", excessOf: "requests.cpu=1m", wantExcess: "requests.cpu"},
		{do: "release", pod: "a", usage: "requests.cpu=3", excessOf: "requests.cpu=2", wantExcess: ""},
	} {
		u := parseList(s.usage)
		switch s.do {
		case "charge":
			l.chargeAs(s.pod, pod(s.pod), amount.OfList(u))
		case "release":
			l.Release(types.UID(s.pod), amount.OfList(u), nil)
		case "wait":
			l.Wait(amount.OfList(u), u)
		case "unwait":
			l.Unwait(amount.OfList(u))
		case "hard":
			if !l.SetHard(u) {
				t.Fatalf("step %d: setHard(%v) reported no change", i, u)
			}
		}
		if diff := listDiff(parseList(s.wantUsed), listOf(l.used)); diff != "" {
			t.Errorf("step %d (%s %s): used (-want +got):\n%s", i, s.do, s.pod, diff)
		}
		if diff := listDiff(parseList(s.wantPending), listOf(l.pending)); diff != "" {
			t.Errorf("step %d (%s): pending (-want +got):\n%s", i, s.do, diff)
		}
		if got, over := l.Excess(parseAmounts(s.excessOf)); got != s.wantExcess || over != (s.wantExcess != "") {
			t.Errorf("step %d: excess(%s) = %q, %v; want %q", i, s.excessOf, got, over, s.wantExcess)
		}
	}
	if l.Admitted() != 0 {
		t.Errorf("admitted = %d after every pod was released, want 0", l.Admitted())
	}
}

func TestLedgerNeverFitsFreeAndTotals(t *testing.T) {
	l := New[pod]()
	l.SetHard(parseList("requests.cpu=2,pods=3"))
	if l.SetHard(parseList("requests.cpu=2000m,pods=3")) {
		t.Error("setHard with equal amount.List written differently reported a change")
	}
	l.chargeAs("a", "a", parseAmounts("requests.cpu=1500m,pods=1,requests.memory=1Gi"))
	l.Wait(parseAmounts("requests.cpu=1,pods=1"), nil)

	if r, never := l.NeverFits(parseAmounts("requests.cpu=2")); never {
		t.Errorf("neverFits(cpu=2) in a budget of 2 = %q, want it to fit an empty budget", r)
	}
	if r, never := l.NeverFits(parseAmounts("requests.cpu=2001m")); !never || r != "requests.cpu" {
		t.Errorf("neverFits(cpu=2001m) = %q, %v; want requests.cpu", r, never)
	}
	if f := l.Of("requests.cpu").Free().String(); f != "500m" {
		t.Errorf("free cpu = %s, want 500m", f)
	}
	l.SetHard(parseList("requests.cpu=1,pods=3"))
	if f := l.Of("requests.cpu").Free().String(); f != "-500m" {
		t.Errorf("free cpu after hard was lowered below use = %s, want -500m", f)
	}
	hard, used, pending := l.Totals()
	for name, tc := range map[string]struct{ want, got corev1.ResourceList }{
		"hard":    {parseList("requests.cpu=1,pods=3"), hard},
		"used":    {parseList("requests.cpu=1500m,pods=1"), used}, // memory is not limited
		"pending": {parseList("requests.cpu=1,pods=1"), pending},
	} {
		if diff := listDiff(tc.want, tc.got); diff != "" {
			t.Errorf("totals %s (-want +got):\n%s", name, diff)
		}
	}
	// totals are copies: a status writer may keep them.
	q := used["requests.cpu"]
	q.Add(parseList("requests.cpu=1")["requests.cpu"])
	used["requests.cpu"] = q
	if f := l.Of("requests.cpu").Free().String(); f != "-500m" {
		t.Errorf("changing totals changed the ledger: free cpu = %s", f)
	}
	if hl, _, _ := l.LimitsOf("requests.memory"); !hl.IsZero() {
		t.Errorf("limitsOf an unlimited resource: hard %s, want 0", hl.String())
	}
}
